/* open_uses.c: `with node:`, start() and stop() over the core's per-thread stack. */
#include "ext.h"

/* `with node:` and start()/stop() are called on shared objects: each use's region lives on the
 * core's stack of the calling thread, and __exit__/stop() ends the innermost open region of the
 * same node there (dftrace_node_stop). A use forced off begins nothing, so it ends nothing. */
static inline void use_begin(NodeObject *self) { (void)node_region_begin(self); }

static inline void use_end(NodeObject *self) {
  if (self->enable != DFTRACE_FORCE_OFF) (void)dftrace_node_stop(self->node);
}

PyObject *node_enter(NodeObject *self, PyObject *unused) {
  (void)unused;
  use_begin(self);
  return Py_NewRef(self);
}

PyObject *node_exit(NodeObject *self, PyObject *const *argv, Py_ssize_t n) {
  (void)argv;
  (void)n;
  use_end(self);
  Py_RETURN_FALSE;
}

static int metadata_flag(PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames) {
  PyObject *m = nargs > 0 ? argv[0] : NULL;
  if (kwnames) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); ++i) {
      const char *k = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i));
      if (k && strcmp(k, "metadata") == 0)
        m = argv[nargs + i];
      else if (!k)
        PyErr_Clear();
    }
  }
  return m ? PyObject_IsTrue(m) > 0 : 0;
}

PyObject *node_start(NodeObject *self, PyObject *const *argv, Py_ssize_t nargsf,
                     PyObject *kwnames) {
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (metadata_flag(argv, nargs, kwnames)) {
    if (use_wanted(self->node, self->enable)) dftrace_node_mark_start(self->node);
  } else {
    use_begin(self);
  }
  Py_RETURN_NONE;
}

PyObject *node_stop(NodeObject *self, PyObject *const *argv, Py_ssize_t nargsf, PyObject *kwnames) {
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (metadata_flag(argv, nargs, kwnames)) {
    if (use_wanted(self->node, self->enable)) dftrace_node_mark_end(self->node);
  } else {
    use_end(self);
  }
  Py_RETURN_NONE;
}

/* In a forked child: the parent's open uses end in the parent (the core drops them). */
PyObject *mod_after_fork_child(PyObject *m, PyObject *u) {
  (void)m;
  (void)u;
  Py_RETURN_NONE;
}

PyObject *mod_open_depth(PyObject *m, PyObject *u) {
  (void)m;
  (void)u;
  /* 1 while a region is open on the calling thread (the core's stack), else 0. */
  return PyLong_FromLong(dftrace_region_current() != 0);
}
