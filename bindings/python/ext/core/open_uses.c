/* open_uses.c: the per-thread open uses: `with node:`, start() and stop(). */
#include "ext.h"

/* ---------------------------------------------------------------- per-thread open uses */

/* `with node:` and start()/stop() are called on shared objects: the region of each use is
 * kept per thread, and __exit__/stop() ends the innermost open use of the same node. */
#define OPEN_MAX 256
typedef struct {
  dftrace_node_t *node;
  dftrace_region_t region;
} open_use;
static _Thread_local open_use t_open[OPEN_MAX];
static _Thread_local int t_depth;

static void use_push(dftrace_node_t *n, dftrace_region_t r) {
  if (t_depth < OPEN_MAX) {
    t_open[t_depth].node = n;
    t_open[t_depth].region = r;
    ++t_depth;
    return;
  }
  static int warned;
  if (!warned) {
    warned = 1;
    warn(
        "more than %d regions open at once on a thread (start() without stop()?); "
        "the excess is not recorded",
        OPEN_MAX);
  }
  if (r) dftrace_region_cancel(r);
}

static void use_pop(dftrace_node_t *n) {
  for (int i = t_depth - 1; i >= 0; --i) {
    if (t_open[i].node != n) continue;
    const dftrace_region_t r = t_open[i].region;
    memmove(&t_open[i], &t_open[i + 1], (size_t)(t_depth - i - 1) * sizeof(open_use));
    --t_depth;
    if (r) dftrace_region_end(r);
    return;
  }
}

PyObject *node_enter(NodeObject *self, PyObject *unused) {
  (void)unused;
  use_push(self->node, node_region_begin(self));
  return Py_NewRef(self);
}

PyObject *node_exit(NodeObject *self, PyObject *const *argv, Py_ssize_t n) {
  (void)argv;
  (void)n;
  use_pop(self->node);
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
    use_push(self->node, node_region_begin(self));
  }
  Py_RETURN_NONE;
}

PyObject *node_stop(NodeObject *self, PyObject *const *argv, Py_ssize_t nargsf, PyObject *kwnames) {
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (metadata_flag(argv, nargs, kwnames)) {
    if (use_wanted(self->node, self->enable)) dftrace_node_mark_end(self->node);
  } else {
    use_pop(self->node);
  }
  Py_RETURN_NONE;
}

/* In a forked child: the parent's open uses end in the parent (the core drops them too). */
PyObject *mod_after_fork_child(PyObject *m, PyObject *u) {
  (void)m;
  (void)u;
  t_depth = 0;
  Py_RETURN_NONE;
}

PyObject *mod_open_depth(PyObject *m, PyObject *u) {
  (void)m;
  (void)u;
  return PyLong_FromLong(t_depth);
}
