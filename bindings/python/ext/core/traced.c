/* traced.c: the decorator wrapper (Traced) and the iter() wrapper (Iter). */
#include "ext.h"

/* ---------------------------------------------------------------- Traced: the decorator */

PyObject *traced_vectorcall(PyObject *self_, PyObject *const *argv, size_t nargsf,
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
PyObject *traced_capture_vectorcall(PyObject *self_, PyObject *const *argv, size_t nargsf,
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

PyTypeObject Traced_Type = {
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

PyTypeObject Iter_Type = {
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
