// plan.hpp: dftrace._reader.plan() (plan.cpp).
#pragma once

#include <Python.h>

// plan(path) -> {"unit", "described", "parts": [(kind, lines, text_bytes, ts_min_us, ts_max_us)]}
// from the DT fields, without inflating (kind: "member", "plain" or "stream"; a stream's size
// is its compressed length, its lines and times unknown: 0).
PyObject *dftrace_py_plan(PyObject *self, PyObject *args);
