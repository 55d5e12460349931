// plan.cpp: dftrace._reader.plan(), a trace file's parts as its DT fields describe them.
#define PY_SSIZE_T_CLEAN
#include "plan.hpp"

#include "reader/time_unit.hpp"
#include "reader/trace_reader.hpp"

using dftrace::detail::time_unit;

PyObject *dftrace_py_plan(PyObject *, PyObject *a) {
  const char *path = nullptr;
  if (!PyArg_ParseTuple(a, "s", &path)) return nullptr;
  dftrace::detail::trace_file tf;
  std::string why;
  if (!tf.open(path, &why)) {
    PyErr_Format(PyExc_OSError, "%s: %s", path, why.c_str());
    return nullptr;
  }
  const time_unit unit = dftrace::detail::header_time_unit(tf);
  PyObject *parts = PyList_New(0);
  if (!parts) return nullptr;
  for (const auto &p : tf.parts()) {
    const char *kind = p.kind == dftrace::detail::planned_part::member  ? "member"
                       : p.kind == dftrace::detail::planned_part::plain ? "plain"
                                                                        : "stream";
    const bool m = p.kind == dftrace::detail::planned_part::member;
    PyObject *t =
        Py_BuildValue("(sKKKK)", kind, static_cast<unsigned long long>(m ? p.dt.lines : 0),
                      static_cast<unsigned long long>(m ? p.dt.uncompressed_len : p.length),
                      static_cast<unsigned long long>(m ? p.dt.ts_min : 0),
                      static_cast<unsigned long long>(m ? p.dt.ts_max : 0));
    if (!t || PyList_Append(parts, t) != 0) {
      Py_XDECREF(t);
      Py_DECREF(parts);
      return nullptr;
    }
    Py_DECREF(t);
  }
  return Py_BuildValue("{s:s,s:O,s:N}", "unit", unit == time_unit::ns ? "ns" : "us", "described",
                       tf.fully_described() ? Py_True : Py_False, "parts", parts);
}
