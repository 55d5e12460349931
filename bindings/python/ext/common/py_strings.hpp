// py_strings.hpp: what the C++ extensions (dftrace._reader, dftrace._analysis) share to read
// their Python arguments.
#pragma once

#include <Python.h>

#include <string>
#include <vector>

namespace dftrace::python {

// A sequence of str appended to `out` (None: nothing); false with a TypeError set when `seq` is
// not a sequence of str. `what` names the argument in the message ("paths").
inline bool strings_of(PyObject *seq, std::vector<std::string> *out, const char *what) {
  if (seq == Py_None) return true;
  const std::string why = std::string(what) + " must be a sequence of str";
  PyObject *fast = PySequence_Fast(seq, why.c_str());
  if (!fast) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  for (Py_ssize_t k = 0; k < n; ++k) {
    PyObject *item = PySequence_Fast_GET_ITEM(fast, k);
    Py_ssize_t len = 0;
    const char *s = PyUnicode_Check(item) ? PyUnicode_AsUTF8AndSize(item, &len) : nullptr;
    if (!s) {
      Py_DECREF(fast);
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, why.c_str());
      return false;
    }
    out->emplace_back(s, static_cast<size_t>(len));
  }
  Py_DECREF(fast);
  return true;
}

}  // namespace dftrace::python
