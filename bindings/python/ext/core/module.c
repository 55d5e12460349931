/* module.c: the module's functions and its initialisation. */
#include "ext.h"

/* ---------------------------------------------------------------- module functions */

static int tri(PyObject *o) { return (!o || o == Py_None) ? -1 : PyObject_IsTrue(o) > 0; }

static PyObject *mod_init(PyObject *m, PyObject *args, PyObject *kw) {
  (void)m;
  static char *kwlist[] = {"enable",      "output_prefix", "output_file", "config_file",
                           "exec_name",   "metadata",      "compression", "level",
                           "bind_atexit", "io_data_dir",   "parent_pid",  NULL};
  PyObject *enable = Py_None, *metadata = Py_None, *compression = Py_None, *atexit_ = Py_None;
  const char *prefix = NULL, *file = NULL, *config = NULL, *exec = NULL, *io_dirs = NULL;
  int level = -1;
  long parent = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OzzzzOOiOzl", kwlist, &enable, &prefix, &file,
                                   &config, &exec, &metadata, &compression, &level, &atexit_,
                                   &io_dirs, &parent))
    return NULL;
  dftrace_options_t o;
  dftrace_options_init(&o);
  o.enable = tri(enable);
  o.output_prefix = prefix;
  o.output_file = file;
  o.config_file = config;
  o.exec_name = exec;
  o.metadata = tri(metadata);
  o.compression = tri(compression);
  o.level = level;
  o.bind_atexit = tri(atexit_);
  o.io_data_dir = io_dirs;
  o.parent_pid = parent;
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = dftrace_init(&o);
  Py_END_ALLOW_THREADS return PyLong_FromLong(rc);
}

static PyObject *mod_set_enabled(PyObject *m, PyObject *on) {
  (void)m;
  dftrace_set_enabled(PyObject_IsTrue(on) > 0);
  Py_RETURN_NONE;
}

static PyObject *str_or_none(const char *s) {
  if (!s) Py_RETURN_NONE;
  return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* A set-up call that may wait on file I/O, run without the GIL; its status as an int. */
static PyObject *status_without_gil(int (*call)(void)) {
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = call();
  Py_END_ALLOW_THREADS return PyLong_FromLong(rc);
}

/* The module's functions without arguments (METH_NOARGS): mod_<name> returns <result>. */
#define NOARGS_FUNCTION(name, result)                     \
  static PyObject *mod_##name(PyObject *m, PyObject *u) { \
    (void)m;                                              \
    (void)u;                                              \
    return result;                                        \
  }
NOARGS_FUNCTION(finalize, status_without_gil(dftrace_finalize))
NOARGS_FUNCTION(flush, status_without_gil(dftrace_flush))
NOARGS_FUNCTION(step, status_without_gil(dftrace_step)) /* a window's end flushes the file */
NOARGS_FUNCTION(step_phase, PyLong_FromLong(dftrace_step_phase()))
NOARGS_FUNCTION(step_count, PyLong_FromUnsignedLongLong(dftrace_step_count()))

static PyObject *mod_schedule_set(PyObject *m, PyObject *args) {
  (void)m;
  unsigned long long v[5];
  if (!PyArg_ParseTuple(args, "KKKKK", &v[0], &v[1], &v[2], &v[3], &v[4])) return NULL;
  dftrace_schedule_t s;
  s.struct_size = sizeof s;
  s.skip_first = v[0];
  s.wait = v[1];
  s.warmup = v[2];
  s.active = v[3];
  s.repeat = v[4];
  return PyLong_FromLong(dftrace_schedule_set(&s));
}
NOARGS_FUNCTION(is_enabled, PyBool_FromLong(dftrace_is_enabled()))
NOARGS_FUNCTION(status, str_or_none(dftrace_status()))
NOARGS_FUNCTION(output_path, str_or_none(dftrace_output_path()))
NOARGS_FUNCTION(config_describe, str_or_none(dftrace_config_describe()))
NOARGS_FUNCTION(version, str_or_none(dftrace_version()))
NOARGS_FUNCTION(now_ns, PyLong_FromUnsignedLongLong(dftrace_now_ns()))
NOARGS_FUNCTION(trace_time_ns, PyLong_FromUnsignedLongLong(dftrace_trace_time_ns()))
NOARGS_FUNCTION(events_written, PyLong_FromUnsignedLongLong(dftrace_events_written()))
NOARGS_FUNCTION(events_dropped, PyLong_FromUnsignedLongLong(dftrace_events_dropped()))
#undef NOARGS_FUNCTION

static PyObject *mod_status_string(PyObject *m, PyObject *code) {
  (void)m;
  long c = PyLong_AsLong(code);
  if (c == -1 && PyErr_Occurred()) return NULL;
  return str_or_none(dftrace_status_string((int)c));
}
/* metadata(key, value): a CM line; process_property(key, value): a PR line. */
static PyObject *two_strings(PyObject *const *argv, Py_ssize_t n,
                             void (*fn)(const char *, const char *), const char *what) {
  if (n != 2) {
    warn("%s needs a key and a value (ignored)", what);
    Py_RETURN_NONE;
  }
  PyObject *kh = NULL, *vh = NULL;
  const char *k = key_utf8(argv[0], &kh);
  const char *v = k ? key_utf8(argv[1], &vh) : NULL;
  if (!k || !v)
    warn_and_clear(what);
  else
    fn(k, v);
  Py_XDECREF(kh);
  Py_XDECREF(vh);
  Py_RETURN_NONE;
}

static PyObject *mod_metadata(PyObject *m, PyObject *const *argv, Py_ssize_t n) {
  (void)m;
  return two_strings(argv, n, dftrace_metadata, "metadata");
}

static PyObject *mod_process_property(PyObject *m, PyObject *const *argv, Py_ssize_t n) {
  (void)m;
  if (n == 2 && PyLong_Check(argv[1]) && !PyBool_Check(argv[1])) {
    PyObject *kh = NULL;
    const char *k = key_utf8(argv[0], &kh);
    long long v = PyLong_AsLongLong(argv[1]);
    if (!k || (v == -1 && PyErr_Occurred()))
      warn_and_clear("process_property");
    else
      dftrace_process_property_int(k, v);
    Py_XDECREF(kh);
    Py_RETURN_NONE;
  }
  return two_strings(argv, n, dftrace_process_property_string, "process_property");
}

/* trigger(reason="") -> 1 when the flight recorder took the trigger, 0 when not. The ring is
 * written by the writer thread: nothing here waits for it. */
static PyObject *mod_trigger(PyObject *m, PyObject *const *argv, Py_ssize_t n) {
  (void)m;
  PyObject *h = NULL;
  const char *s = n >= 1 ? key_utf8(argv[0], &h) : "";
  if (!s) {
    warn_and_clear("trigger");
    Py_RETURN_NONE;
  }
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = dftrace_trigger(s);
  Py_END_ALLOW_THREADS Py_XDECREF(h);
  return PyLong_FromLong(rc);
}

static PyObject *mod_thread_name(PyObject *m, PyObject *name) {
  (void)m;
  PyObject *h = NULL;
  const char *s = key_utf8(name, &h);
  if (!s)
    warn_and_clear("thread_name");
  else
    dftrace_thread_name(s);
  Py_XDECREF(h);
  Py_RETURN_NONE;
}

/* file_hash(path) -> the file's hash (DFTracer's), its FH line written once; 0 when the
 * path is not a string or tracing is off. */
static PyObject *mod_file_hash(PyObject *m, PyObject *path) {
  (void)m;
  PyObject *h = NULL;
  const char *s = key_utf8(path, &h);
  uint64_t v = 0;
  if (!s)
    warn_and_clear("file_hash");
  else
    v = dftrace_hash_define(DFTRACE_HASH_FILE, s);
  Py_XDECREF(h);
  return PyLong_FromUnsignedLongLong(v);
}

/* region_arg_int(region, key, value): an integer argument on an open region (known only at
 * its end, like the bytes a save wrote). */
static PyObject *mod_region_arg_int(PyObject *m, PyObject *args) {
  (void)m;
  unsigned long long region;
  const char *key;
  long long value;
  if (!PyArg_ParseTuple(args, "KsL", &region, &key, &value)) {
    warn_and_clear("region_arg_int");
    Py_RETURN_NONE;
  }
  if (region) dftrace_region_arg_int((dftrace_region_t)region, key, (int64_t)value);
  Py_RETURN_NONE;
}

/* One argument of any supported type on an open region; 0, or -1 with the error cleared. */
static int region_arg_one(dftrace_region_t region, PyObject *k, PyObject *v, const char *what) {
  if (v == Py_None) return 0;
  PyObject *kh = NULL;
  dftrace_arg_t a;
  const char *key = arg_convert(k, v, &a, &kh, what);
  if (!key) return -1;
  switch (a.type) {
    case DFTRACE_ARG_INT: dftrace_region_arg_int(region, key, a.value.i); break;
    case DFTRACE_ARG_UINT: dftrace_region_arg_uint(region, key, a.value.u); break;
    case DFTRACE_ARG_DOUBLE: dftrace_region_arg_double(region, key, a.value.d); break;
    case DFTRACE_ARG_BOOL: dftrace_region_arg_bool(region, key, a.value.b); break;
    case DFTRACE_ARG_STRING:
      dftrace_region_arg_string(region, key, a.value.s);
      PyMem_RawFree((void *)a.value.s);
      break;
    default: break;
  }
  Py_XDECREF(kh);
  return 0;
}

/* region_arg(region, key, value): an argument of any supported type (int, float, bool, str,
 * numpy scalar; other objects as their str()) on the innermost open region of this thread. */
static PyObject *mod_region_arg(PyObject *m, PyObject *const *argv, Py_ssize_t n) {
  (void)m;
  if (n != 3) {
    warn("region_arg needs a region, a key and a value (ignored)");
    Py_RETURN_NONE;
  }
  const dftrace_region_t region = region_of(argv[0]);
  if (region) region_arg_one(region, argv[1], argv[2], "region_arg");
  Py_RETURN_NONE;
}

/* region_args(region, pairs): region_arg for each (key, value) of a tuple, in one call (the
 * arguments of a torch.distributed call: 8 calls cost 0.4 us more). */
static PyObject *mod_region_args(PyObject *m, PyObject *const *argv, Py_ssize_t n) {
  (void)m;
  if (n != 2 || !PyTuple_Check(argv[1])) {
    warn("region_args needs a region and a tuple of (key, value) pairs (ignored)");
    Py_RETURN_NONE;
  }
  const dftrace_region_t region = region_of(argv[0]);
  if (!region) Py_RETURN_NONE;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(argv[1]); ++i) {
    PyObject *pair = PyTuple_GET_ITEM(argv[1], i);
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
      warn("region_args: item %zd is not a (key, value) pair (ignored)", i);
      continue;
    }
    region_arg_one(region, PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1), "region_args");
  }
  Py_RETURN_NONE;
}

/* region_cancel(region): drops an open region without writing it (a copy that did not
 * happen, a call that turned out to be a no-op). */
static PyObject *mod_region_cancel(PyObject *m, PyObject *region) {
  (void)m;
  return region_close(region, dftrace_region_cancel);
}

static PyObject *mod_set_rank(PyObject *m, PyObject *const *argv, Py_ssize_t n) {
  (void)m;
  if (n != 2) {
    warn("set_rank needs a rank and a size (ignored)");
    Py_RETURN_NONE;
  }
  long r = PyLong_AsLong(argv[0]), s = PyLong_AsLong(argv[1]);
  if (PyErr_Occurred()) {
    warn_and_clear("set_rank");
    Py_RETURN_NONE;
  }
  return PyLong_FromLong(dftrace_set_rank((int)r, (int)s));
}

static PyObject *mod_set_process_identity(PyObject *m, PyObject *const *argv, Py_ssize_t n) {
  (void)m;
  if (n != 2) {
    warn("set_process_identity needs a name (or None) and a parent pid (ignored)");
    Py_RETURN_NONE;
  }
  const char *name = argv[0] == Py_None ? NULL : PyUnicode_AsUTF8(argv[0]);
  long ppid = PyErr_Occurred() ? 0 : PyLong_AsLong(argv[1]);
  if (PyErr_Occurred()) {
    warn_and_clear("set_process_identity");
    Py_RETURN_NONE;
  }
  return PyLong_FromLong(dftrace_set_process_identity(name, ppid));
}

static PyObject *mod_set_capture_factory(PyObject *m, PyObject *fn) {
  (void)m;
  Py_XSETREF(g_capture_factory, fn == Py_None ? NULL : Py_NewRef(fn));
  Py_RETURN_NONE;
}

static PyObject *mod_set_async_wrapper(PyObject *m, PyObject *fn) {
  (void)m;
  Py_XSETREF(g_async_wrapper, fn == Py_None ? NULL : Py_NewRef(fn));
  Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"init", (PyCFunction)(void (*)(void))mod_init, METH_VARARGS | METH_KEYWORDS,
     "init(*, enable, output_prefix, output_file, config_file, exec_name, metadata, "
     "compression, level, bind_atexit, io_data_dir) -> status"},
    {"finalize", mod_finalize, METH_NOARGS, "Writes the rest of the trace and closes it."},
    {"flush", mod_flush, METH_NOARGS, "Writes what is buffered."},
    {"step", mod_step, METH_NOARGS,
     "The end of a training step: 1 when an active window of the schedule just closed."},
    {"schedule_set", mod_schedule_set, METH_VARARGS,
     "schedule_set(skip_first, wait, warmup, active, repeat) -> status"},
    {"step_phase", mod_step_phase, METH_NOARGS, "The phase of the step under way (0..5)."},
    {"step_count", mod_step_count, METH_NOARGS, "Steps ended so far."},
    {"file_hash", mod_file_hash, METH_O, "file_hash(path) -> the file's hash (FH line written)"},
    {"region_arg", (PyCFunction)(void (*)(void))mod_region_arg, METH_FASTCALL,
     "region_arg(region, key, value): an argument on the innermost open region"},
    {"region_cancel", mod_region_cancel, METH_O, "Drops an open region without writing it."},
    {"region_arg_int", mod_region_arg_int, METH_VARARGS,
     "region_arg_int(region, key, value): an integer argument on an open region"},
    {"is_enabled", mod_is_enabled, METH_NOARGS, "True while events are recorded."},
    {"set_enabled", mod_set_enabled, METH_O, "Switches recording for the whole process."},
    {"status", mod_status, METH_NOARGS, "One line describing the state."},
    {"output_path", mod_output_path, METH_NOARGS, "This process's trace file, or None."},
    {"config_describe", mod_config_describe, METH_NOARGS, "The effective configuration."},
    {"version", mod_version, METH_NOARGS, "The library's version."},
    {"status_string", mod_status_string, METH_O, "Name of a status code."},
    {"now_ns", mod_now_ns, METH_NOARGS, "The tracer's clock (monotonic ns)."},
    {"trace_time_ns", mod_trace_time_ns, METH_NOARGS,
     "The trace's time base (ns since the Unix epoch): what ts is written from."},
    {"events_written", mod_events_written, METH_NOARGS, NULL},
    {"events_dropped", mod_events_dropped, METH_NOARGS, NULL},
    {"metadata", (PyCFunction)(void (*)(void))mod_metadata, METH_FASTCALL,
     "metadata(key, value): a custom metadata line."},
    {"process_property", (PyCFunction)(void (*)(void))mod_process_property, METH_FASTCALL,
     "process_property(key, value): a process property line."},
    {"thread_name", mod_thread_name, METH_O, "Names the calling thread in the trace."},
    {"set_rank", (PyCFunction)(void (*)(void))mod_set_rank, METH_FASTCALL, NULL},
    {"set_process_identity", (PyCFunction)(void (*)(void))mod_set_process_identity, METH_FASTCALL,
     NULL},
    {"region_args", (PyCFunction)(void (*)(void))mod_region_args, METH_FASTCALL, NULL},
    {"trigger", (PyCFunction)(void (*)(void))mod_trigger, METH_FASTCALL,
     "A trigger of the flight recorder (output.mode: ring): 1 when taken."},
    {"attach_wants", mod_attach_wants, METH_O,
     "attach_wants(category): False while the process waits for dftrace attach with it off."},
    {"window_changes", mod_window_changes, METH_NOARGS,
     "How many times an attach window opened or closed (seen by _watch_windows)."},
    {"_watch_windows", mod_watch_windows, METH_O, NULL},
    {"_set_async_wrapper", mod_set_async_wrapper, METH_O, NULL},
    {"_set_capture_factory", mod_set_capture_factory, METH_O, NULL},
    {"_open_depth", mod_open_depth, METH_NOARGS, NULL},
    {"_after_fork_child", mod_after_fork_child, METH_NOARGS, NULL},
    {"_set_previous_excepthook", mod_set_previous_excepthook, METH_O, NULL},
    {"_excepthook", (PyCFunction)(void (*)(void))mod_excepthook, METH_FASTCALL,
     "sys.excepthook: a trigger that names the unhandled exception, then the previous hook."},
    {"_finalize_after_keyboard_interrupt", mod_finalize_after_keyboard_interrupt, METH_NOARGS,
     NULL},
    {NULL, NULL, 0, NULL}};

/* The built-in AI tree of dftrace/ai_tree.def as ((category, enum name, (event, ...)), ...):
 * _tree.py builds `ai` and the event enums from it, so Python holds no copy of the table. */
static PyObject *ai_tree_table(void) {
  static const struct {
    const char *cat, *py_enum, *event; /* a category row has py_enum, an event row event */
  } rows[] = {
#define DFTRACE_AI_CATEGORY(c, e) {#c, #e, NULL},
#define DFTRACE_AI_EVENT(c, e) {#c, NULL, #e},
#include "dftrace/ai_tree.def"
  };
  const size_t n = sizeof rows / sizeof rows[0];
  PyObject *out = PyList_New(0);
  for (size_t i = 0; out && i < n;) {
    size_t end = i + 1;
    while (end < n && !rows[end].py_enum) ++end;
    PyObject *events = PyTuple_New((Py_ssize_t)(end - i - 1));
    for (size_t j = i + 1; events && j < end; ++j) {
      PyObject *s = PyUnicode_FromString(rows[j].event);
      if (!s) {
        Py_CLEAR(events);
        break;
      }
      PyTuple_SET_ITEM(events, (Py_ssize_t)(j - i - 1), s);
    }
    PyObject *row = events ? Py_BuildValue("(ssN)", rows[i].cat, rows[i].py_enum, events) : NULL;
    if (!row || PyList_Append(out, row) < 0) Py_CLEAR(out);
    Py_XDECREF(row);
    i = end;
  }
  if (!out) return NULL;
  PyObject *table = PyList_AsTuple(out);
  Py_DECREF(out);
  return table;
}

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT,
                                        "_dftrace",
                                        "dftrace's compiled core binding (C ABI).",
                                        -1,
                                        module_methods,
                                        NULL,
                                        NULL,
                                        NULL,
                                        NULL};

PyMODINIT_FUNC PyInit__dftrace(void) {
  if (PyType_Ready(&Node_Type) < 0 || PyType_Ready(&Traced_Type) < 0 ||
      PyType_Ready(&Iter_Type) < 0 || PyType_Ready(&Bound_Type) < 0 || PyType_Ready(&Slot_Type) < 0)
    return NULL;
  if (add_slot("__enter__", 0) < 0 || add_slot("__exit__", 1) < 0) return NULL;
  PyType_Modified(&Node_Type);
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  PyObject *functools = PyImport_ImportModule("functools");
  if (functools) {
    g_update_wrapper = PyObject_GetAttrString(functools, "update_wrapper");
    Py_DECREF(functools);
  }
  if (!g_update_wrapper) PyErr_Clear();
  if (PyModule_AddObjectRef(m, "Node", (PyObject *)&Node_Type) < 0 ||
      PyModule_AddObjectRef(m, "Traced", (PyObject *)&Traced_Type) < 0 ||
      PyModule_AddObjectRef(m, "Iter", (PyObject *)&Iter_Type) < 0 ||
      PyModule_AddIntConstant(m, "OK", DFTRACE_OK) < 0 ||
      PyModule_AddIntConstant(m, "ERR_DISABLED", DFTRACE_ERR_DISABLED) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  PyObject *table = ai_tree_table();
  if (!table || PyModule_AddObjectRef(m, "AI_TREE", table) < 0) {
    Py_XDECREF(table);
    Py_DECREF(m);
    return NULL;
  }
  Py_DECREF(table);
  return m;
}
