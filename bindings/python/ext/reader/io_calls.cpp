// io_calls.cpp: dftrace._reader.io_calls(), the table of interposed calls
// (dftrace/io_calls.def) for the Python tools: which calls read or write, and where an event
// says its bytes.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "io_calls.hpp"

namespace {

struct row {
  const char *cat, *symbol, *event, *cls, *bytes;
};

constexpr row k_rows[] = {
#define DFTRACE_IO_CALL(cat, symbol, event, shape, cls, bytes, types) \
  {#cat, #symbol, event, #cls, #bytes},
#include "dftrace/io_calls.def"
};

}  // namespace

PyObject *dftrace_py_io_calls(PyObject *, PyObject *) {
  PyObject *out = PyTuple_New(sizeof k_rows / sizeof k_rows[0]);
  if (!out) return nullptr;
  Py_ssize_t i = 0;
  for (const row &r : k_rows) {
    PyObject *t = Py_BuildValue("(sssss)", r.cat, r.symbol, r.event, r.cls, r.bytes);
    if (!t) {
      Py_DECREF(out);
      return nullptr;
    }
    PyTuple_SET_ITEM(out, i++, t);
  }
  return out;
}
