// io_calls.hpp: dftrace._reader.io_calls() (io_calls.cpp).
#pragma once

#include <Python.h>

// io_calls() -> a tuple of (category, symbol, event, class, bytes), one per interposed call, as
// dftrace/io_calls.def lists them ("" event: the call records none).
PyObject *dftrace_py_io_calls(PyObject *self, PyObject *args);
