// _reader.cpp: dftrace._reader, the columns behind dftrace.read
// (bindings/python/ext/reader/README.md). Files are read by the C++ reader (src/reader: members
// inflated and lines parsed on a pool of threads); each block becomes columns of its own, which are
// appended in file order. Nothing here builds Python objects per line: the result is a few byte
// buffers and small dictionaries, which dftrace/_read.py turns into a pandas DataFrame.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <sys/mman.h>
#include <sys/stat.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../common/py_module.hpp"
#include "../common/py_strings.hpp"
#include "analysis/analyze.hpp"
#include "analysis/inputs.hpp"
#include "analysis/partial_codec.hpp"
#include "base/thread_group.hpp"
#include "columns.hpp"
#include "io_calls.hpp"
#include "plan.hpp"
#include "reader/aggregated.hpp"
#include "reader/json_string.hpp"
#include "reader/line_parser.hpp"
#include "reader/time_unit.hpp"
#include "reader/trace_reader.hpp"

namespace {

using namespace dftrace::pyreader;

// ---- to Python

// A result column as a Python object: it owns the column's mapping and exposes its first `len`
// bytes through the buffer protocol (numpy.frombuffer wraps them without a copy and keeps the
// object alive as long as the array).
struct column_buffer {
  PyObject_HEAD void *data;
  size_t bytes;  // of the mapping
  Py_ssize_t len;
};

PyObject *g_column_buffer_type = nullptr;

int column_buffer_get(PyObject *o, Py_buffer *view, int flags) {
  auto *c = reinterpret_cast<column_buffer *>(o);
  static char empty[1];
  return PyBuffer_FillInfo(view, o, c->data ? c->data : empty, c->len, 0, flags);
}

void column_buffer_dealloc(PyObject *o) {
  auto *c = reinterpret_cast<column_buffer *>(o);
  if (c->data) munmap(c->data, c->bytes);
  PyTypeObject *type = Py_TYPE(o);
  type->tp_free(o);
  Py_DECREF(type);
}

PyType_Slot column_buffer_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void *>(column_buffer_dealloc)},
    {Py_bf_getbuffer, reinterpret_cast<void *>(column_buffer_get)},
    {Py_tp_doc, const_cast<char *>("A column of dftrace._reader.read_columns (a byte buffer).")},
    {0, nullptr}};
PyType_Spec column_buffer_spec = {"dftrace._reader.column_buffer", sizeof(column_buffer), 0,
                                  Py_TPFLAGS_DEFAULT, column_buffer_slots};

// The first len bytes of m, m's memory handed over to Python.
PyObject *buffer_of(mapping &m, size_t len) {
  auto *c = PyObject_New(column_buffer, reinterpret_cast<PyTypeObject *>(g_column_buffer_type));
  if (!c) return nullptr;
  c->bytes = m.bytes();
  c->data = m.release();
  c->len = static_cast<Py_ssize_t>(len);
  return reinterpret_cast<PyObject *>(c);
}

template <typename T>
PyObject *buffer_of(column<T> &c) {
  return buffer_of(c.m, c.n * sizeof(T));
}

template <typename T>
PyObject *bytes_of(const std::vector<T> &v) {
  return PyBytes_FromStringAndSize(reinterpret_cast<const char *>(v.data()),
                                   static_cast<Py_ssize_t>(v.size() * sizeof(T)));
}

// A list of str of text(item) for each item (a field of a pair, say), without copying them.
template <typename Items, typename Text>
PyObject *list_of(const Items &v, Text text) {
  PyObject *l = PyList_New(static_cast<Py_ssize_t>(v.size()));
  if (!l) return nullptr;
  for (size_t k = 0; k < v.size(); ++k) {
    const auto &t = text(v[k]);
    PyObject *s =
        PyUnicode_DecodeUTF8(t.data(), static_cast<Py_ssize_t>(t.size()), "surrogateescape");
    if (!s) {
      Py_DECREF(l);
      return nullptr;
    }
    PyList_SET_ITEM(l, static_cast<Py_ssize_t>(k), s);
  }
  return l;
}

// A list of str of each string (decoded as UTF-8, invalid bytes escaped).
template <typename Strings>
PyObject *list_of(const Strings &v) {
  return list_of(
      v, [](const auto &x) -> const auto & { return x; });
}

// d[key] = value, stealing value; false (with an exception set) when value is null.
bool put(PyObject *d, const char *key, PyObject *value) {
  if (!value) return false;
  const int rc = PyDict_SetItemString(d, key, value);
  Py_DECREF(value);
  return rc == 0;
}

// A dict {int: int} as a map; false with an exception set when it is not one.
bool int_map(PyObject *d, std::unordered_map<int64_t, int64_t> *out) {
  if (!PyDict_Check(d)) {
    PyErr_SetString(PyExc_TypeError, "expected a dict of int to int");
    return false;
  }
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(d, &pos, &k, &v)) {
    const long long kk = PyLong_AsLongLong(k), vv = PyLong_AsLongLong(v);
    if (PyErr_Occurred()) return false;
    (*out)[kk] = vv;
  }
  return true;
}

// out[r] = map[x[r]] (def when absent), looked up once per run of equal values.
void map_ints(const int64_t *x, size_t n, const std::unordered_map<int64_t, int64_t> &map,
              int64_t def, int64_t *out) {
  int64_t last_key = 0, last_value = def;
  bool have = false;
  for (size_t r = 0; r < n; ++r) {
    if (!have || x[r] != last_key) {
      const auto it = map.find(x[r]);
      last_key = x[r];
      last_value = it == map.end() ? def : it->second;
      have = true;
    }
    out[r] = last_value;
  }
}

// The requested arguments as a list of dicts: {"hash": True, "s", "strings"} for hash
// references, {"hash": False, "kind", "v", "strings"} for the others.
PyObject *args_of(result &all, const what &w) {
  PyObject *args = PyList_New(0);
  for (size_t k = 0; args && k < all.args.size(); ++k) {
    result_arg &c = all.args[k];
    const bool hash = dftrace::detail::is_hash_ref_key(w.args[k]);
    PyObject *d = PyDict_New();
    const bool ok = d && put(d, "hash", PyBool_FromLong(hash)) &&
                    (hash ? put(d, "s", buffer_of(c.s))
                          : put(d, "kind", buffer_of(c.kind)) && put(d, "v", buffer_of(c.v))) &&
                    put(d, "strings", list_of(c.dict.values)) && PyList_Append(args, d) == 0;
    Py_XDECREF(d);
    if (!ok) Py_CLEAR(args);
  }
  return args;
}

// read_columns(paths, cats, names, start_ns, end_ns, args, threads[, parts, metadata_only,
// ranks, keys_only]) -> dict; ranks: {pid: rank} for the rank column (default: the read's PR
// lines); keys_only: no rows, only "arg_keys" (every argument key of the events)
// What read_columns is asked for: the files, the filter (what), each file's range of parts
// and the pid -> rank map given by the caller (dftrace.dask's first pass), if any.
struct request {
  std::vector<std::string> paths;
  what w;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::unordered_map<int64_t, int64_t> given_ranks;
  bool ranks_given = false;
  int threads = 0;
};

// read_columns' arguments into a request; false with a Python error set.
bool parse_request(PyObject *a, request *rq) {
  PyObject *paths_o, *cats_o, *names_o, *start_o, *end_o, *args_o, *parts_o = Py_None;
  PyObject *ranks_o = Py_None;
  int threads = 0, metadata_only = 0, keys_only = 0;
  if (!PyArg_ParseTuple(a, "OOOOOOi|OpOp", &paths_o, &cats_o, &names_o, &start_o, &end_o, &args_o,
                        &threads, &parts_o, &metadata_only, &ranks_o, &keys_only))
    return false;
  rq->threads = threads;
  rq->ranks_given = ranks_o != Py_None;
  std::unordered_map<int64_t, int64_t> &given_ranks = rq->given_ranks;
  std::vector<std::string> &paths = rq->paths;
  what &w = rq->w;
  // pid -> rank: given (dftrace.dask's first pass), or else from the read's own PR lines
  if (ranks_o != Py_None && !int_map(ranks_o, &given_ranks)) return false;
  using dftrace::python::strings_of;
  if (!strings_of(paths_o, &paths, "paths") || !strings_of(cats_o, &w.cat_list, "cat") ||
      !strings_of(names_o, &w.name_list, "name") || !strings_of(args_o, &w.args, "args"))
    return false;
  w.metadata_only = metadata_only != 0;
  w.keys_only = keys_only != 0;
  for (const auto &k : w.args) w.arg_sigs.push_back(sig_of(k));
  // parts: per path, None (all) or (first, last): the planned parts to read, inclusive.
  std::vector<std::pair<int64_t, int64_t>> &ranges = rq->ranges;
  ranges.assign(paths.size(), {0, INT64_MAX});
  if (parts_o != Py_None) {
    PyObject *fast = PySequence_Fast(parts_o, "parts must be a sequence");
    if (!fast) return false;
    const bool same = PySequence_Fast_GET_SIZE(fast) == static_cast<Py_ssize_t>(paths.size());
    for (Py_ssize_t k = 0; same && k < PySequence_Fast_GET_SIZE(fast); ++k) {
      PyObject *item = PySequence_Fast_GET_ITEM(fast, k);
      if (item == Py_None) continue;
      long long first = 0, last = 0;
      if (!PyArg_ParseTuple(item, "LL", &first, &last)) {
        Py_DECREF(fast);
        return false;
      }
      ranges[static_cast<size_t>(k)] = {first, last};
    }
    Py_DECREF(fast);
    if (!same) {
      PyErr_SetString(PyExc_ValueError, "parts must have one entry per path");
      return false;
    }
  }
  w.cats.insert(w.cat_list.begin(), w.cat_list.end());
  w.names.insert(w.name_list.begin(), w.name_list.end());
  if (start_o != Py_None) {
    w.has_start = true;
    w.start = PyLong_AsUnsignedLongLong(start_o);
  }
  if (end_o != Py_None) {
    w.has_end = true;
    w.end = PyLong_AsUnsignedLongLong(end_o);
  }
  w.check_dt = (w.has_start || w.has_end) && !w.metadata_only;
  return !PyErr_Occurred();
}

// One file's events appended to the read (`all`) as columns; what went wrong goes to
// `problems`, the file's time unit (or "" when it could not be opened) to `units`. Driven by
// read_file's own loop over the blocks, or by the analysis' (read_with_analysis: one pass over
// the files for both). Runs without the GIL.
class file_columns final : public dftrace::analysis::block_tap {
 public:
  // `all` null: each block's columns are kept in `blocks`, in order, for the caller to append.
  file_columns(const what &w, result *all, column_pool &pool, std::vector<std::string> &problems,
               std::vector<std::string> &units)
      : w_(w), all_(all), pool_(pool), problems_(problems), units_(units) {}

  std::vector<std::unique_ptr<columns>> blocks;

  // The parts to read (default: all), for the room reserved in begin().
  std::function<bool(const dftrace::detail::planned_part &)> keep;

  void unreadable(const std::string &path, const std::string &why) override {
    problems_.push_back(path + ": " + why);
    units_.emplace_back("");
  }

  void begin(const dftrace::detail::trace_file &tf) override {
    path_ = tf.path();
    for (const auto &i : tf.plan_issues())
      problems_.push_back(path_ + ": byte " + std::to_string(i.offset) + ": " + i.message);
    unit_ = dftrace::detail::header_time_unit(tf);
    units_.emplace_back(unit_ == time_unit::ns ? "ns" : "us");
    // The result's room for the file's members, from their DT line counts (metadata lines
    // included: a bound). Only a hint: at most a line per compressed byte (a DT field may
    // lie), untouched room costs no memory, and where it cannot be had the columns grow.
    uint64_t lines = 0;
    for (const auto &p : tf.parts())
      if (p.kind == dftrace::detail::planned_part::member && (!keep || keep(p)))
        lines += std::min<uint64_t>(p.dt.lines, p.length);
    try {
      if (all_ && !w_.metadata_only) all_->ints.reserve(all_->rows + static_cast<size_t>(lines));
    } catch (const std::bad_alloc &) {
    }
    outside_ = past_int64_ = 0;
  }

  void work(dftrace::detail::text_block &b) override { scan(b, w_, unit_, pool_); }

  void take(dftrace::detail::text_block &b,
            std::unique_ptr<dftrace::detail::block_result> r) override {
    for (const auto &i : b.issues)
      problems_.push_back(path_ + ": byte " + std::to_string(i.offset) + ": " + i.message);
    if (!r) return;
    std::unique_ptr<columns> c(static_cast<columns *>(r.release()));
    outside_ += c->outside_dt;
    past_int64_ += c->past_int64;
    if (!all_) {
      blocks.push_back(std::move(c));
      return;
    }
    all_->add(*c);
    pool_.give(std::move(c));
  }

  void end(const dftrace::detail::trace_file &) override {
    if (past_int64_)
      problems_.push_back(path_ + ": " + std::to_string(past_int64_) +
                          " event(s) whose ts or dur passes 2^63-1 ns (the int64 columns' "
                          "limit): held at 2^63-1, not exact");
    if (outside_)
      problems_.push_back(path_ + ": " + std::to_string(outside_) +
                          " events lie outside the time range of their member's DT field: a "
                          "time window may have skipped more of them in other members "
                          "(dftrace validate names the members)");
  }

 private:
  const what &w_;
  result *all_;
  column_pool &pool_;
  std::vector<std::string> &problems_, &units_;
  std::string path_;
  time_unit unit_ = time_unit::us;
  uint64_t outside_ = 0, past_int64_ = 0;
};

// One file's events appended to the read, its parts limited to `range` and to w's time window.
void read_file(const std::string &path, std::pair<int64_t, int64_t> range, const what &w,
               dftrace::detail::read_options &opt, file_columns &cols) {
  dftrace::detail::trace_file tf;
  std::string why;
  if (!tf.open(path, &why)) {
    cols.unreadable(path, why);
    return;
  }
  // Parts outside the requested range, and members outside the time window (their DT
  // times are epoch microseconds), are neither inflated nor parsed.
  const bool window = (w.has_start || w.has_end) && !w.metadata_only;
  opt.keep_part = [&w, &tf, range, window](const dftrace::detail::planned_part &p) {
    const int64_t index = &p - tf.parts().data();
    if (index < range.first || index > range.second) return false;
    if (!window || p.kind != dftrace::detail::planned_part::member) return true;
    // A member without times (a header of metadata) is read: its lines are checked to
    // hold no event (check_dt), as any member's to lie in its range.
    if (p.dt.ts_min == 0 && p.dt.ts_max == 0) return true;
    if (w.has_start && p.dt.ts_max * 1000 + 999 < w.start) return false;
    if (w.has_end && p.dt.ts_min * 1000 >= w.end) return false;
    return true;
  };
  cols.keep = opt.keep_part;
  cols.begin(tf);
  dftrace::detail::for_each_block(
      tf, opt, [&cols](dftrace::detail::text_block &b) { cols.work(b); },
      [&cols](dftrace::detail::text_block &b) { cols.take(b, std::move(b.result)); });
  cols.end(tf);
}

// The flight recorder's window lines as a list of (kind, pid, source, reason, time_ns, from_ns,
// to_ns, after) tuples (-1: a time the line lacks).
PyObject *windows_of(const std::vector<window_line> &v) {
  PyObject *l = PyList_New(static_cast<Py_ssize_t>(v.size()));
  for (size_t i = 0; l && i < v.size(); ++i) {
    const window_line &w = v[i];
    PyObject *t =
        Py_BuildValue("(s#Ls#s#LLLs#)", w.kind.data(), (Py_ssize_t)w.kind.size(), (long long)w.pid,
                      w.source.data(), (Py_ssize_t)w.source.size(), w.reason.data(),
                      (Py_ssize_t)w.reason.size(), (long long)w.time_ns, (long long)w.from_ns,
                      (long long)w.to_ns, w.after.data(), (Py_ssize_t)w.after.size());
    if (!t) {
      Py_DECREF(l);
      return nullptr;
    }
    PyList_SET_ITEM(l, static_cast<Py_ssize_t>(i), t);
  }
  return l;
}

// Whether a file is read on one worker, beside others: a small one (DFTracer writes a rank's
// trace as one gzip member of a few MiB, which one worker inflates while the others would wait
// for it). A larger file is shared by the workers, block by block, as a file of its own.
constexpr uint64_t k_side_by_side_bytes = 16u << 20;
bool small_file(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         static_cast<uint64_t>(st.st_size) <= k_side_by_side_bytes;
}

// Files [first, last) of the request read side by side, each whole on one of `threads` workers,
// and appended to `all` in file order by this thread. At most 2 x threads files are ahead of
// the one appended, so memory stays bounded by a few small files' columns.
// What one file's read gives when files are read side by side: its problems, its time unit
// ("" when it could not be opened) and its blocks' columns in order.
struct file_output {
  std::vector<std::string> problems, units;
  std::vector<std::unique_ptr<columns>> blocks;
  std::string failure;  // an exception (memory) on a worker, raised by the caller
  bool done = false;
};

void read_side_by_side(const request &rq, size_t first, size_t last, int threads, result &all,
                       column_pool &pool, std::vector<std::string> &problems,
                       std::vector<std::string> &units) {
  std::vector<file_output> outs(last - first);
  std::mutex mu;
  std::condition_variable cv;
  size_t next = 0, appended = 0;
  const size_t ahead = 2 * static_cast<size_t>(threads);
  auto read_one = [&](size_t k) {
    dftrace::detail::read_options opt;
    opt.threads = 1;
    try {
      file_columns cols(rq.w, nullptr, pool, outs[k].problems, outs[k].units);
      read_file(rq.paths[first + k], rq.ranges[first + k], rq.w, opt, cols);
      outs[k].blocks = std::move(cols.blocks);
    } catch (const std::exception &e) {
      outs[k].failure = e.what();
    }
  };
  auto worker = [&] {
    std::unique_lock<std::mutex> lk(mu);
    for (;;) {
      cv.wait(lk, [&] { return next >= outs.size() || next < appended + ahead; });
      if (next >= outs.size()) return;
      const size_t k = next++;
      lk.unlock();
      read_one(k);
      lk.lock();
      outs[k].done = true;
      cv.notify_all();
    }
  };
  // As many workers as the system gives (none: this thread reads each file in turn). On the
  // way out, an exception included, they take no further file and are joined.
  dftrace::detail::thread_group pool_threads([&] {
    std::lock_guard<std::mutex> lk(mu);
    next = outs.size();
    cv.notify_all();
  });
  for (int t = 0; t < threads; ++t)
    if (!pool_threads.start(worker)) break;
  const bool alone = pool_threads.size() == 0;
  std::string failure;
  for (size_t k = 0; k < outs.size(); ++k) {
    if (alone) {
      read_one(k);
    } else {
      std::unique_lock<std::mutex> lk(mu);
      cv.wait(lk, [&] { return outs[k].done; });
    }
    file_output &o = outs[k];
    try {
      if (failure.empty() && o.failure.empty()) {
        size_t rows = 0;
        for (auto &c : o.blocks) rows += c->rows;
        if (!rq.w.metadata_only) all.ints.reserve(all.rows + rows);
        for (auto &c : o.blocks) {
          all.add(*c);
          pool.give(std::move(c));
        }
      } else if (failure.empty()) {
        failure = o.failure;
      }
    } catch (const std::exception &e) {
      failure = e.what();
    }
    o.blocks.clear();
    for (auto &p : o.problems) problems.push_back(std::move(p));
    for (auto &u : o.units) units.push_back(std::move(u));
    std::lock_guard<std::mutex> lk(mu);
    appended = k + 1;
    cv.notify_all();
  }
  pool_threads.join();
  if (!failure.empty()) throw std::runtime_error(failure);
}

// Every file of the request, in order: runs of small files side by side, larger files one at
// a time with all the workers on each.
void read_all(const request &rq, int threads, result &all, column_pool &pool,
              std::vector<std::string> &problems, std::vector<std::string> &units) {
  dftrace::detail::read_options opt;
  opt.threads = threads;
  for (size_t f = 0; f < rq.paths.size();) {
    size_t run = f;
    if (threads > 1)
      while (run < rq.paths.size() && small_file(rq.paths[run])) ++run;
    if (run - f >= 2) {
      read_side_by_side(rq, f, run, threads, all, pool, problems, units);
      f = run;
      continue;
    }
    file_columns cols(rq.w, &all, pool, problems, units);
    read_file(rq.paths[f], rq.ranges[f], rq.w, opt, cols);
    ++f;
  }
}

// The read as the dict dftrace/_read.py builds its DataFrame from; nullptr with an error set.
PyObject *result_dict(result &all, const what &w, const std::vector<std::string> &problems,
                      const std::vector<std::string> &units) {
  PyObject *d = PyDict_New();
  if (!d) return nullptr;
  bool ok = put(d, "rows", PyLong_FromSize_t(all.rows)) && put(d, "name", buffer_of(all.name)) &&
            put(d, "names", list_of(all.names.values)) && put(d, "cat", buffer_of(all.cat)) &&
            put(d, "cats", list_of(all.cats.values)) && put(d, "ph", buffer_of(all.ph)) &&
            put(d, "phs", list_of(all.phs.values)) &&
            put(d, "ints_stride", PyLong_FromSize_t(all.ints.cap)) &&
            put(d, "ints", buffer_of(all.ints.m, k_int_rows * all.ints.cap * 8)) &&
            put(d, "invalid", PyLong_FromUnsignedLongLong(all.invalid)) &&
            put(d, "skipped", PyLong_FromUnsignedLongLong(all.skipped)) &&
            put(d, "outside_dt", PyLong_FromUnsignedLongLong(all.outside_dt)) &&
            put(d, "lines", PyLong_FromUnsignedLongLong(all.lines)) &&
            put(d, "problems", list_of(problems)) && put(d, "units", list_of(units)) &&
            put(d, "args", args_of(all, w));
  if (ok) {
    ok = put(d, "hash_values",
             list_of(
                 all.hashes, [](const auto &h) -> auto & { return h.first; })) &&
         put(d, "hash_strings",
             list_of(
                 all.hashes, [](const auto &h) -> auto & { return h.second; })) &&
         put(d, "hash_types", list_of(all.hash_types)) && put(d, "arg_keys", list_of(all.arg_keys));
  }
  if (ok) {
    std::vector<int64_t> rp, rr;
    for (auto &x : all.ranks) {
      rp.push_back(x.first);
      rr.push_back(x.second);
    }
    ok = put(d, "rank_pid", bytes_of(rp)) && put(d, "rank", bytes_of(rr));
  }
  if (ok) ok = put(d, "windows", windows_of(all.windows));
  if (!ok) {
    Py_DECREF(d);
    return nullptr;
  }
  return d;
}

PyObject *read_columns(PyObject *, PyObject *a) {
  request rq;
  if (!parse_request(a, &rq)) return nullptr;
  const what &w = rq.w;
  result all;
  all.args.resize(w.args.size());
  column_pool pool;
  std::vector<std::string> problems;
  std::vector<std::string> units;
  auto work = [&] {
    dftrace::detail::read_options opt;
    opt.threads = rq.threads > 0
                      ? rq.threads
                      : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    read_all(rq, opt.threads, all, pool, problems, units);
    if (all.ints.cap) {
      if (!rq.ranks_given) rq.given_ranks.insert(all.ranks.begin(), all.ranks.end());
      map_ints(all.ints.col(0), all.rows, rq.given_ranks, -1, all.ints.col(k_ints));
    }
  };
  // an exception of the reader (memory): raised as MemoryError
  if (!dftrace::python::without_gil(work, "dftrace.read: ")) return nullptr;
  return result_dict(all, w, problems, units);
}

// read_with_analysis(paths, args, threads, steps, layers, names=False) -> (dict, bytes, bytes):
// read_columns' dict of every event of the files (with the argument columns `args`) and the
// analysis partial of dftrace._analysis.partial(paths, steps, layers, threads), from one pass
// over the files: each block is inflated once, then scanned for all on the same worker; with
// names, each (cat, name)'s figures for dftrace._analysis.diff (else empty bytes).
PyObject *read_with_analysis(PyObject *, PyObject *a) {
  PyObject *paths_o, *args_o;
  int threads = 0, names_on = 0;
  const char *steps = nullptr, *layers = nullptr;
  if (!PyArg_ParseTuple(a, "OOizz|p", &paths_o, &args_o, &threads, &steps, &layers, &names_on))
    return nullptr;
  request rq;
  using dftrace::python::strings_of;
  if (!strings_of(paths_o, &rq.paths, "paths") || !strings_of(args_o, &rq.w.args, "args"))
    return nullptr;
  for (const auto &k : rq.w.args) rq.w.arg_sigs.push_back(sig_of(k));
  dftrace::analysis::layer_table table;
  std::string why;
  if (!table.configure(layers, steps, &why)) {
    PyErr_SetString(PyExc_ValueError, why.c_str());
    return nullptr;
  }
  table.set_name_stats(names_on != 0);
  const what &w = rq.w;
  result all;
  all.args.resize(w.args.size());
  column_pool pool;
  std::vector<std::string> problems, units;
  std::string partial, names;
  auto work = [&] {
    dftrace::detail::read_options opt;
    opt.threads =
        threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    file_columns cols(w, &all, pool, problems, units);
    dftrace::analysis::collection c;
    c.spill_after = dftrace::analysis::spill_budget();
    dftrace::analysis::input_report in;
    dftrace::analysis::read_traces(rq.paths, table, opt, &c, &in, {}, &cols);
    if (names_on) names = dftrace::analysis::encode_collected_names(c);  // before the analysis
    partial = dftrace::analysis::encode_partial(in, dftrace::analysis::analyze_groups(c, table));
    if (all.ints.cap)
      map_ints(all.ints.col(0), all.rows, {all.ranks.begin(), all.ranks.end()}, -1,
               all.ints.col(k_ints));
  };
  if (!dftrace::python::without_gil(work, "dftrace.read: ")) return nullptr;
  PyObject *d = result_dict(all, w, problems, units);
  if (!d) return nullptr;
  return Py_BuildValue("(Ny#y#)", d, partial.data(), static_cast<Py_ssize_t>(partial.size()),
                       names.data(), static_cast<Py_ssize_t>(names.size()));
}

PyMethodDef methods[] = {
    {"plan", dftrace_py_plan, METH_VARARGS, "plan(path) -> the file's parts from its DT fields"},
    {"read_columns", read_columns, METH_VARARGS,
     "read_columns(paths, cats, names, start_ns, end_ns, args, threads[, parts, metadata_only,"
     " ranks, keys_only])"
     " -> dict of columns"},
    {"read_with_analysis", read_with_analysis, METH_VARARGS,
     "read_with_analysis(paths, args, threads, steps, layers) -> (dict of columns, analysis "
     "partial): one pass over the files for dftrace.read and dftrace._analysis"},
    {"io_calls", dftrace_py_io_calls, METH_NOARGS,
     "io_calls() -> ((category, symbol, event, class, bytes), ...): the interposed I/O calls"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module_def = dftrace::python::module_def_of(
    "dftrace._reader", "The columns behind dftrace.read (the C++ trace reader).", methods);

}  // namespace

PyMODINIT_FUNC PyInit__reader(void) {
  if (!g_column_buffer_type) {
    g_column_buffer_type = PyType_FromSpec(&column_buffer_spec);
    if (!g_column_buffer_type) return nullptr;
  }
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return nullptr;
  Py_INCREF(g_column_buffer_type);
  if (PyModule_AddObject(m, "column_buffer", g_column_buffer_type) != 0) {
    Py_DECREF(g_column_buffer_type);
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
