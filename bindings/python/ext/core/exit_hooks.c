/* exit_hooks.c: what the package adds to the interpreter's end: sys.excepthook (a trigger of the
 * flight recorder that names an unhandled exception) and the atexit function that finalizes
 * after an uncaught KeyboardInterrupt. Both are C functions: a hook in Python runs bytecode,
 * where a second SIGINT (`timeout` sends one to the process and one to its group) raises a
 * KeyboardInterrupt inside the hook and changes the report Python prints. Nothing here runs
 * bytecode of its own; str() of an exception whose class defines __str__ in Python may. */
#include "ext.h"

static PyObject *g_previous_hook;

/* _set_previous_excepthook(hook): the hook that _excepthook calls after its trigger. */
PyObject *mod_set_previous_excepthook(PyObject *m, PyObject *hook) {
  (void)m;
  Py_INCREF(hook);
  Py_XSETREF(g_previous_hook, hook);
  Py_RETURN_NONE;
}

/* The trigger's reason: "unhandled exception NAME: STR(VALUE)", or without STR where str()
 * fails (whatever it raised is dropped: the report must come). NULL when none can be made. */
static PyObject *unhandled_reason(PyObject *kind, PyObject *value) {
  PyObject *name = PyObject_GetAttrString(kind, "__name__");
  PyObject *text = name && value ? PyObject_Str(value) : NULL;
  if (!text) PyErr_Clear();
  PyObject *reason = NULL;
  if (name && text)
    reason = PyUnicode_FromFormat("unhandled exception %S: %S", name, text);
  else if (name)
    reason = PyUnicode_FromFormat("unhandled exception %S", name);
  if (!reason) PyErr_Clear();
  Py_XDECREF(name);
  Py_XDECREF(text);
  return reason;
}

/* _excepthook(kind, value, tb): in ring mode (the flight recorder) a trigger whose line names
 * the exception, so that the window before it is written; nothing when tracing is off or not in
 * ring mode. Then the previous hook (Python's own report). */
PyObject *mod_excepthook(PyObject *m, PyObject *const *argv, Py_ssize_t n) {
  (void)m;
  if (n == 3 && dftrace_is_enabled()) {
    PyObject *reason = unhandled_reason(argv[0], argv[1]);
    const char *s = reason ? PyUnicode_AsUTF8(reason) : NULL;
    if (!s) PyErr_Clear();
    Py_BEGIN_ALLOW_THREADS dftrace_trigger(s ? s : "unhandled exception");
    Py_END_ALLOW_THREADS Py_XDECREF(reason);
  }
  PyObject *hook = g_previous_hook ? g_previous_hook : PySys_GetObject("__excepthook__");
  if (!hook) Py_RETURN_NONE;
  return PyObject_Vectorcall(hook, argv, (size_t)n, NULL);
}

/* _finalize_after_keyboard_interrupt(): an uncaught KeyboardInterrupt ends Python by raising
 * SIGINT again after Python's own exit handlers, so the C library's exit handler never runs and
 * the trace would lack its end line: it is finalized here, from atexit. (SIGINT is Python's: the
 * library never takes it from the interpreter, so the end line does not name it.) */
PyObject *mod_finalize_after_keyboard_interrupt(PyObject *m, PyObject *u) {
  (void)m;
  (void)u;
  PyObject *last = PySys_GetObject("last_value"); /* borrowed; NULL without an error set */
  if (last && PyErr_GivenExceptionMatches(last, PyExc_KeyboardInterrupt)) {
    Py_BEGIN_ALLOW_THREADS dftrace_finalize();
    Py_END_ALLOW_THREADS
  }
  Py_RETURN_NONE;
}
