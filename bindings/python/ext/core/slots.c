/* slots.c: __enter__ / __exit__ as cached bound callables. */
#include "ext.h"

typedef struct {
  PyObject_HEAD int is_exit;
} SlotObject;

/* ---------------------------------------------------------------- __enter__ / __exit__ */

/* `with node:` looks up __enter__ and __exit__ on every use; a method descriptor would
 * allocate a bound method each time. These descriptors hand out a bound callable cached on
 * the node instead (one allocation per node, not per use). */

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

PyTypeObject Bound_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dftrace._dftrace.BoundSlot",
    .tp_basicsize = sizeof(BoundObject),
    .tp_dealloc = (destructor)bound_dealloc,
    .tp_vectorcall_offset = offsetof(BoundObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_traverse = (traverseproc)bound_traverse,
    .tp_clear = (inquiry)bound_clear,
};

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

PyTypeObject Slot_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dftrace._dftrace.Slot",
    .tp_basicsize = sizeof(SlotObject),
    .tp_call = slot_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_descr_get = slot_descr_get,
};

int add_slot(const char *name, int is_exit) {
  SlotObject *d = PyObject_New(SlotObject, &Slot_Type);
  if (!d) return -1;
  d->is_exit = is_exit;
  const int rc = PyDict_SetItemString(Node_Type.tp_dict, name, (PyObject *)d);
  Py_DECREF(d);
  return rc;
}
