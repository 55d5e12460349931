/* window.c: dftrace attach's windows seen from Python (dftrace_attach_wants, dftrace_on_window):
 * what the PyTorch instrumentation reads to install its wrappers for a window only. */
#include "ext.h"

/* The Python function run when a window opens or closes, and the count of such changes. The
 * core calls window_changed on any thread, with its lock held and maybe without the GIL: it
 * counts (an atomic add) and asks the interpreter's main thread to run the function at its next
 * bytecode boundary (Py_AddPendingCall needs neither the GIL nor a thread state). */
static PyObject *g_window_fn;
static unsigned long g_window_changes;

static int run_window_fn(void *unused) {
  (void)unused;
  if (!g_window_fn) return 0;
  PyObject *r = PyObject_CallNoArgs(g_window_fn);
  if (!r) warn_and_clear("dftrace: an attach window's change in the PyTorch instrumentation");
  Py_XDECREF(r);
  return 0; /* never an exception into the code that runs */
}

static void window_changed(void *unused) {
  (void)unused;
  __atomic_fetch_add(&g_window_changes, 1, __ATOMIC_RELEASE);
  (void)Py_AddPendingCall(run_window_fn, NULL); /* a full queue: the next step boundary sees it */
}

/* _watch_windows(fn): fn() runs on the main thread after each change (None: no more; the
 * package calls that at exit, before the interpreter ends, so that no change reaches it). */
PyObject *mod_watch_windows(PyObject *m, PyObject *fn) {
  (void)m;
  if (fn != Py_None && !PyCallable_Check(fn)) {
    PyErr_SetString(PyExc_TypeError, "_watch_windows needs a callable or None");
    return NULL;
  }
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = dftrace_on_window(NULL, NULL); /* none running after this */
  Py_END_ALLOW_THREADS Py_XSETREF(g_window_fn, fn == Py_None ? NULL : Py_NewRef(fn));
  if (g_window_fn) {
    Py_BEGIN_ALLOW_THREADS rc = dftrace_on_window(window_changed, NULL);
    Py_END_ALLOW_THREADS
  }
  return PyLong_FromLong(rc);
}

PyObject *mod_window_changes(PyObject *m, PyObject *u) {
  (void)m;
  (void)u;
  return PyLong_FromUnsignedLong(__atomic_load_n(&g_window_changes, __ATOMIC_ACQUIRE));
}

PyObject *mod_attach_wants(PyObject *m, PyObject *category) {
  (void)m;
  const char *c = PyUnicode_AsUTF8(category);
  if (!c) return NULL;
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = dftrace_attach_wants(c); /* it takes dftrace's lock */
  Py_END_ALLOW_THREADS return PyBool_FromLong(rc);
}
