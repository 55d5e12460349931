// step_items.hpp: the document's `steps.items` kept as the merged run's step store (in memory up
// to its budget, else in its temporary file) behind a capsule, and read from it when Python
// asks: a range of items as dicts (keys and values as `dftrace analyze --json` writes them), or
// every step as columns of fixed-width integers for a DataFrame. The client of dftrace.analyze
// so never holds a million step items as objects unless its caller asks for them.
#pragma once

#include <Python.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "analysis/analyze.hpp"

namespace dftrace::python {

// What a capsule of merged steps holds: the rows, and each group's rank (has_rank, rank).
struct held_steps {
  dftrace::analysis::step_store steps;
  std::vector<std::pair<bool, int64_t>> ranks;
};

inline constexpr const char *k_steps_capsule = "dftrace._analysis.steps";

inline void free_steps(PyObject *capsule) {
  delete static_cast<held_steps *>(PyCapsule_GetPointer(capsule, k_steps_capsule));
}

// A capsule that owns r's steps (moved out of r) and its groups' ranks; nullptr with an error.
inline PyObject *steps_capsule(dftrace::analysis::analysis_result &r) {
  auto *h = new (std::nothrow) held_steps;
  if (!h) return PyErr_NoMemory();
  try {
    h->ranks.reserve(r.groups.size());
    for (const auto &g : r.groups) h->ranks.emplace_back(g.has_rank, g.rank);
  } catch (const std::bad_alloc &) {
    delete h;
    return PyErr_NoMemory();
  }
  h->steps = std::move(r.steps);
  PyObject *cap = PyCapsule_New(h, k_steps_capsule, free_steps);
  if (!cap) delete h;
  return cap;
}

// The steps a capsule holds; nullptr with an error set.
inline const held_steps *steps_of(PyObject *capsule) {
  return static_cast<const held_steps *>(PyCapsule_GetPointer(capsule, k_steps_capsule));
}

inline PyObject *new_ref(PyObject *o) {
  Py_INCREF(o);
  return o;
}

inline bool steps_unread() {
  if (!PyErr_Occurred())
    PyErr_SetString(PyExc_OSError,
                    "dftrace.analyze: the steps' temporary file could not be read back");
  return false;
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

// The items [first, first + n) (n already clipped to the store) as a new list of dicts, or
// nullptr with an error set.
inline PyObject *step_items(const held_steps &h, size_t first, size_t n) {
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
  PyObject *ranks = PyList_New(static_cast<Py_ssize_t>(h.ranks.size()));
  PyObject *list = tmpl && ranks ? PyList_New(static_cast<Py_ssize_t>(n)) : nullptr;
  ok = list != nullptr;
  for (size_t g = 0; ok && g < h.ranks.size(); ++g) {
    PyObject *v = h.ranks[g].first ? PyLong_FromLongLong(h.ranks[g].second) : new_ref(Py_None);
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
  if (ok && !h.steps.for_each(first, n, [&](const auto &s, size_t i) {
        if (!ok) return;
        PyObject *d = PyDict_Copy(tmpl);
        if (!d) {
          ok = false;
          return;
        }
        PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i - first), d);
        ok = s.group < h.ranks.size() &&
             put(d, 0, new_ref(PyList_GET_ITEM(ranks, static_cast<Py_ssize_t>(s.group)))) &&
             put(d, 1, PyLong_FromUnsignedLong(s.group)) &&
             put(d, 2, PyLong_FromUnsignedLong(s.index)) &&
             (!s.has_step || put(d, 3, PyLong_FromLongLong(s.step))) &&
             (!s.has_epoch || put(d, 4, PyLong_FromLongLong(s.epoch))) &&
             put(d, 5, PyLong_FromUnsignedLongLong(s.start)) &&
             put(d, 6, PyLong_FromUnsignedLongLong(s.dur));
        for (size_t k = 0; ok && k <= k_nbound; ++k)
          ok = put(d, 7 + k, PyLong_FromUnsignedLongLong(s.parts[k]));
      }))
    ok = steps_unread();
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

// Every step as columns: a dict of bytes objects, each the native-endian values of one column
// (`group`, `index`: uint32; `step`, `epoch`: int64, with `has_step`, `has_epoch`: uint8 0/1;
// `ts_ns`, `dur_ns` and the five parts `compute_ns` ... `other_ns`: uint64), and `ranks`: a
// list of each group's rank (None without one). nullptr with an error set.
inline PyObject *step_columns(const held_steps &h) {
  using dftrace::analysis::k_nbound;
  struct column {
    const char *name;
    size_t width;
    PyObject *bytes = nullptr;
    char *at = nullptr;
  };
  column cols[] = {{"group", 4},      {"index", 4},     {"step", 8},  {"has_step", 1},
                   {"epoch", 8},      {"has_epoch", 1}, {"ts_ns", 8}, {"dur_ns", 8},
                   {"compute_ns", 8}, {"comm_ns", 8},   {"io_ns", 8}, {"data_ns", 8},
                   {"other_ns", 8}};
  const size_t n = h.steps.size();
  bool ok = true;
  for (column &c : cols) {
    ok = ok && (c.bytes = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(n * c.width)));
    if (ok) c.at = PyBytes_AS_STRING(c.bytes);
  }
  auto put = [](column &c, const void *v) {
    std::memcpy(c.at, v, c.width);
    c.at += c.width;
  };
  if (ok && !h.steps.for_each([&](const auto &s, size_t) {
        const uint8_t has_step = s.has_step, has_epoch = s.has_epoch;
        put(cols[0], &s.group);
        put(cols[1], &s.index);
        put(cols[2], &s.step);
        put(cols[3], &has_step);
        put(cols[4], &s.epoch);
        put(cols[5], &has_epoch);
        put(cols[6], &s.start);
        put(cols[7], &s.dur);
        for (size_t k = 0; k <= k_nbound; ++k) put(cols[8 + k], &s.parts[k]);
      }))
    ok = steps_unread();
  PyObject *out = ok ? PyDict_New() : nullptr;
  ok = out != nullptr;
  for (column &c : cols) {
    ok = ok && PyDict_SetItemString(out, c.name, c.bytes) == 0;
    Py_XDECREF(c.bytes);
  }
  PyObject *ranks = ok ? PyList_New(static_cast<Py_ssize_t>(h.ranks.size())) : nullptr;
  ok = ranks != nullptr;
  for (size_t g = 0; ok && g < h.ranks.size(); ++g) {
    PyObject *v = h.ranks[g].first ? PyLong_FromLongLong(h.ranks[g].second) : new_ref(Py_None);
    ok = v != nullptr;
    if (ok) PyList_SET_ITEM(ranks, static_cast<Py_ssize_t>(g), v);
  }
  ok = ok && PyDict_SetItemString(out, "ranks", ranks) == 0;
  Py_XDECREF(ranks);
  if (!ok) {
    Py_XDECREF(out);
    if (!PyErr_Occurred()) PyErr_NoMemory();
    return nullptr;
  }
  return out;
}

}  // namespace dftrace::python
