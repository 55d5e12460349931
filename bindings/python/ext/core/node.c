/* node.c: the Node type: a handle on one core node, its uses, calls and properties. */
#include "ext.h"

/* ---------------------------------------------------------------- Node */

PyObject *g_async_wrapper; /* set by the package: wraps `async def` functions */

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
void materialize_slow(NodeObject *self) {
  PyObject *kw = self->pending_kw;
  self->pending_kw = NULL;
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  const char *key;
  while ((key = dict_next_text(kw, &pos, &k, &v))) {
    if (strcmp(key, "args") == 0)
      args_add_dict(&self->args, v);
    else if (is_arg_keyword(key))
      args_add(&self->args, k, v);
  }
  Py_DECREF(kw);
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

PyObject *g_update_wrapper;  /* functools.update_wrapper */
PyObject *g_capture_factory; /* set by the package: capture settings -> hooks */

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
    const char *key;
    while ((key = dict_next_text(kw, &pos, &k, &v))) {
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
dftrace_region_t region_of(PyObject *o) {
  const unsigned long long r = PyLong_AsUnsignedLongLong(o);
  if (r == (unsigned long long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    return 0;
  }
  return (dftrace_region_t)r;
}

static PyObject *node_end(NodeObject *self, PyObject *region) {
  (void)self;
  return region_close(region, dftrace_region_end);
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

PyTypeObject Node_Type = {
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
