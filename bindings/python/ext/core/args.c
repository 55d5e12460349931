/* args.c: diagnostics and per-use argument lists (Python values into the ABI's arguments). */
#include "ext.h"

/* ---------------------------------------------------------------- diagnostics */

/* One clear line for the user; never an exception into traced code. */
void warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("dftrace: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* Reports the pending Python error as a warning and clears it. */
void warn_and_clear(const char *what) {
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

/* ---------------------------------------------------------------- argument lists */

static char *dup_str(const char *s, Py_ssize_t len) {
  char *d = PyMem_RawMalloc((size_t)len + 1);
  if (d) {
    memcpy(d, s, (size_t)len);
    d[len] = '\0';
  }
  return d;
}

void args_free(arg_list *a) {
  for (Py_ssize_t i = 0; i < a->n; ++i) {
    PyMem_RawFree((void *)a->v[i].key);
    if (a->v[i].type == DFTRACE_ARG_STRING) PyMem_RawFree((void *)a->v[i].value.s);
  }
  PyMem_RawFree(a->v);
  a->v = NULL;
  a->n = 0;
}

int args_copy(arg_list *dst, const arg_list *src) {
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
int convert_value(PyObject *v, dftrace_arg_t *out) {
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

const char *key_utf8(PyObject *key, PyObject **holder) {
  *holder = PyUnicode_Check(key) ? (Py_INCREF(key), key) : PyObject_Str(key);
  return *holder ? PyUnicode_AsUTF8(*holder) : NULL;
}

/* key=value in the ABI's form: the key's text, kept alive by *holder (the caller drops it),
 * and the converted value in *arg (arg->key not set). Returns the key, or NULL with the
 * failure reported under `what` and *holder released. */
const char *arg_convert(PyObject *key, PyObject *value, dftrace_arg_t *arg, PyObject **holder,
                        const char *what) {
  const char *k = key_utf8(key, holder);
  memset(arg, 0, sizeof *arg);
  if (!k || convert_value(value, arg) < 0) {
    Py_CLEAR(*holder);
    warn_and_clear(what);
    return NULL;
  }
  return k;
}

/* The next entry of a dict whose key is text: its key as UTF-8 (NULL at the end), the key
 * object in *k and the value in *v (borrowed). Keys that are not text are skipped. */
const char *dict_next_text(PyObject *dict, Py_ssize_t *pos, PyObject **k, PyObject **v) {
  while (PyDict_Next(dict, pos, k, v)) {
    const char *key = PyUnicode_AsUTF8(*k);
    if (key) return key;
    PyErr_Clear();
  }
  return NULL;
}

/* Appends key=value to a list (replacing an earlier entry of the same key). A value that
 * can not be converted is reported and skipped. */
void args_add(arg_list *a, PyObject *key, PyObject *value) {
  if (value == Py_None) return;
  PyObject *kh = NULL;
  dftrace_arg_t arg;
  const char *k = arg_convert(key, value, &arg, &kh, "an argument could not be converted");
  if (!k) return;
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
void args_add_dict(arg_list *a, PyObject *dict) {
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
int enable_of(PyObject *o) {
  if (!o || o == Py_None) return DFTRACE_USE_NODE_STATE;
  int t = PyObject_IsTrue(o);
  if (t < 0) {
    PyErr_Clear();
    return DFTRACE_USE_NODE_STATE;
  }
  return t ? DFTRACE_FORCE_ON : DFTRACE_FORCE_OFF;
}
