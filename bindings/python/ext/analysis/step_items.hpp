// step_items.hpp: the document's `steps.items` as Python objects, built from the merged result
// (a list of dicts, keys and values as `dftrace analyze --json` writes them), so that the
// client of dftrace.analyze neither writes nor parses a million items as JSON text.
#pragma once

#include <Python.h>

#include "analysis/analyze.hpp"

namespace dftrace::python {

inline PyObject *new_ref(PyObject *o) {
  Py_INCREF(o);
  return o;
}

// A dict of keys (each None, in order) whose copies share its table of keys, as the __dict__ of
// a class's instances do (CPython's split dicts): each copy holds only its values, a third
// smaller and quicker to make than a whole dict. A Python that keeps no such dict makes a
// plain copy: the same items either way. nullptr with an error set.
inline PyObject *item_template(PyObject *const *keys, size_t nkeys) {
  PyObject *ns = PyDict_New();
  PyObject *cls = ns ? PyObject_CallFunction(reinterpret_cast<PyObject *>(&PyType_Type), "s()O",
                                             "step_item", ns)
                     : nullptr;
  Py_XDECREF(ns);
  PyObject *inst = cls ? PyObject_CallNoArgs(cls) : nullptr;
  Py_XDECREF(cls);
  bool ok = inst != nullptr;
  for (size_t k = 0; ok && k < nkeys; ++k) ok = PyObject_SetAttr(inst, keys[k], Py_None) == 0;
  PyObject *d = ok ? PyObject_GenericGetDict(inst, nullptr) : nullptr;
  Py_XDECREF(inst);
  // The instance's own dict, in the keys' order: copied (split or not) before anything else
  // can change it.
  PyObject *copy = d && PyDict_CheckExact(d) ? PyDict_Copy(d) : nullptr;
  Py_XDECREF(d);
  return copy;
}

// A new list, or nullptr with an error set.
inline PyObject *step_items(const dftrace::analysis::analysis_result &r) {
  using dftrace::analysis::k_nbound;
  static_assert(k_nbound == 4, "the item names the four bound classes");
  static const char *const names[] = {"rank",    "group", "index",   "step",
                                      "epoch",   "ts_ns", "dur_ns",  "compute_ns",
                                      "comm_ns", "io_ns", "data_ns", "other_ns"};
  constexpr size_t nkeys = sizeof names / sizeof names[0];
  PyObject *keys[nkeys] = {};
  bool ok = true;
  for (size_t k = 0; ok && k < nkeys; ++k)
    ok = (keys[k] = PyUnicode_InternFromString(names[k])) != nullptr;
  PyObject *tmpl = ok ? item_template(keys, nkeys) : nullptr;  // each item: a copy, then filled
  PyObject *ranks = PyList_New(static_cast<Py_ssize_t>(r.groups.size()));
  PyObject *list = tmpl && ranks ? PyList_New(static_cast<Py_ssize_t>(r.steps.size())) : nullptr;
  ok = list != nullptr;
  for (size_t g = 0; ok && g < r.groups.size(); ++g) {
    PyObject *v = r.groups[g].has_rank ? PyLong_FromLongLong(r.groups[g].rank) : new_ref(Py_None);
    ok = v != nullptr;
    if (ok) PyList_SET_ITEM(ranks, static_cast<Py_ssize_t>(g), v);
  }
  // value: a new reference (nullptr: failed), stored under key k
  auto put = [&](PyObject *d, size_t k, PyObject *value) {
    if (!value) return false;
    const int rc = PyDict_SetItem(d, keys[k], value);
    Py_DECREF(value);
    return rc == 0;
  };
  ok = r.steps.for_each([&](const auto &s, size_t i) {
    if (!ok) return;
    PyObject *d = PyDict_Copy(tmpl);
    if (!d) {
      ok = false;
      return;
    }
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), d);
    ok = put(d, 0, new_ref(PyList_GET_ITEM(ranks, static_cast<Py_ssize_t>(s.group)))) &&
         put(d, 1, PyLong_FromUnsignedLong(s.group)) &&
         put(d, 2, PyLong_FromUnsignedLong(s.index)) &&
         (!s.has_step || put(d, 3, PyLong_FromLongLong(s.step))) &&
         (!s.has_epoch || put(d, 4, PyLong_FromLongLong(s.epoch))) &&
         put(d, 5, PyLong_FromUnsignedLongLong(s.start)) &&
         put(d, 6, PyLong_FromUnsignedLongLong(s.dur));
    for (size_t k = 0; ok && k <= k_nbound; ++k)
      ok = put(d, 7 + k, PyLong_FromUnsignedLongLong(s.parts[k]));
  }) && ok;
  for (PyObject *k : keys) Py_XDECREF(k);
  Py_XDECREF(tmpl);
  Py_XDECREF(ranks);
  if (!ok) {
    Py_XDECREF(list);
    if (!PyErr_Occurred()) PyErr_NoMemory();
    return nullptr;
  }
  return list;
}

}  // namespace dftrace::python
