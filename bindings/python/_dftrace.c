/* _dftrace.c: the compiled part of dftrace's Python face: node handles, the decorator wrapper
 * and the iter wrapper, written with the CPython C API over the C ABI (dftrace.h) only.
 *
 * Why C and not pybind11: a traced call must cost a few hundred nanoseconds when recording
 * and a few tens when switched off; pybind11's dispatch alone costs more than that. The set-up
 * surface (building the tree, update, initialize) stays small and lives in Python. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dftrace/dftrace.h"

/* ---------------------------------------------------------------- diagnostics */

/* One clear line for the user; never an exception into traced code. */
static void warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("dftrace: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* Reports the pending Python error as a warning and clears it. */
static void warn_and_clear(const char *what) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  const char *msg = "?";
  PyObject *s = value ? PyObject_Str(value) : NULL;
  if (s) msg = PyUnicode_AsUTF8(s);
  if (!msg) {
    PyErr_Clear();
    msg = "?";
  }
  warn("%s: %s (ignored)", what, msg);
  Py_XDECREF(s);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
}

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

/* ---------------------------------------------------------------- argument lists */

/* Per-use arguments in the ABI's form; keys and string values are owned copies. */
typedef struct {
  dftrace_arg_t *v;
  Py_ssize_t n;
} arg_list;

static char *dup_str(const char *s, Py_ssize_t len) {
  char *d = PyMem_RawMalloc((size_t)len + 1);
  if (d) {
    memcpy(d, s, (size_t)len);
    d[len] = '\0';
  }
  return d;
}

static void args_free(arg_list *a) {
  for (Py_ssize_t i = 0; i < a->n; ++i) {
    PyMem_RawFree((void *)a->v[i].key);
    if (a->v[i].type == DFTRACE_ARG_STRING) PyMem_RawFree((void *)a->v[i].value.s);
  }
  PyMem_RawFree(a->v);
  a->v = NULL;
  a->n = 0;
}

static int args_copy(arg_list *dst, const arg_list *src) {
  dst->v = NULL;
  dst->n = 0;
  if (src->n == 0) return 0;
  dst->v = PyMem_RawCalloc((size_t)src->n, sizeof(dftrace_arg_t));
  if (!dst->v) return -1;
  for (Py_ssize_t i = 0; i < src->n; ++i) {
    dftrace_arg_t a = src->v[i];
    a.key = dup_str(src->v[i].key, (Py_ssize_t)strlen(src->v[i].key));
    if (a.type == DFTRACE_ARG_STRING) a.value.s = dup_str(a.value.s, (Py_ssize_t)strlen(a.value.s));
    dst->v[i] = a;
    dst->n = i + 1;
  }
  return 0;
}

static int is_numpy_scalar(PyObject *v) { return strncmp(Py_TYPE(v)->tp_name, "numpy.", 6) == 0; }

/* Converts a Python value to an ABI argument (key not set). numpy scalars become numbers,
 * other objects their str(). Returns 0, or -1 with a Python error set. */
static int convert_value(PyObject *v, dftrace_arg_t *out) {
  PyObject *item = NULL;
  if (is_numpy_scalar(v) && PyObject_HasAttrString(v, "item")) {
    item = PyObject_CallMethod(v, "item", NULL);
    if (!item) return -1;
    v = item;
  }
  int rc = 0;
  if (PyBool_Check(v)) {
    out->type = DFTRACE_ARG_BOOL;
    out->value.b = v == Py_True;
  } else if (PyLong_Check(v)) {
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow > 0) {
      /* Beyond int64: exact as unsigned 64-bit (hashes) when it fits, else a double. */
      unsigned long long u = PyLong_AsUnsignedLongLong(v);
      if (u == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        out->type = DFTRACE_ARG_DOUBLE;
        out->value.d = PyLong_AsDouble(v);
        if (out->value.d == -1.0 && PyErr_Occurred()) rc = -1;
      } else {
        out->type = DFTRACE_ARG_UINT;
        out->value.u = (uint64_t)u;
      }
    } else if (overflow < 0) {
      out->type = DFTRACE_ARG_DOUBLE;
      out->value.d = PyLong_AsDouble(v);
      if (out->value.d == -1.0 && PyErr_Occurred()) rc = -1;
    } else if (x == -1 && PyErr_Occurred()) {
      rc = -1;
    } else {
      out->type = DFTRACE_ARG_INT;
      out->value.i = (int64_t)x;
    }
  } else if (PyFloat_Check(v)) {
    out->type = DFTRACE_ARG_DOUBLE;
    out->value.d = PyFloat_AS_DOUBLE(v);
  } else {
    PyObject *s = PyUnicode_Check(v) ? (Py_INCREF(v), v) : PyObject_Str(v);
    if (!s) {
      rc = -1;
    } else {
      Py_ssize_t len = 0;
      const char *u = PyUnicode_AsUTF8AndSize(s, &len);
      if (!u) {
        rc = -1;
      } else {
        out->type = DFTRACE_ARG_STRING;
        out->value.s = dup_str(u, len);
        if (!out->value.s) {
          PyErr_NoMemory();
          rc = -1;
        }
      }
      Py_DECREF(s);
    }
  }
  Py_XDECREF(item);
  return rc;
}

static const char *key_utf8(PyObject *key, PyObject **holder) {
  *holder = PyUnicode_Check(key) ? (Py_INCREF(key), key) : PyObject_Str(key);
  return *holder ? PyUnicode_AsUTF8(*holder) : NULL;
}

/* Appends key=value to a list (replacing an earlier entry of the same key). A value that
 * can not be converted is reported and skipped. */
static void args_add(arg_list *a, PyObject *key, PyObject *value) {
  if (value == Py_None) return;
  PyObject *kh = NULL;
  const char *k = key_utf8(key, &kh);
  dftrace_arg_t arg;
  memset(&arg, 0, sizeof arg);
  if (!k || convert_value(value, &arg) < 0) {
    Py_XDECREF(kh);
    warn_and_clear("an argument could not be converted");
    return;
  }
  for (Py_ssize_t i = 0; i < a->n; ++i) {
    if (strcmp(a->v[i].key, k) == 0) {
      if (a->v[i].type == DFTRACE_ARG_STRING) PyMem_RawFree((void *)a->v[i].value.s);
      arg.key = a->v[i].key;
      a->v[i] = arg;
      Py_DECREF(kh);
      return;
    }
  }
  dftrace_arg_t *nv = PyMem_RawRealloc(a->v, (size_t)(a->n + 1) * sizeof(dftrace_arg_t));
  if (!nv) {
    if (arg.type == DFTRACE_ARG_STRING) PyMem_RawFree((void *)arg.value.s);
    Py_DECREF(kh);
    return;
  }
  a->v = nv;
  arg.key = dup_str(k, (Py_ssize_t)strlen(k));
  a->v[a->n++] = arg;
  Py_DECREF(kh);
}

/* Adds every entry of a mapping; anything but a dict (or None) is reported and ignored. */
static void args_add_dict(arg_list *a, PyObject *dict) {
  if (!dict || dict == Py_None) return;
  if (!PyDict_Check(dict)) {
    warn("args must be a dict, not %s (ignored)", Py_TYPE(dict)->tp_name);
    return;
  }
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(dict, &pos, &k, &v)) args_add(a, k, v);
}

/* None -> use the node's state, otherwise the truth of the value. */
static int enable_of(PyObject *o) {
  if (!o || o == Py_None) return DFTRACE_USE_NODE_STATE;
  int t = PyObject_IsTrue(o);
  if (t < 0) {
    PyErr_Clear();
    return DFTRACE_USE_NODE_STATE;
  }
  return t ? DFTRACE_FORCE_ON : DFTRACE_FORCE_OFF;
}

/* Whether a use with this override would begin a region now (the cheap check first). */
static inline int use_wanted(const dftrace_node_t *n, int enable) {
  return enable < 0 ? dftrace_node_active_fast(n) : enable > 0;
}

/* ---------------------------------------------------------------- Traced: the decorator */

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

static PyTypeObject Traced_Type;

static PyObject *traced_vectorcall(PyObject *self_, PyObject *const *argv, size_t nargsf,
                                   PyObject *kwnames) {
  TracedObject *self = (TracedObject *)self_;
  if (!use_wanted(self->node, self->enable))
    return PyObject_Vectorcall(self->func, argv, nargsf, kwnames);
  const dftrace_region_t r =
      dftrace_region_begin_ex(self->node, self->enable, self->args.v, (size_t)self->args.n);
  PyObject *res = PyObject_Vectorcall(self->func, argv, nargsf, kwnames);
  dftrace_region_end(r);
  return res;
}

/* The same for the first `left` recorded calls, with the chosen arguments and the return
 * value written as the event's arguments; a failing summary is reported and never raised. */
static PyObject *traced_capture_vectorcall(PyObject *self_, PyObject *const *argv, size_t nargsf,
                                           PyObject *kwnames) {
  TracedObject *self = (TracedObject *)self_;
  if (self->left <= 0) return traced_vectorcall(self_, argv, nargsf, kwnames);
  if (!use_wanted(self->node, self->enable))
    return PyObject_Vectorcall(self->func, argv, nargsf, kwnames);
  const dftrace_region_t r =
      dftrace_region_begin_ex(self->node, self->enable, self->args.v, (size_t)self->args.n);
  if (!r) return PyObject_Vectorcall(self->func, argv, nargsf, kwnames);
  --self->left;
  PyObject *region = PyLong_FromUnsignedLongLong(r);
  if (region && self->before) {
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    const Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    PyObject *small[9];
    PyObject **buf =
        total + 1 <= 9 ? small : PyMem_Malloc((size_t)(total + 1) * sizeof(PyObject *));
    if (buf) {
      buf[0] = region;
      if (total) memcpy(buf + 1, argv, (size_t)total * sizeof(PyObject *));
      PyObject *x = PyObject_Vectorcall(self->before, buf, nargs + 1, kwnames);
      if (!x) warn_and_clear("capture of the arguments");
      Py_XDECREF(x);
      if (buf != small) PyMem_Free(buf);
    }
  }
  PyObject *res = PyObject_Vectorcall(self->func, argv, nargsf, kwnames);
  if (res && region && self->after) {
    PyObject *x = PyObject_CallFunctionObjArgs(self->after, region, res, NULL);
    if (!x) warn_and_clear("capture of the result");
    Py_XDECREF(x);
  }
  Py_XDECREF(region);
  if (!region) PyErr_Clear();
  dftrace_region_end(r);
  return res;
}

#define TRACED_REFS(X) \
  X(self->func);       \
  X(self->dict);       \
  X(self->before);     \
  X(self->after);
GC_SLOTS(traced, TracedObject, TRACED_REFS)

static void traced_dealloc(TracedObject *self) {
  PyObject_GC_UnTrack(self);
  if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
  traced_clear(self);
  args_free(&self->args);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Functions are descriptors: a decorated method binds like the function it wraps. */
static PyObject *traced_descr_get(PyObject *self, PyObject *obj, PyObject *type) {
  (void)type;
  if (obj == NULL || obj == Py_None) return Py_NewRef(self);
  return PyMethod_New(self, obj);
}

static PyObject *traced_repr(TracedObject *self) {
  return PyUnicode_FromFormat("<dftrace traced %R on %s>", self->func,
                              dftrace_node_path(self->node));
}

/* Pickled by reference like the function it replaces (multiprocessing spawn targets). */
static PyObject *traced_reduce(TracedObject *self, PyObject *unused) {
  (void)unused;
  PyObject *q = self->dict ? PyDict_GetItemString(self->dict, "__qualname__") : NULL;
  if (!q)
    q = PyObject_GetAttrString(self->func, "__qualname__");
  else
    Py_INCREF(q);
  return q;
}

static PyObject *traced_get_node_path(TracedObject *self, void *closure) {
  (void)closure;
  return PyUnicode_FromString(dftrace_node_path(self->node));
}

static PyMethodDef traced_methods[] = {
    {"__reduce__", (PyCFunction)traced_reduce, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};

static PyGetSetDef traced_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {"_dftrace_node", (getter)traced_get_node_path, NULL, "path of the node this traces", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject Traced_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dftrace._dftrace.Traced",
    .tp_basicsize = sizeof(TracedObject),
    .tp_dealloc = (destructor)traced_dealloc,
    .tp_vectorcall_offset = offsetof(TracedObject, vectorcall),
    .tp_repr = (reprfunc)traced_repr,
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "A function traced by a dftrace node: one event per call.",
    .tp_traverse = (traverseproc)traced_traverse,
    .tp_clear = (inquiry)traced_clear,
    .tp_weaklistoffset = offsetof(TracedObject, weakrefs),
    .tp_methods = traced_methods,
    .tp_getset = traced_getset,
    .tp_descr_get = traced_descr_get,
    .tp_dictoffset = offsetof(TracedObject, dict),
};

/* ---------------------------------------------------------------- Iter: node.iter() */

typedef struct {
  PyObject_HEAD PyObject *it;
  dftrace_iter_t st;
  int done;
} IterObject;

static PyTypeObject Iter_Type;

static PyObject *iter_next(IterObject *self) {
  if (self->done) return NULL;
  dftrace_iter_fetch(&self->st);
  PyObject *item = Py_TYPE(self->it)->tp_iternext(self->it);
  if (!item) {
    /* exhausted or failed: close what is open; an error propagates unchanged */
    dftrace_iter_end(&self->st);
    self->done = 1;
    return NULL;
  }
  dftrace_iter_body(&self->st);
  return item;
}

#define ITER_REFS(X) X(self->it);
GC_SLOTS(iter, IterObject, ITER_REFS)

/* A loop left by break/return/exception drops the wrapper: its open block ends here. */
static void iter_dealloc(IterObject *self) {
  PyObject_GC_UnTrack(self);
  if (!self->done) dftrace_iter_end(&self->st);
  iter_clear(self);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *iter_close(IterObject *self, PyObject *unused) {
  (void)unused;
  if (!self->done) dftrace_iter_end(&self->st);
  self->done = 1;
  Py_RETURN_NONE;
}

static PyMethodDef iter_methods[] = {
    {"close", (PyCFunction)iter_close, METH_NOARGS, "Ends the loop's open events now."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject Iter_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dftrace._dftrace.Iter",
    .tp_basicsize = sizeof(IterObject),
    .tp_dealloc = (destructor)iter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "An iterable traced item by item: <n>.iter and <n>.block events.",
    .tp_traverse = (traverseproc)iter_traverse,
    .tp_clear = (inquiry)iter_clear,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)iter_next,
    .tp_methods = iter_methods,
};

/* ---------------------------------------------------------------- Node */

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

static PyTypeObject Node_Type;

/* The bound __enter__/__exit__ a node caches (see the Slot descriptor below). */
typedef struct {
  PyObject_HEAD vectorcallfunc vectorcall;
  NodeObject *node; /* strong, like a bound method's self: `with` keeps only this alive */
  int is_exit;
} BoundObject;

static PyObject *g_async_wrapper; /* set by the package: wraps `async def` functions */

static dftrace_node_t *resolve_path(const char *path) {
  dftrace_node_t *n = dftrace_node_find(path);
  if (n) return n;
  /* missing: create it segment by segment (category, then children) */
  char buf[1024];
  const size_t len = strlen(path);
  if (len == 0 || len >= sizeof buf) return NULL;
  memcpy(buf, path, len + 1);
  char *save = NULL;
  char *seg = strtok_r(buf, ".", &save);
  if (!seg) return NULL;
  n = dftrace_category(seg);
  while (n && (seg = strtok_r(NULL, ".", &save)) != NULL) n = dftrace_node_child(n, seg);
  return n;
}

static int node_init(NodeObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"path", "cat", "name", NULL};
  const char *path = NULL, *cat = NULL, *name = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|z$zz", kwlist, &path, &cat, &name)) return -1;
  dftrace_node_t *n = NULL;
  if (cat && *cat) {
    n = dftrace_category(cat);
    if (n && name && *name && strcmp(name, cat) != 0) n = dftrace_node_child(n, name);
  } else if (path) {
    n = resolve_path(path);
  } else {
    n = dftrace_node_root();
  }
  if (!n) {
    PyErr_Format(PyExc_ValueError, "dftrace: no such node: %s", path ? path : (name ? name : "?"));
    return -1;
  }
  self->node = n;
  self->enable = DFTRACE_USE_NODE_STATE;
  return 0;
}

/* A Python subclass's type and dict are visited by the subclass's own traverse. */
#define NODE_REFS(X)    \
  X(self->bound_enter); \
  X(self->bound_exit);  \
  X(self->pending_kw);  \
  X(self->capture);
GC_SLOTS(node, NodeObject, NODE_REFS)

static int is_arg_keyword(const char *key) {
  return strcmp(key, "epoch") == 0 || strcmp(key, "step") == 0 || strcmp(key, "image_idx") == 0 ||
         strcmp(key, "image_size") == 0;
}

/* Converts the pending per-use arguments (once). */
static void materialize_slow(NodeObject *self) {
  PyObject *kw = self->pending_kw;
  self->pending_kw = NULL;
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(kw, &pos, &k, &v)) {
    const char *key = PyUnicode_AsUTF8(k);
    if (!key) {
      PyErr_Clear();
      continue;
    }
    if (strcmp(key, "args") == 0)
      args_add_dict(&self->args, v);
    else if (is_arg_keyword(key))
      args_add(&self->args, k, v);
  }
  Py_DECREF(kw);
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

/* `with node:` and start()/stop() are called on shared objects: each use's region lives on the
 * core's stack of the calling thread, and __exit__/stop() ends the innermost open region of the
 * same node there (dftrace_node_stop). A use forced off begins nothing, so it ends nothing. */
static inline void use_begin(NodeObject *self) { (void)node_region_begin(self); }

static inline void use_end(NodeObject *self) {
  if (self->enable != DFTRACE_FORCE_OFF) (void)dftrace_node_stop(self->node);
}

/* For a Python subclass, subtype_dealloc calls this and then drops the type's reference. */
static void node_dealloc(NodeObject *self) {
  PyObject_GC_UnTrack(self);
  if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
  node_clear(self);
  args_free(&self->args);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A use of the same node with its own override and arguments: an object of the node's
 * class (so its methods work) without the node's attributes (children stay on the node). */
static NodeObject *node_use(NodeObject *base, int enable, arg_list *args) {
  PyTypeObject *tp = Py_TYPE(base);
  NodeObject *u = (NodeObject *)tp->tp_alloc(tp, 0);
  if (!u) {
    args_free(args);
    return NULL;
  }
  u->node = base->node;
  u->is_use = 1;
  u->enable = enable;
  u->args = *args;
  args->v = NULL;
  args->n = 0;
  return u;
}

static int is_coroutine_function(PyObject *fn) {
  if (PyFunction_Check(fn)) {
    PyCodeObject *code = (PyCodeObject *)PyFunction_GET_CODE(fn);
    return (code->co_flags & CO_COROUTINE) != 0;
  }
  return 0;
}

static PyObject *g_update_wrapper;  /* functools.update_wrapper */
static PyObject *g_capture_factory; /* set by the package: capture settings -> hooks */

/* Gives a new Traced the hooks of its use's capture settings: the factory (Python) checks the
 * names against fn's signature, reports bad ones once, and returns (before, after, first) or
 * None when there is nothing to capture. */
static void traced_set_capture(TracedObject *t, NodeObject *use, PyObject *fn) {
  if (!use->capture || !g_capture_factory) return;
  PyObject *h = PyObject_CallFunctionObjArgs(g_capture_factory, fn, use->capture, NULL);
  if (!h) {
    warn_and_clear("capture");
    return;
  }
  if (PyTuple_Check(h) && PyTuple_GET_SIZE(h) == 3) {
    PyObject *b = PyTuple_GET_ITEM(h, 0), *a = PyTuple_GET_ITEM(h, 1);
    const Py_ssize_t first = PyLong_AsSsize_t(PyTuple_GET_ITEM(h, 2));
    if (first == -1 && PyErr_Occurred()) {
      warn_and_clear("capture: first");
    } else if (first > 0) {
      t->before = b == Py_None ? NULL : Py_NewRef(b);
      t->after = a == Py_None ? NULL : Py_NewRef(a);
      t->left = first;
      t->vectorcall = traced_capture_vectorcall;
    }
  }
  Py_DECREF(h);
}

static PyObject *node_decorate(NodeObject *self, PyObject *fn) {
  if (g_async_wrapper && is_coroutine_function(fn))
    return PyObject_CallFunctionObjArgs(g_async_wrapper, (PyObject *)self, fn, NULL);
  materialize(self); /* a decorated call must not convert anything */
  TracedObject *t = PyObject_GC_New(TracedObject, &Traced_Type);
  if (!t) return NULL;
  t->vectorcall = traced_vectorcall;
  t->func = Py_NewRef(fn);
  t->node = self->node;
  t->enable = self->enable;
  t->dict = NULL;
  t->weakrefs = NULL;
  t->before = t->after = NULL;
  t->left = 0;
  if (args_copy(&t->args, &self->args) < 0) {
    t->args.v = NULL;
    t->args.n = 0;
  }
  PyObject_GC_Track(t);
  traced_set_capture(t, self, fn);
  /* __name__, __doc__, __wrapped__, ... as functools.wraps gives them */
  if (g_update_wrapper) {
    PyObject *r = PyObject_CallFunctionObjArgs(g_update_wrapper, (PyObject *)t, fn, NULL);
    if (!r) warn_and_clear("copying the function's attributes failed");
    Py_XDECREF(r);
  }
  return (PyObject *)t;
}

/* node(fn) decorates; node(enable=, args=, epoch=, step=, image_idx=, image_size=) returns a
 * use of the node with its own override and per-use arguments (never written into the node). */
static PyObject *node_call(NodeObject *self, PyObject *args, PyObject *kw) {
  PyObject *fn = NULL;
  const Py_ssize_t npos = PyTuple_GET_SIZE(args);
  if (npos > 1) {
    warn(
        "a node takes at most one positional argument (the function to trace); "
        "the extra ones are ignored");
    return Py_NewRef(self); /* still usable as a decorator or context manager */
  }
  if (npos == 1) fn = PyTuple_GET_ITEM(args, 0);
  int enable = self->enable;
  int has_args = 0;
  PyObject *cap[3] = {NULL, NULL, NULL}; /* capture=, result=, first= */
  if (kw) {
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kw, &pos, &k, &v)) {
      const char *key = PyUnicode_AsUTF8(k);
      if (!key) {
        PyErr_Clear();
        continue;
      }
      if (strcmp(key, "fn") == 0) {
        if (v != Py_None) fn = v;
      } else if (strcmp(key, "enable") == 0) {
        if (v != Py_None) enable = enable_of(v);
      } else if (strcmp(key, "args") == 0 || is_arg_keyword(key)) {
        has_args |= v != Py_None;
      } else if (strcmp(key, "capture") == 0) {
        cap[0] = v;
      } else if (strcmp(key, "result") == 0) {
        cap[1] = v;
      } else if (strcmp(key, "first") == 0) {
        cap[2] = v;
      } else {
        warn("unknown keyword '%s' for a node (ignored)", key);
      }
    }
  }
  materialize(self);
  arg_list extra = {NULL, 0};
  if (args_copy(&extra, &self->args) < 0) return PyErr_NoMemory();
  if (fn && !PyCallable_Check(fn)) {
    warn("cannot trace a %s: it is not callable (ignored)", Py_TYPE(fn)->tp_name);
    fn = NULL;
  }
  const int has_capture = cap[0] || cap[1] || cap[2];
  if (fn && enable == self->enable && !has_args && extra.n == 0 && !has_capture) {
    args_free(&extra);
    return node_decorate(self, fn);
  }
  NodeObject *u = node_use(self, enable, &extra);
  if (u && has_args) u->pending_kw = Py_NewRef(kw);
  if (u && has_capture) {
    u->capture = Py_BuildValue("(OOO)", cap[0] ? cap[0] : Py_None, cap[1] ? cap[1] : Py_None,
                               cap[2] ? cap[2] : Py_None);
    if (!u->capture) warn_and_clear("capture");
  } else if (u && self->capture) {
    u->capture = Py_NewRef(self->capture);
  }
  if (!u || !fn) return (PyObject *)u;
  PyObject *res = node_decorate(u, fn);
  Py_DECREF(u);
  return res;
}

static PyObject *node_enter(NodeObject *self, PyObject *unused) {
  (void)unused;
  use_begin(self);
  return Py_NewRef(self);
}

static PyObject *node_exit(NodeObject *self, PyObject *const *argv, Py_ssize_t n) {
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

static PyObject *node_start(NodeObject *self, PyObject *const *argv, Py_ssize_t nargsf,
                            PyObject *kwnames) {
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (metadata_flag(argv, nargs, kwnames)) {
    if (use_wanted(self->node, self->enable)) dftrace_node_mark_start(self->node);
  } else {
    use_begin(self);
  }
  Py_RETURN_NONE;
}

static PyObject *node_stop(NodeObject *self, PyObject *const *argv, Py_ssize_t nargsf,
                           PyObject *kwnames) {
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (metadata_flag(argv, nargs, kwnames)) {
    if (use_wanted(self->node, self->enable)) dftrace_node_mark_end(self->node);
  } else {
    use_end(self);
  }
  Py_RETURN_NONE;
}

static PyObject *node_iter(NodeObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {
      "iterator", "include_block", "include_iter", "iter_name", "block_name", "enable", NULL};
  PyObject *iterable, *enable = Py_None;
  int include_block = 1, include_iter = 1;
  const char *iter_name = NULL, *block_name = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$ppzzO", kwlist, &iterable, &include_block,
                                   &include_iter, &iter_name, &block_name, &enable))
    return NULL;
  PyObject *it = PyObject_GetIter(iterable);
  if (!it) return NULL; /* not iterable: the same TypeError the plain loop would raise */
  IterObject *w = PyObject_GC_New(IterObject, &Iter_Type);
  if (!w) {
    Py_DECREF(it);
    return NULL;
  }
  w->it = it;
  w->done = 0;
  const int en = enable == Py_None ? self->enable : enable_of(enable);
  uint32_t flags = 0;
  if (!include_iter) flags |= DFTRACE_ITER_NO_ITER;
  if (!include_block) flags |= DFTRACE_ITER_NO_BLOCK;
  dftrace_iter_begin(&w->st, self->node, flags, iter_name && *iter_name ? iter_name : NULL,
                     block_name && *block_name ? block_name : NULL, en);
  PyObject_GC_Track(w);
  return (PyObject *)w;
}

static PyObject *node_enable(NodeObject *self, PyObject *unused) {
  (void)unused;
  if (!self->node) Py_RETURN_NONE;
  dftrace_node_enable(self->node);
  Py_RETURN_NONE;
}

static PyObject *node_disable(NodeObject *self, PyObject *unused) {
  (void)unused;
  if (!self->node) Py_RETURN_NONE;
  dftrace_node_disable(self->node);
  Py_RETURN_NONE;
}

/* _update(key, value): sets (or with None removes) an argument on the node's subtree. */
static PyObject *node_update_one(NodeObject *self, PyObject *const *argv, Py_ssize_t n) {
  if (!self->node) Py_RETURN_NONE; /* a Node made without __init__ */
  if (n != 2) {
    warn("update needs a key and a value (ignored)");
    Py_RETURN_NONE;
  }
  PyObject *kh = NULL;
  const char *key = key_utf8(argv[0], &kh);
  if (!key) {
    warn_and_clear("update key");
    Py_RETURN_NONE;
  }
  if (argv[1] == Py_None) {
    dftrace_node_update_remove(self->node, key);
  } else {
    dftrace_arg_t a;
    memset(&a, 0, sizeof a);
    if (convert_value(argv[1], &a) < 0) {
      warn_and_clear("update value could not be converted");
    } else {
      switch (a.type) {
        case DFTRACE_ARG_INT: dftrace_node_update_int(self->node, key, a.value.i); break;
        case DFTRACE_ARG_DOUBLE: dftrace_node_update_double(self->node, key, a.value.d); break;
        case DFTRACE_ARG_BOOL: dftrace_node_update_bool(self->node, key, a.value.b); break;
        case DFTRACE_ARG_STRING:
          dftrace_node_update_string(self->node, key, a.value.s);
          PyMem_RawFree((void *)a.value.s);
          break;
        default: break;
      }
    }
  }
  Py_XDECREF(kh);
  Py_RETURN_NONE;
}

/* A new node under this one (dftrace_node_derive or dftrace_node_child), returned by path. */
static PyObject *node_make_path(NodeObject *self, PyObject *name,
                                dftrace_node_t *(*make)(dftrace_node_t *, const char *),
                                const char *what) {
  if (!self->node) {
    PyErr_SetString(PyExc_ValueError, "dftrace: this node was not initialised");
    return NULL;
  }
  const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
  if (!s || !*s) {
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "dftrace: %s needs a non-empty name", what);
    return NULL;
  }
  dftrace_node_t *n = make(self->node, s);
  if (!n) {
    PyErr_Format(PyExc_ValueError, "dftrace: %s failed", what);
    return NULL;
  }
  return PyUnicode_FromString(dftrace_node_path(n));
}

static PyObject *node_derive_path(NodeObject *self, PyObject *name) {
  return node_make_path(self, name, dftrace_node_derive, "derive");
}

static PyObject *node_child_path(NodeObject *self, PyObject *name) {
  return node_make_path(self, name, dftrace_node_child, "child");
}

/* _begin() -> region, _end(region): explicit regions for the async wrapper. */
static PyObject *node_begin(NodeObject *self, PyObject *unused) {
  (void)unused;
  return PyLong_FromUnsignedLongLong(node_region_begin(self));
}

/* A region passed back from Python: 0 (nothing) when it is not one. */
static dftrace_region_t region_of(PyObject *o) {
  const unsigned long long r = PyLong_AsUnsignedLongLong(o);
  if (r == (unsigned long long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    return 0;
  }
  return (dftrace_region_t)r;
}

static PyObject *node_end(NodeObject *self, PyObject *region) {
  (void)self;
  const dftrace_region_t r = region_of(region);
  if (r) dftrace_region_end(r);
  Py_RETURN_NONE;
}

/* _instant(args): an instant event named after the node. */
static PyObject *node_instant(NodeObject *self, PyObject *const *argv, Py_ssize_t n) {
  if (!use_wanted(self->node, self->enable)) Py_RETURN_NONE;
  materialize(self);
  arg_list a = {NULL, 0};
  if (args_copy(&a, &self->args) < 0) return PyErr_NoMemory();
  if (n > 0) args_add_dict(&a, argv[0]);
  dftrace_instant(self->node, a.v, (size_t)a.n);
  args_free(&a);
  Py_RETURN_NONE;
}

/* _complete(start_ns, end_ns, track, args=None): a complete event with explicit times
 * (now_ns() clock) on a track (a thread id), written from any thread: work that begins on one
 * thread and ends on another (a DDP bucket's reduction, ended on the backend's thread). */
static PyObject *node_complete(NodeObject *self, PyObject *const *argv, Py_ssize_t n) {
  if (n < 3 || n > 4) {
    warn("_complete needs a start, an end, a track and optional args (ignored)");
    Py_RETURN_NONE;
  }
  const unsigned long long start = PyLong_AsUnsignedLongLong(argv[0]);
  const unsigned long long end = PyLong_AsUnsignedLongLong(argv[1]);
  const long long track = PyLong_AsLongLong(argv[2]);
  if (PyErr_Occurred()) {
    warn_and_clear("_complete");
    Py_RETURN_NONE;
  }
  if (!use_wanted(self->node, self->enable)) Py_RETURN_NONE;
  materialize(self);
  arg_list a = {NULL, 0};
  if (args_copy(&a, &self->args) < 0) return PyErr_NoMemory();
  if (n > 3 && argv[3] != Py_None) args_add_dict(&a, argv[3]);
  dftrace_event_complete(self->node, (uint64_t)start, (uint64_t)end, (int64_t)track, a.v,
                         (size_t)a.n);
  args_free(&a);
  Py_RETURN_NONE;
}

/* _counter(series, value): a counter sample named after the node. */
static PyObject *node_counter(NodeObject *self, PyObject *const *argv, Py_ssize_t n) {
  if (n != 2) {
    warn("counter needs a series name and a value (ignored)");
    Py_RETURN_NONE;
  }
  if (!use_wanted(self->node, self->enable)) Py_RETURN_NONE;
  const char *series = PyUnicode_Check(argv[0]) ? PyUnicode_AsUTF8(argv[0]) : NULL;
  if (!series) {
    PyErr_Clear();
    warn("counter series must be a str (ignored)");
    Py_RETURN_NONE;
  }
  dftrace_arg_t a;
  memset(&a, 0, sizeof a);
  if (convert_value(argv[1], &a) < 0) {
    warn_and_clear("counter value");
    Py_RETURN_NONE;
  }
  if (a.type == DFTRACE_ARG_INT)
    dftrace_counter_int(self->node, series, a.value.i);
  else if (a.type == DFTRACE_ARG_DOUBLE)
    dftrace_counter_double(self->node, series, a.value.d);
  else if (a.type == DFTRACE_ARG_BOOL)
    dftrace_counter_int(self->node, series, a.value.b);
  else {
    PyMem_RawFree((void *)a.value.s);
    warn("counter value must be a number (ignored)");
  }
  Py_RETURN_NONE;
}

/* The node's read-only properties that are one C call: node_get_<name> returns <result>. */
#define NODE_GETTER(name, result)                               \
  static PyObject *node_get_##name(NodeObject *self, void *c) { \
    (void)c;                                                    \
    return result;                                              \
  }
NODE_GETTER(name, PyUnicode_FromString(dftrace_node_name(self->node)))
NODE_GETTER(cat, PyUnicode_FromString(dftrace_node_category(self->node)))
NODE_GETTER(path, PyUnicode_FromString(dftrace_node_path(self->node)))
NODE_GETTER(enabled, PyBool_FromLong(dftrace_node_is_enabled(self->node)))
#undef NODE_GETTER
static PyObject *node_get_use_args(NodeObject *self, void *c) {
  (void)c;
  materialize(self);
  PyObject *d = PyDict_New();
  for (Py_ssize_t i = 0; d && i < self->args.n; ++i) {
    const dftrace_arg_t *a = &self->args.v[i];
    PyObject *v = NULL;
    switch (a->type) {
      case DFTRACE_ARG_INT: v = PyLong_FromLongLong(a->value.i); break;
      case DFTRACE_ARG_DOUBLE: v = PyFloat_FromDouble(a->value.d); break;
      case DFTRACE_ARG_BOOL: v = PyBool_FromLong(a->value.b); break;
      default: v = PyUnicode_FromString(a->value.s); break;
    }
    if (!v || PyDict_SetItemString(d, a->key, v) < 0) Py_CLEAR(d);
    Py_XDECREF(v);
  }
  return d;
}
static PyObject *node_get_use_enable(NodeObject *self, void *c) {
  (void)c;
  if (self->enable < 0) Py_RETURN_NONE;
  return PyBool_FromLong(self->enable);
}

static PyObject *node_repr(NodeObject *self) {
  return PyUnicode_FromFormat("<dftrace node %s (name=%s, cat=%s)>", dftrace_node_path(self->node),
                              dftrace_node_name(self->node), dftrace_node_category(self->node));
}

static PyMethodDef node_methods[] = {
    {"start", (PyCFunction)(void (*)(void))node_start, METH_FASTCALL | METH_KEYWORDS,
     "start(metadata=False): begins a region (or writes a <n>.start metadata line)."},
    {"stop", (PyCFunction)(void (*)(void))node_stop, METH_FASTCALL | METH_KEYWORDS,
     "stop(metadata=False): ends the region start() began (or writes <n>.end)."},
    {"iter", (PyCFunction)(void (*)(void))node_iter, METH_VARARGS | METH_KEYWORDS,
     "iter(iterable, *, include_block=True, include_iter=True, iter_name=None, "
     "block_name=None, enable=None): traces each item."},
    {"enable", (PyCFunction)node_enable, METH_NOARGS, "Enables this node and its subtree."},
    {"disable", (PyCFunction)node_disable, METH_NOARGS, "Disables this node and its subtree."},
    {"_update", (PyCFunction)(void (*)(void))node_update_one, METH_FASTCALL, NULL},
    {"_derive_path", (PyCFunction)node_derive_path, METH_O, NULL},
    {"_child_path", (PyCFunction)node_child_path, METH_O, NULL},
    {"_begin", (PyCFunction)node_begin, METH_NOARGS, NULL},
    {"_end", (PyCFunction)node_end, METH_O, NULL},
    {"_instant", (PyCFunction)(void (*)(void))node_instant, METH_FASTCALL, NULL},
    {"_counter", (PyCFunction)(void (*)(void))node_counter, METH_FASTCALL, NULL},
    {"_complete", (PyCFunction)(void (*)(void))node_complete, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef node_getset[] = {
    {"name", (getter)node_get_name, NULL, "event name", NULL},
    {"cat", (getter)node_get_cat, NULL, "category", NULL},
    {"path", (getter)node_get_path, NULL, "dotted path from the root", NULL},
    {"enabled", (getter)node_get_enabled, NULL, "whether a region would be recorded now", NULL},
    {"use_args", (getter)node_get_use_args, NULL, "this use's own arguments", NULL},
    {"use_enable", (getter)node_get_use_enable, NULL, "this use's enable override", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject Node_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dftrace._dftrace.Node",
    .tp_basicsize = sizeof(NodeObject),
    .tp_dealloc = (destructor)node_dealloc,
    .tp_repr = (reprfunc)node_repr,
    .tp_call = (ternaryfunc)node_call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Node(path=None, *, cat=None, name=None): a handle on one node of the tree.",
    .tp_traverse = (traverseproc)node_traverse,
    .tp_clear = (inquiry)node_clear,
    .tp_weaklistoffset = offsetof(NodeObject, weakrefs),
    .tp_methods = node_methods,
    .tp_getset = node_getset,
    .tp_init = (initproc)node_init,
    .tp_new = PyType_GenericNew,
};

/* ---------------------------------------------------------------- __enter__ / __exit__ */

/* `with node:` looks up __enter__ and __exit__ on every use; a method descriptor would
 * allocate a bound method each time. These descriptors hand out a bound callable cached on
 * the node instead (one allocation per node, not per use). */

static PyTypeObject Bound_Type;

static PyObject *bound_vectorcall(PyObject *self_, PyObject *const *argv, size_t nargsf,
                                  PyObject *kwnames) {
  (void)argv;
  (void)nargsf;
  (void)kwnames;
  BoundObject *self = (BoundObject *)self_;
  if (self->is_exit) return node_exit(self->node, NULL, 0);
  return node_enter(self->node, NULL);
}

#define BOUND_REFS(X) X(self->node);
GC_SLOTS(bound, BoundObject, BOUND_REFS)

static void bound_dealloc(BoundObject *self) {
  PyObject_GC_UnTrack(self);
  bound_clear(self);
  PyObject_GC_Del(self);
}

static PyTypeObject Bound_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dftrace._dftrace.BoundSlot",
    .tp_basicsize = sizeof(BoundObject),
    .tp_dealloc = (destructor)bound_dealloc,
    .tp_vectorcall_offset = offsetof(BoundObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_traverse = (traverseproc)bound_traverse,
    .tp_clear = (inquiry)bound_clear,
};

typedef struct {
  PyObject_HEAD int is_exit;
} SlotObject;

static PyObject *bound_new(NodeObject *n, int is_exit) {
  BoundObject *b = PyObject_GC_New(BoundObject, &Bound_Type);
  if (!b) return NULL;
  b->vectorcall = bound_vectorcall;
  b->node = (NodeObject *)Py_NewRef(n);
  b->is_exit = is_exit;
  PyObject_GC_Track(b);
  return (PyObject *)b;
}

/* The tree's nodes live for the whole run: they keep their bound slots (a reference cycle
 * the collector can break when a user-made node goes). Temporary uses get fresh ones. */
static PyObject *slot_descr_get(PyObject *self, PyObject *obj, PyObject *type) {
  (void)type;
  if (obj == NULL || obj == Py_None || !PyObject_TypeCheck(obj, &Node_Type)) return Py_NewRef(self);
  NodeObject *n = (NodeObject *)obj;
  const int is_exit = ((SlotObject *)self)->is_exit;
  if (n->is_use) return bound_new(n, is_exit);
  PyObject **cache = is_exit ? &n->bound_exit : &n->bound_enter;
  if (!*cache && !(*cache = bound_new(n, is_exit))) return NULL;
  return Py_NewRef(*cache);
}

/* Called through the class (contextlib.ExitStack does `type(cm).__exit__(cm, ...)`). */
static PyObject *slot_call(PyObject *self, PyObject *args, PyObject *kw) {
  (void)kw;
  if (PyTuple_GET_SIZE(args) < 1 || !PyObject_TypeCheck(PyTuple_GET_ITEM(args, 0), &Node_Type)) {
    PyErr_SetString(PyExc_TypeError, "dftrace: __enter__/__exit__ need a node");
    return NULL;
  }
  NodeObject *n = (NodeObject *)PyTuple_GET_ITEM(args, 0);
  if (((SlotObject *)self)->is_exit) return node_exit(n, NULL, 0);
  return node_enter(n, NULL);
}

static PyTypeObject Slot_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dftrace._dftrace.Slot",
    .tp_basicsize = sizeof(SlotObject),
    .tp_call = slot_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_descr_get = slot_descr_get,
};

static int add_slot(const char *name, int is_exit) {
  SlotObject *d = PyObject_New(SlotObject, &Slot_Type);
  if (!d) return -1;
  d->is_exit = is_exit;
  const int rc = PyDict_SetItemString(Node_Type.tp_dict, name, (PyObject *)d);
  Py_DECREF(d);
  return rc;
}

/* ---------------------------------------------------------------- module functions */

static int tri(PyObject *o) { return (!o || o == Py_None) ? -1 : PyObject_IsTrue(o) > 0; }

static PyObject *mod_init(PyObject *m, PyObject *args, PyObject *kw) {
  (void)m;
  static char *kwlist[] = {"enable",      "output_prefix", "output_file", "config_file",
                           "exec_name",   "metadata",      "compression", "level",
                           "bind_atexit", "io_data_dir",   NULL};
  PyObject *enable = Py_None, *metadata = Py_None, *compression = Py_None, *atexit_ = Py_None;
  const char *prefix = NULL, *file = NULL, *config = NULL, *exec = NULL, *io_dirs = NULL;
  int level = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OzzzzOOiOz", kwlist, &enable, &prefix, &file,
                                   &config, &exec, &metadata, &compression, &level, &atexit_,
                                   &io_dirs))
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
/* 1 while a region is open on the calling thread (the core's stack), else 0. */
NOARGS_FUNCTION(open_depth, PyLong_FromLong(dftrace_region_current() != 0))
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
  const char *key = key_utf8(k, &kh);
  dftrace_arg_t a;
  memset(&a, 0, sizeof a);
  if (!key || convert_value(v, &a) < 0) {
    Py_XDECREF(kh);
    warn_and_clear(what);
    return -1;
  }
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
  const dftrace_region_t r = region_of(region);
  if (r) dftrace_region_cancel(r);
  Py_RETURN_NONE;
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

/* In a forked child: the parent's open uses end in the parent (the core drops them). */
static PyObject *mod_after_fork_child(PyObject *m, PyObject *u) {
  (void)m;
  (void)u;
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
    {"region_args", (PyCFunction)(void (*)(void))mod_region_args, METH_FASTCALL, NULL},
    {"trigger", (PyCFunction)(void (*)(void))mod_trigger, METH_FASTCALL,
     "A trigger of the flight recorder (output.mode: ring): 1 when taken."},
    {"_set_async_wrapper", mod_set_async_wrapper, METH_O, NULL},
    {"_set_capture_factory", mod_set_capture_factory, METH_O, NULL},
    {"_open_depth", mod_open_depth, METH_NOARGS, NULL},
    {"_after_fork_child", mod_after_fork_child, METH_NOARGS, NULL},
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
