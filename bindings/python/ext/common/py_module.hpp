// py_module.hpp: what the C++ extensions (dftrace._reader, dftrace._analysis) share to define
// their module and to run their work without the GIL.
#pragma once

#include <Python.h>

#include <exception>
#include <string>

namespace dftrace::python {

// The definition of a module of `methods` without per-module state.
inline PyModuleDef module_def_of(const char *name, const char *doc, PyMethodDef *methods) {
  return {PyModuleDef_HEAD_INIT, name, doc, -1, methods, nullptr, nullptr, nullptr, nullptr};
}

// Runs work() with the GIL released. An exception it throws (the engines throw only when memory
// runs out) becomes a MemoryError of `prefix` and its message: false, with the error set.
template <class Work>
bool without_gil(Work &&work, const char *prefix = "") {
  std::string failure;
  bool failed = false;
  Py_BEGIN_ALLOW_THREADS;
  try {
    work();
  } catch (const std::exception &e) {
    failure = e.what();
    failed = true;
  }
  Py_END_ALLOW_THREADS;
  if (!failed) return true;
  PyErr_Format(PyExc_MemoryError, "%s%s", prefix, failure.c_str());
  return false;
}

}  // namespace dftrace::python
