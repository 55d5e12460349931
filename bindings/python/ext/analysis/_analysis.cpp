// _analysis.cpp: dftrace._analysis, the analysis engine of `dftrace analyze` (src/analysis)
// for dftrace.analyze (bindings/python/analysis/README.md). Two phases, so that a Dask
// cluster can run the first on its workers: partial() reads a set of files and analyses the
// groups they hold (bytes out), merge() joins partials into the document of
// `dftrace analyze --json`. The single-machine call is one partial merged: the same code.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "../common/py_module.hpp"
#include "../common/py_strings.hpp"
#include "analysis/analyze.hpp"
#include "analysis/diff_json.hpp"
#include "analysis/findings.hpp"
#include "analysis/inputs.hpp"
#include "analysis/partial_codec.hpp"
#include "analysis/result_json.hpp"
#include "step_items.hpp"

namespace {

using namespace dftrace::analysis;

PyObject *g_split_error = nullptr;

// The layer table of `--layers FILE` and `--steps NAME` (None: the defaults).
bool make_table(const char *layers, const char *steps, layer_table *table) {
  std::string why;
  if (layers && !table->load_yaml(layers, &why)) {
    PyErr_SetString(PyExc_ValueError, ("layers: " + why).c_str());
    return false;
  }
  if (steps) {
    if (!*steps) {
      PyErr_SetString(PyExc_ValueError, "steps needs an event name");
      return false;
    }
    table->set_step_name(steps);
  }
  return true;
}

PyObject *partial(PyObject *, PyObject *args) {
  PyObject *paths_o;
  const char *steps = nullptr, *layers = nullptr;
  int threads = 0;
  if (!PyArg_ParseTuple(args, "Ozzi", &paths_o, &steps, &layers, &threads)) return nullptr;
  std::vector<std::string> paths;
  if (!dftrace::python::strings_of(paths_o, &paths, "paths")) return nullptr;
  layer_table table;
  if (!make_table(layers, steps, &table)) return nullptr;
  std::string bytes;
  auto work = [&] {
    dftrace::detail::read_options opt;
    opt.threads =
        threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    collection c;
    c.spill_after = spill_budget();
    input_report in;
    read_traces(paths, table, opt, &c, &in, {});
    bytes = encode_partial(in, analyze_groups(c, table));
  };
  if (!dftrace::python::without_gil(work)) return nullptr;
  return PyBytes_FromStringAndSize(bytes.data(), static_cast<Py_ssize_t>(bytes.size()));
}

// merge()'s and merge_doc()'s common part: the partials decoded and merged, the rules
// evaluated; false with a Python error set.
struct merged_run {
  input_report in;
  analysis_result r;
  size_t processes = 0;
};
bool merge_args(PyObject *args, merged_run *out) {
  PyObject *parts_o;
  const char *steps = nullptr, *layers = nullptr, *rules_path = nullptr;
  if (!PyArg_ParseTuple(args, "Ozzz", &parts_o, &steps, &layers, &rules_path)) return false;
  layer_table table;
  if (!make_table(layers, steps, &table)) return false;
  std::vector<rule> rules;
  std::string why;
  if (!parse_rules(k_default_rules, "the built-in rules", &rules, &why) ||
      (rules_path && !load_rules_file(rules_path, &rules, &why))) {
    PyErr_SetString(PyExc_ValueError, ("rules: " + why).c_str());
    return false;
  }
  // Each partial decoded as it comes from the iterable and let go (its steps and calls into
  // their budgets and files), so a generator that fetches one at a time never has them all.
  PyObject *it = PyObject_GetIter(parts_o);
  if (!it) return false;
  const Py_ssize_t hint = PyObject_LengthHint(parts_o, 1);
  if (hint < 0) {
    Py_DECREF(it);
    return false;
  }
  std::vector<input_report> ins;
  std::vector<analysis_partial> parts;
  decoded_calls calls;  // the partials' collective calls together: memory up to one budget
  const size_t step_rows = shared_step_rows(static_cast<size_t>(hint));  // and their step rows
  while (PyObject *item = PyIter_Next(it)) {
    char *data = nullptr;
    Py_ssize_t len = 0;
    ins.emplace_back();
    parts.emplace_back();
    const bool ok = PyBytes_AsStringAndSize(item, &data, &len) == 0 &&
                    decode_partial(std::string_view(data, static_cast<size_t>(len)), &ins.back(),
                                   &parts.back(), &why, &calls, step_rows);
    Py_DECREF(item);
    if (!ok) {
      Py_DECREF(it);
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, why.c_str());
      return false;
    }
  }
  Py_DECREF(it);
  if (PyErr_Occurred()) return false;
  bool split = false;
  auto work = [&] {
    if (merge_partials(parts, table, &out->r, &why)) {
      for (const analysis_partial &p : parts) out->processes += p.procs.size();
      out->r.findings = evaluate_rules(rules, out->r);
      out->in = merge_inputs(ins);
    } else {
      split = true;
    }
  };
  if (!dftrace::python::without_gil(work)) return false;
  if (split) {
    PyErr_SetString(g_split_error, why.c_str());
    return false;
  }
  return true;
}

// The document's text (str, or bytes when as_bytes), with or without its step items; nullptr
// with an error set.
PyObject *document_text(const merged_run &m, bool step_items, bool as_bytes = false) {
  // The parts (about 1 MiB each) kept as they come and copied once into the object: a string
  // grown part by part would copy the document (hundreds of MB) again at each doubling.
  std::vector<std::string> parts;
  size_t total = 0;
  bool whole = true;
  auto work = [&] {
    whole = result_json(
        m.in, m.r, m.processes,
        [&](std::string &part) {
          total += part.size();
          parts.emplace_back(part);  // a copy of its size; part keeps its room
          part.clear();
        },
        step_items);
  };
  if (!dftrace::python::without_gil(work)) return nullptr;
  if (!whole) {
    PyErr_SetString(PyExc_OSError,
                    "the analysis's temporary file could not be read back while the document "
                    "was written: its step items or stragglers are incomplete");
    return nullptr;
  }
  PyObject *bytes = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(total));
  if (!bytes) return nullptr;
  char *at = PyBytes_AS_STRING(bytes);
  for (std::string &part : parts) {
    std::copy(part.begin(), part.end(), at);
    at += part.size();
    std::string().swap(part);
  }
  if (as_bytes) return bytes;
  PyObject *text =
      PyUnicode_DecodeUTF8(PyBytes_AS_STRING(bytes), static_cast<Py_ssize_t>(total), nullptr);
  Py_DECREF(bytes);
  return text;
}

PyObject *merge(PyObject *, PyObject *args) {
  merged_run m;
  return merge_args(args, &m) ? document_text(m, true) : nullptr;
}

// The command's merge: the text as UTF-8 bytes (to be written as they are: no str to decode
// and encode again) and inputs.complete (no text to parse for it).
PyObject *merge_text(PyObject *, PyObject *args) {
  merged_run m;
  if (!merge_args(args, &m)) return nullptr;
  PyObject *text = document_text(m, true, true);
  if (!text) return nullptr;
  return Py_BuildValue("(NO)", text, inputs_complete(m.in, m.r) ? Py_True : Py_False);
}

// The document without its step items, and the steps themselves in a capsule (step_items.hpp)
// that step_items() and step_columns() read: no item is an object until it is asked for.
PyObject *merge_doc(PyObject *, PyObject *args) {
  merged_run m;
  if (!merge_args(args, &m)) return nullptr;
  PyObject *text = document_text(m, false);
  if (!text) return nullptr;
  PyObject *steps = dftrace::python::steps_capsule(m.r);
  if (!steps) {
    Py_DECREF(text);
    return nullptr;
  }
  return Py_BuildValue("(NN)", text, steps);
}

PyObject *step_count(PyObject *, PyObject *capsule) {
  const dftrace::python::held_steps *h = dftrace::python::steps_of(capsule);
  return h ? PyLong_FromSize_t(h->steps.size()) : nullptr;
}

// step_items(steps, first, n): the items [first, first + n), clipped to the steps held.
PyObject *step_items(PyObject *, PyObject *args) {
  PyObject *capsule;
  Py_ssize_t first = 0, n = 0;
  if (!PyArg_ParseTuple(args, "Onn", &capsule, &first, &n)) return nullptr;
  const dftrace::python::held_steps *h = dftrace::python::steps_of(capsule);
  if (!h) return nullptr;
  const size_t size = h->steps.size();
  const size_t from = first < 0 ? 0 : std::min(static_cast<size_t>(first), size);
  const size_t count = n < 0 ? 0 : std::min(static_cast<size_t>(n), size - from);
  return dftrace::python::step_items(*h, from, count);
}

PyObject *step_columns(PyObject *, PyObject *capsule) {
  const dftrace::python::held_steps *h = dftrace::python::steps_of(capsule);
  return h ? dftrace::python::step_columns(*h) : nullptr;
}

// A run read whole (its names' durations collected) into *out, as `dftrace diff` reads each.
void read_run(const std::vector<std::string> &paths, layer_table table, int threads,
              run_summary *out) {
  table.set_name_stats(true);
  dftrace::detail::read_options opt;
  opt.threads = threads;
  collection c;
  c.spill_after = spill_budget();
  input_report in;
  read_traces(paths, table, opt, &c, &in, {});
  out->events = c.counts.objects;
  std::vector<std::string> unread;
  out->names = summarize_names(c.names, &c.spill, &unread, durations_budget(c.spill_after));
  decltype(c.names)().swap(c.names);
  out->r = analyze(c, table);
  out->steps = out->r.steps.size();
  out->r.steps.clear();
}

// The new run from what read_with_analysis(..., names=True) left of it: one partial merged,
// as analyze() merges it; false with *why.
bool run_of_partial(std::string_view partial, std::string_view names, const layer_table &table,
                    run_summary *out, std::string *why) {
  std::vector<analysis_partial> parts(1);
  input_report in;
  std::vector<std::string> unread;
  if (!decode_partial(partial, &in, &parts[0], why) ||
      !decode_names(names, &out->names, &unread, why) ||
      !merge_partials(parts, table, &out->r, why))
    return false;
  out->events = in.counts.objects;
  out->steps = out->r.steps.size();
  out->r.steps.clear();
  return true;
}

// diff(base_paths, new_paths, new_partial, new_names, steps, layers, threads) -> str: the
// document of `dftrace diff --json --allow-damaged BASE NEW`. The new run is new_partial and
// new_names (read_with_analysis with names) when given, else new_paths read here.
PyObject *diff(PyObject *, PyObject *args) {
  PyObject *base_o, *new_o;
  const char *partial = nullptr, *names = nullptr, *steps = nullptr, *layers = nullptr;
  Py_ssize_t partial_len = 0, names_len = 0;
  int threads = 0;
  if (!PyArg_ParseTuple(args, "OOz#z#zzi", &base_o, &new_o, &partial, &partial_len, &names,
                        &names_len, &steps, &layers, &threads))
    return nullptr;
  std::vector<std::string> base_paths, new_paths;
  if (!dftrace::python::strings_of(base_o, &base_paths, "base paths") ||
      !dftrace::python::strings_of(new_o, &new_paths, "new paths"))
    return nullptr;
  layer_table table;
  if (!make_table(layers, steps, &table)) return nullptr;
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string json, failure, why;
  Py_BEGIN_ALLOW_THREADS;
  try {
    run_summary base, now;
    if (!partial || !names) {
      read_run(new_paths, table, threads, &now);
    } else if (!run_of_partial(std::string_view(partial, static_cast<size_t>(partial_len)),
                               std::string_view(names, static_cast<size_t>(names_len)), table, &now,
                               &why)) {
      failure = why;
    }
    if (failure.empty()) {
      read_run(base_paths, table, threads, &base);
      std::vector<std::string> appeared, vanished;
      appeared_vanished(base, now, &appeared, &vanished);
      diff_json(json, compare_runs(base, now), base, now, appeared, vanished, {});
    }
  } catch (const std::exception &e) {
    failure = e.what();
  }
  Py_END_ALLOW_THREADS;
  if (!failure.empty()) {
    PyErr_SetString(why.empty() ? PyExc_MemoryError : PyExc_ValueError, failure.c_str());
    return nullptr;
  }
  return PyUnicode_FromStringAndSize(json.data(), static_cast<Py_ssize_t>(json.size()));
}

PyMethodDef methods[] = {
    {"partial", partial, METH_VARARGS,
     "partial(paths, steps, layers, threads) -> bytes: the files read and their groups analysed"},
    {"merge", merge, METH_VARARGS,
     "merge(partials, steps, layers, rules) -> str: the JSON document of `dftrace analyze`"},
    {"merge_text", merge_text, METH_VARARGS,
     "merge_text(partials, steps, layers, rules) -> (bytes, bool): merge()'s document as UTF-8, "
     "and its inputs.complete"},
    {"merge_doc", merge_doc, METH_VARARGS,
     "merge_doc(partials, steps, layers, rules) -> (str, steps): the document with steps.items "
     "empty, and the steps held for step_items() and step_columns()"},
    {"step_count", step_count, METH_O, "step_count(steps) -> int: how many steps merge_doc held"},
    {"step_items", step_items, METH_VARARGS,
     "step_items(steps, first, n) -> list: the items [first, first + n) as dicts"},
    {"step_columns", step_columns, METH_O,
     "step_columns(steps) -> dict: every step as columns of integers (bytes), and the ranks"},
    {"diff", diff, METH_VARARGS,
     "diff(base_paths, new_paths, new_partial, new_names, steps, layers, threads) -> str: the "
     "document of `dftrace diff --json --allow-damaged`"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module_def = dftrace::python::module_def_of(
    "dftrace._analysis", "The analysis engine of `dftrace analyze`, in two phases.", methods);

}  // namespace

PyMODINIT_FUNC PyInit__analysis(void) {
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return nullptr;
  if (!g_split_error)
    g_split_error =
        PyErr_NewException("dftrace._analysis.SplitGroups", PyExc_RuntimeError, nullptr);
  Py_XINCREF(g_split_error);
  if (!g_split_error || PyModule_AddObject(m, "SplitGroups", g_split_error) != 0) {
    Py_XDECREF(g_split_error);
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
