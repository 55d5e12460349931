/* ext.h: what the files of the _dftrace extension share: the object layouts, the per-use
 * argument lists and the functions one file calls in another. Private to ext/core. */
#ifndef DFTRACE_PY_EXT_H
#define DFTRACE_PY_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dftrace/dftrace.h"

/* tp_traverse and tp_clear of a type from one list of the object references it holds, so
 * that the two never disagree: REFS(X) applies X to each field, e.g.
 * #define ITER_REFS(X) X(self->it);  GC_SLOTS(iter, IterObject, ITER_REFS) */
#define GC_SLOTS(prefix, Type, REFS)                                     \
  static int prefix##_traverse(Type *self, visitproc visit, void *arg) { \
    REFS(Py_VISIT)                                                       \
    return 0;                                                            \
  }                                                                      \
  static int prefix##_clear(Type *self) {                                \
    REFS(Py_CLEAR)                                                       \
    return 0;                                                            \
  }

/* Per-use arguments in the ABI's form; keys and string values are owned copies. */
typedef struct {
  dftrace_arg_t *v;
  Py_ssize_t n;
} arg_list;

typedef struct {
  PyObject_HEAD vectorcallfunc vectorcall;
  PyObject *func;
  dftrace_node_t *node;
  int enable;
  arg_list args;
  PyObject *dict;
  PyObject *weakrefs;
  /* capture (node(capture=, result=, first=)): set by the package's factory; the plain
   * vectorcall never reads these (a function decorated without capture has its own). */
  PyObject *before; /* before(region, *args, **kwargs): the chosen arguments as region args */
  PyObject *after;  /* after(region, result): the return value as a region arg */
  Py_ssize_t left;  /* recorded calls still to capture */
} TracedObject;

typedef struct {
  PyObject_HEAD PyObject *it;
  dftrace_iter_t st;
  int done;
} IterObject;

typedef struct {
  PyObject_HEAD dftrace_node_t *node;
  int enable; /* per-use override: -1 node state, 0 off, 1 on */
  arg_list args;
  PyObject *weakrefs;
  PyObject *bound_enter; /* cached bound __enter__ / __exit__ (see Slot below) */
  PyObject *bound_exit;
  int is_use; /* a temporary use (node(args=...)): its slots are not cached */
  /* The call's keyword arguments whose values are not converted yet: a use converts its
   * arguments when it first records, so `with node(args=...)` costs little when off. */
  PyObject *pending_kw;
  /* (capture, result, first) of a use made with those keywords, for the functions it
   * decorates; NULL otherwise. */
  PyObject *capture;
} NodeObject;
/* No instance dict here: a Python subclass then gets CPython's managed dict, whose attribute
 * look-ups the interpreter specialises (`ai.compute.forward` is two of them per use). */

/* The bound __enter__/__exit__ a node caches (see the Slot descriptor below). */
typedef struct {
  PyObject_HEAD vectorcallfunc vectorcall;
  NodeObject *node; /* strong, like a bound method's self: `with` keeps only this alive */
  int is_exit;
} BoundObject;

extern PyTypeObject Traced_Type;
extern PyTypeObject Iter_Type;
extern PyTypeObject Node_Type;
extern PyTypeObject Bound_Type;
extern PyTypeObject Slot_Type;

extern PyObject *g_async_wrapper;   /* set by the package: wraps `async def` functions */
extern PyObject *g_update_wrapper;  /* functools.update_wrapper */
extern PyObject *g_capture_factory; /* set by the package: capture settings -> hooks */

void warn(const char *fmt, ...);
void warn_and_clear(const char *what);
void args_free(arg_list *a);
int args_copy(arg_list *dst, const arg_list *src);
const char *arg_convert(PyObject *key, PyObject *value, dftrace_arg_t *arg, PyObject **holder,
                        const char *what);
const char *dict_next_text(PyObject *dict, Py_ssize_t *pos, PyObject **k, PyObject **v);
int convert_value(PyObject *v, dftrace_arg_t *out);
const char *key_utf8(PyObject *key, PyObject **holder);
void args_add(arg_list *a, PyObject *key, PyObject *value);
void args_add_dict(arg_list *a, PyObject *dict);
int enable_of(PyObject *o);
PyObject *node_enter(NodeObject *self, PyObject *unused);
PyObject *node_exit(NodeObject *self, PyObject *const *argv, Py_ssize_t n);
PyObject *node_start(NodeObject *self, PyObject *const *argv, Py_ssize_t nargsf, PyObject *kwnames);
PyObject *node_stop(NodeObject *self, PyObject *const *argv, Py_ssize_t nargsf, PyObject *kwnames);
PyObject *mod_after_fork_child(PyObject *m, PyObject *u);
PyObject *traced_vectorcall(PyObject *self_, PyObject *const *argv, size_t nargsf,
                            PyObject *kwnames);
PyObject *traced_capture_vectorcall(PyObject *self_, PyObject *const *argv, size_t nargsf,
                                    PyObject *kwnames);
dftrace_region_t region_of(PyObject *o);
int add_slot(const char *name, int is_exit);
PyObject *mod_open_depth(PyObject *m, PyObject *u);
PyObject *mod_watch_windows(PyObject *m, PyObject *fn); /* window.c */
PyObject *mod_window_changes(PyObject *m, PyObject *u);
PyObject *mod_attach_wants(PyObject *m, PyObject *category);
/* exit_hooks.c */
PyObject *mod_set_previous_excepthook(PyObject *m, PyObject *hook);
PyObject *mod_excepthook(PyObject *m, PyObject *const *argv, Py_ssize_t n);
PyObject *mod_finalize_after_keyboard_interrupt(PyObject *m, PyObject *u);
void materialize_slow(NodeObject *self); /* converts the pending per-use arguments (once) */

/* Whether a use with this override would begin a region now (the cheap check first). */
static inline int use_wanted(const dftrace_node_t *n, int enable) {
  return enable < 0 ? dftrace_node_active_fast(n) : enable > 0;
}

static inline void materialize(NodeObject *self) {
  if (self->pending_kw) materialize_slow(self);
}

/* Begins a region for this use when it records now (the cheap check first). */
static inline dftrace_region_t node_region_begin(NodeObject *self) {
  if (!use_wanted(self->node, self->enable)) return 0;
  materialize(self);
  return dftrace_region_begin_ex(self->node, self->enable, self->args.v, (size_t)self->args.n);
}

/* Ends (dftrace_region_end) or drops (dftrace_region_cancel) a region passed back from
 * Python; inline, so that the call through `close` is a direct one. */
static inline PyObject *region_close(PyObject *region, void (*close)(dftrace_region_t)) {
  const dftrace_region_t r = region_of(region);
  if (r) close(r);
  Py_RETURN_NONE;
}

#endif
