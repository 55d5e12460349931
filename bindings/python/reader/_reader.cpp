// _reader.cpp: dftrace._reader, the columns behind dftrace.read (bindings/python/reader/README.md).
// Files are read by the C++ reader (src/reader: members inflated and lines parsed on a pool of
// threads); each block becomes columns of its own, which are appended in file order. Nothing
// here builds Python objects per line: the result is a few byte buffers and small
// dictionaries, which dftrace/_read.py turns into a pandas DataFrame.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "reader/line_parser.hpp"
#include "reader/time_unit.hpp"
#include "reader/trace_reader.hpp"

namespace {

using dftrace::detail::jtype;
using dftrace::detail::jvalue;
using dftrace::detail::parsed_line;
using dftrace::detail::time_unit;

// Strings as codes into a table of distinct values (names, categories, string arguments). The
// index is keyed by views of the stored strings (a deque keeps them in place), and the last
// string looked up is remembered: consecutive lines mostly repeat it. No allocation on a hit.
struct dictionary {
  std::deque<std::string> values;
  std::unordered_map<std::string_view, int32_t> index;
  std::string_view last;
  int32_t last_code = -1;
  int32_t code(std::string_view s) {
    if (last_code >= 0 && s == last) return last_code;
    auto it = index.find(s);
    int32_t c;
    if (it != index.end()) {
      c = it->second;
    } else {
      c = static_cast<int32_t>(values.size());
      values.emplace_back(s);
      index.emplace(values.back(), c);
    }
    last = values[static_cast<size_t>(c)];
    last_code = c;
    return c;
  }
};

// One requested argument: per row its kind and value (the kinds tell Python the dtype).
enum : uint8_t { k_missing = 0, k_int = 1, k_float = 2, k_text = 3 };
struct arg_column {
  std::vector<uint8_t> kind;
  std::vector<int64_t> i;
  std::vector<double> d;
  std::vector<int32_t> s;  // codes into the column's dictionary, -1 for none
  dictionary dict;
};

struct what {
  std::unordered_set<std::string> cats, names;
  bool has_start = false, has_end = false;
  uint64_t start = 0, end = 0;  // ns: events with start <= ts < end
  std::vector<std::string> args;
  bool metadata_only = false;  // only hash definitions and ranks (dftrace.dask's first pass)
};

// The columns of one block (or, once appended, of the whole read).
struct columns : dftrace::detail::block_result {
  std::vector<int32_t> name, cat, ph, file;
  std::vector<int64_t> pid, tid, id, level, p_idx;
  std::vector<uint64_t> ts, dur;
  dictionary names, cats, phs;
  std::vector<arg_column> args;
  // hash definitions (type, value text) -> string, and pid -> rank, from metadata lines
  std::vector<std::pair<std::string, std::string>> hashes;  // value text, string
  std::vector<std::string> hash_types;
  std::vector<std::pair<int64_t, int64_t>> ranks;
  uint64_t invalid = 0, skipped = 0, lines = 0;
};

int64_t int_or(const jvalue &v, int64_t def) {
  int64_t x = 0;
  return v.present() && dftrace::detail::value_i64(v, &x) ? x : def;
}

// An integer field whose text mostly repeats from line to line (pid, tid): parsed once per change.
struct cached_int {
  std::string_view text;
  int64_t value = -1;
  int64_t get(const jvalue &v) {
    if (v.text.data() && v.text == text && !text.empty()) return value;
    value = int_or(v, -1);
    text = v.text;
    return value;
  }
};

void scan(dftrace::detail::text_block &b, const what &w, time_unit unit) {
  auto r = std::make_unique<columns>();
  r->args.resize(w.args.size());
  const size_t guess = b.text.size() / 128 + 16;  // lines of a typical event's length
  for (auto *v : {&r->name, &r->cat, &r->ph}) v->reserve(guess);
  for (auto *v : {&r->pid, &r->tid, &r->id, &r->level, &r->p_idx}) v->reserve(guess);
  r->ts.reserve(guess);
  r->dur.reserve(guess);
  for (auto &c : r->args) {
    c.kind.reserve(guess);
    c.i.reserve(guess);
    c.d.reserve(guess);
    c.s.reserve(guess);
  }
  std::vector<const jvalue *> found(w.args.size());
  cached_int pid, tid;
  parsed_line pl;
  dftrace::detail::for_each_line(b.whole_lines(), [&](std::string_view line) {
    ++r->lines;
    size_t k = 0;
    while (k < line.size() && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r')) ++k;
    if (k == line.size() || line[k] == '[' || line[k] == ']') return true;
    if (w.metadata_only && line.find("\"ph\":\"M\"") == std::string_view::npos) return true;
    if (!dftrace::detail::parse_line(line, pl)) {
      ++r->invalid;
      return true;
    }
    const char ph = dftrace::detail::phase(pl);
    if (ph == 'M') {
      const std::string_view t = pl.name.text;
      const jvalue *n = pl.arg_value("name");
      const jvalue *v = pl.arg_value("value");
      if (n && v && (t == "HH" || t == "FH" || t == "SH") && n->type == jtype::string) {
        r->hashes.emplace_back(std::string(v->text), std::string(n->text));
        r->hash_types.emplace_back(t);
      } else if (n && v && t == "PR" && n->text == "rank") {
        r->ranks.emplace_back(int_or(pl.pid, -1), int_or(*v, -1));
      }
      return true;
    }
    uint64_t ts = 0, dur = 0;
    if (!pl.ts.present() || !dftrace::detail::value_ns(pl.ts, unit, &ts)) {
      ++r->skipped;  // not an event with a time
      return true;
    }
    if ((w.has_start && ts < w.start) || (w.has_end && ts >= w.end)) return true;
    if (!w.cats.empty() && !w.cats.count(std::string(pl.cat.text))) return true;
    if (!w.names.empty() && !w.names.count(std::string(pl.name.text))) return true;
    if (pl.dur.present()) dftrace::detail::value_ns(pl.dur, unit, &dur);
    r->name.push_back(r->names.code(pl.name.text));
    r->cat.push_back(r->cats.code(pl.cat.text));
    r->ph.push_back(
        r->phs.code(pl.ph.type == jtype::string ? pl.ph.text : std::string_view(&ph, 1)));
    r->pid.push_back(pid.get(pl.pid));  // the text stays valid: the block outlives the scan
    r->tid.push_back(tid.get(pl.tid));
    r->id.push_back(int_or(pl.id, -1));
    r->ts.push_back(ts);
    r->dur.push_back(dur);
    // One pass over the arguments finds level, p_idx and the requested keys.
    const jvalue *lv = nullptr, *pi = nullptr;
    for (auto &f : found) f = nullptr;
    for (int k = 0; k < pl.nargs; ++k) {
      const std::string_view key = pl.args_kv[k].key;
      if (key == "level")
        lv = &pl.args_kv[k].value;
      else if (key == "p_idx")
        pi = &pl.args_kv[k].value;
      else
        for (size_t a = 0; a < w.args.size(); ++a)
          if (!found[a] && key == w.args[a]) found[a] = &pl.args_kv[k].value;
    }
    r->level.push_back(lv ? int_or(*lv, -1) : -1);
    r->p_idx.push_back(pi ? int_or(*pi, -1) : -1);
    for (size_t a = 0; a < w.args.size(); ++a) {
      arg_column &c = r->args[a];
      const jvalue *v = found[a];
      uint8_t kind = k_missing;
      int64_t iv = 0;
      double dv = 0;
      int32_t sv = -1;
      if (v && dftrace::detail::is_hash_ref_key(w.args[a]) &&
          (v->type == jtype::number || v->type == jtype::string)) {
        kind = k_text;  // hashes stay text: matched as written, never rounded
        sv = c.dict.code(v->text);
      } else if (v && v->type == jtype::number) {
        if (dftrace::detail::value_is_integer(*v) && dftrace::detail::value_i64(*v, &iv)) {
          kind = k_int;
        } else {
          kind = k_float;
          dv = std::strtod(std::string(v->text).c_str(), nullptr);
        }
      } else if (v && v->type == jtype::string) {
        kind = k_text;
        sv = c.dict.code(v->text);
      } else if (v && (v->type == jtype::object || v->type == jtype::array)) {
        kind = k_text;  // as JSON text
        sv = c.dict.code(v->text);
      } else if (v && (v->type == jtype::boolean)) {
        kind = k_int;
        iv = v->text == "true";
      }
      c.kind.push_back(kind);
      c.i.push_back(iv);
      c.d.push_back(dv);
      c.s.push_back(sv);
    }
    return true;
  });
  b.result = std::move(r);
}

// Rewrites a block's codes (into its own dictionary) as codes into the global dictionary.
void recode(std::vector<int32_t> &codes, const dictionary &local, dictionary &global) {
  std::vector<int32_t> map(local.values.size());
  for (size_t k = 0; k < local.values.size(); ++k) map[k] = global.code(local.values[k]);
  for (int32_t &c : codes) c = c < 0 ? -1 : map[static_cast<size_t>(c)];
}

// Every block of the read, in file order, its codes rewritten into the global dictionaries;
// the columns are copied once, from the blocks straight into the Python buffers.
struct result {
  std::vector<std::unique_ptr<columns>> blocks;
  std::vector<int32_t> block_file;
  dictionary names, cats, phs;
  std::vector<dictionary> arg_dicts;
  std::vector<std::pair<std::string, std::string>> hashes;
  std::vector<std::string> hash_types;
  std::vector<std::pair<int64_t, int64_t>> ranks;
  uint64_t invalid = 0, skipped = 0, lines = 0;
  size_t rows = 0;

  void add(std::unique_ptr<columns> b, int32_t file_index) {
    recode(b->name, b->names, names);
    recode(b->cat, b->cats, cats);
    recode(b->ph, b->phs, phs);
    for (size_t a = 0; a < arg_dicts.size(); ++a)
      recode(b->args[a].s, b->args[a].dict, arg_dicts[a]);
    for (size_t h = 0; h < b->hashes.size(); ++h) {
      hashes.push_back(std::move(b->hashes[h]));
      hash_types.push_back(std::move(b->hash_types[h]));
    }
    ranks.insert(ranks.end(), b->ranks.begin(), b->ranks.end());
    invalid += b->invalid;
    skipped += b->skipped;
    lines += b->lines;
    rows += b->ts.size();
    // What Python does not need is freed now (the dictionaries, the metadata).
    b->names = dictionary();
    b->cats = dictionary();
    b->phs = dictionary();
    b->hashes.clear();
    b->hash_types.clear();
    block_file.push_back(file_index);
    blocks.push_back(std::move(b));
  }
};

// ---- to Python

template <typename T>
PyObject *bytes_of(const std::vector<T> &v) {
  return PyBytes_FromStringAndSize(reinterpret_cast<const char *>(v.data()),
                                   static_cast<Py_ssize_t>(v.size() * sizeof(T)));
}

template <typename Strings>
PyObject *list_of(const Strings &v) {
  PyObject *l = PyList_New(static_cast<Py_ssize_t>(v.size()));
  if (!l) return nullptr;
  for (size_t k = 0; k < v.size(); ++k) {
    PyObject *s =
        PyUnicode_DecodeUTF8(v[k].data(), static_cast<Py_ssize_t>(v[k].size()), "surrogateescape");
    if (!s) {
      Py_DECREF(l);
      return nullptr;
    }
    PyList_SET_ITEM(l, static_cast<Py_ssize_t>(k), s);
  }
  return l;
}

// d[key] = value, stealing value; false (with an exception set) when value is null.
// A column of every block, one after the other, in a new bytes object.
template <typename T, typename Get>
PyObject *gather(const result &r, Get get) {
  PyObject *b = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(r.rows * sizeof(T)));
  if (!b) return nullptr;
  char *p = PyBytes_AS_STRING(b);
  for (const auto &blk : r.blocks) {
    const std::vector<T> &v = get(*blk);
    if (!v.empty()) std::memcpy(p, v.data(), v.size() * sizeof(T));
    p += v.size() * sizeof(T);
  }
  return b;
}

// The integer columns as one C-ordered (7, rows) int64 block, in this order: pid, tid, ts, dur,
// level, p_idx, id (pandas keeps it as one block, without copying it again).
PyObject *int_block(const result &r) {
  PyObject *b = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(7 * r.rows * 8));
  if (!b) return nullptr;
  char *p = PyBytes_AS_STRING(b);
  auto copy = [&](auto get) {
    for (const auto &blk : r.blocks) {
      const auto &v = get(*blk);
      if (!v.empty()) std::memcpy(p, v.data(), v.size() * 8);
      p += v.size() * 8;
    }
  };
  copy([](const columns &c) -> const std::vector<int64_t> & { return c.pid; });
  copy([](const columns &c) -> const std::vector<int64_t> & { return c.tid; });
  copy([](const columns &c) -> const std::vector<uint64_t> & { return c.ts; });
  copy([](const columns &c) -> const std::vector<uint64_t> & { return c.dur; });
  copy([](const columns &c) -> const std::vector<int64_t> & { return c.level; });
  copy([](const columns &c) -> const std::vector<int64_t> & { return c.p_idx; });
  copy([](const columns &c) -> const std::vector<int64_t> & { return c.id; });
  return b;
}

// The file index of every row.
PyObject *file_column(const result &r) {
  PyObject *b = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(r.rows * 4));
  if (!b) return nullptr;
  int32_t *p = reinterpret_cast<int32_t *>(PyBytes_AS_STRING(b));
  for (size_t k = 0; k < r.blocks.size(); ++k)
    p = std::fill_n(p, r.blocks[k]->ts.size(), r.block_file[k]);
  return b;
}

bool put(PyObject *d, const char *key, PyObject *value) {
  if (!value) return false;
  const int rc = PyDict_SetItemString(d, key, value);
  Py_DECREF(value);
  return rc == 0;
}

bool strings_of(PyObject *seq, std::vector<std::string> *out) {
  if (seq == Py_None) return true;
  PyObject *fast = PySequence_Fast(seq, "expected a sequence of strings");
  if (!fast) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  for (Py_ssize_t k = 0; k < n; ++k) {
    PyObject *item = PySequence_Fast_GET_ITEM(fast, k);
    Py_ssize_t len = 0;
    const char *s = PyUnicode_Check(item) ? PyUnicode_AsUTF8AndSize(item, &len) : nullptr;
    if (!s) {
      Py_DECREF(fast);
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "expected a sequence of strings");
      return false;
    }
    out->emplace_back(s, static_cast<size_t>(len));
  }
  Py_DECREF(fast);
  return true;
}

// read_columns(paths, cats, names, start_ns, end_ns, args, threads) -> dict
PyObject *read_columns(PyObject *, PyObject *a) {
  PyObject *paths_o, *cats_o, *names_o, *start_o, *end_o, *args_o, *parts_o = Py_None;
  int threads = 0, metadata_only = 0;
  if (!PyArg_ParseTuple(a, "OOOOOOi|Op", &paths_o, &cats_o, &names_o, &start_o, &end_o, &args_o,
                        &threads, &parts_o, &metadata_only))
    return nullptr;
  std::vector<std::string> paths, cats, names;
  what w;
  if (!strings_of(paths_o, &paths) || !strings_of(cats_o, &cats) || !strings_of(names_o, &names) ||
      !strings_of(args_o, &w.args))
    return nullptr;
  w.metadata_only = metadata_only != 0;
  // parts: per path, None (all) or (first, last): the planned parts to read, inclusive.
  std::vector<std::pair<int64_t, int64_t>> ranges(paths.size(), {0, INT64_MAX});
  if (parts_o != Py_None) {
    PyObject *fast = PySequence_Fast(parts_o, "parts must be a sequence");
    if (!fast) return nullptr;
    const bool same = PySequence_Fast_GET_SIZE(fast) == static_cast<Py_ssize_t>(paths.size());
    for (Py_ssize_t k = 0; same && k < PySequence_Fast_GET_SIZE(fast); ++k) {
      PyObject *item = PySequence_Fast_GET_ITEM(fast, k);
      if (item == Py_None) continue;
      long long first = 0, last = 0;
      if (!PyArg_ParseTuple(item, "LL", &first, &last)) {
        Py_DECREF(fast);
        return nullptr;
      }
      ranges[static_cast<size_t>(k)] = {first, last};
    }
    Py_DECREF(fast);
    if (!same) {
      PyErr_SetString(PyExc_ValueError, "parts must have one entry per path");
      return nullptr;
    }
  }
  w.cats.insert(cats.begin(), cats.end());
  w.names.insert(names.begin(), names.end());
  if (start_o != Py_None) {
    w.has_start = true;
    w.start = PyLong_AsUnsignedLongLong(start_o);
  }
  if (end_o != Py_None) {
    w.has_end = true;
    w.end = PyLong_AsUnsignedLongLong(end_o);
  }
  if (PyErr_Occurred()) return nullptr;

  result all;
  all.arg_dicts.resize(w.args.size());
  std::vector<std::string> problems;
  std::vector<std::string> units;
  std::string failure;  // an exception of the reader (memory): raised as MemoryError
  Py_BEGIN_ALLOW_THREADS;
  try {
    dftrace::detail::read_options opt;
    opt.threads =
        threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    for (size_t f = 0; f < paths.size(); ++f) {
      dftrace::detail::trace_file tf;
      std::string why;
      if (!tf.open(paths[f], &why)) {
        problems.push_back(paths[f] + ": " + why);
        units.emplace_back("");
        continue;
      }
      for (const auto &i : tf.plan_issues())
        problems.push_back(paths[f] + ": byte " + std::to_string(i.offset) + ": " + i.message);
      const time_unit unit = dftrace::detail::header_time_unit(tf);
      units.emplace_back(unit == time_unit::ns ? "ns" : "us");
      // Parts outside the requested range, and members outside the time window (their DT
      // times are epoch microseconds), are neither inflated nor parsed.
      const std::pair<int64_t, int64_t> range = ranges[f];
      const bool window = (w.has_start || w.has_end) && !w.metadata_only;
      opt.keep_part = [&w, &tf, range, window](const dftrace::detail::planned_part &p) {
        const int64_t index = &p - tf.parts().data();
        if (index < range.first || index > range.second) return false;
        if (!window || p.kind != dftrace::detail::planned_part::member) return true;
        if (p.dt.ts_min == 0 && p.dt.ts_max == 0) return false;
        if (w.has_start && p.dt.ts_max * 1000 + 999 < w.start) return false;
        if (w.has_end && p.dt.ts_min * 1000 >= w.end) return false;
        return true;
      };
      auto work = [&w, unit](dftrace::detail::text_block &b) { scan(b, w, unit); };
      dftrace::detail::for_each_block(tf, opt, work, [&](dftrace::detail::text_block &b) {
        for (const auto &i : b.issues)
          problems.push_back(paths[f] + ": byte " + std::to_string(i.offset) + ": " + i.message);
        if (b.result)
          all.add(std::unique_ptr<columns>(static_cast<columns *>(b.result.release())),
                  static_cast<int32_t>(f));
      });
    }
  } catch (const std::exception &e) {
    failure = e.what();
  }
  Py_END_ALLOW_THREADS;
  if (!failure.empty()) {
    PyErr_Format(PyExc_MemoryError, "dftrace.read: %s", failure.c_str());
    return nullptr;
  }

  PyObject *d = PyDict_New();
  if (!d) return nullptr;
  using I32 = const std::vector<int32_t> &;
  bool ok = put(d, "rows", PyLong_FromSize_t(all.rows)) &&
            put(d, "name", gather<int32_t>(all, [](const columns &c) -> I32 { return c.name; })) &&
            put(d, "names", list_of(all.names.values)) &&
            put(d, "cat", gather<int32_t>(all, [](const columns &c) -> I32 { return c.cat; })) &&
            put(d, "cats", list_of(all.cats.values)) &&
            put(d, "ph", gather<int32_t>(all, [](const columns &c) -> I32 { return c.ph; })) &&
            put(d, "phs", list_of(all.phs.values)) && put(d, "file", file_column(all)) &&
            put(d, "ints", int_block(all)) &&
            put(d, "invalid", PyLong_FromUnsignedLongLong(all.invalid)) &&
            put(d, "skipped", PyLong_FromUnsignedLongLong(all.skipped)) &&
            put(d, "lines", PyLong_FromUnsignedLongLong(all.lines)) &&
            put(d, "problems", list_of(problems)) && put(d, "units", list_of(units));
  if (ok) {
    std::vector<std::string> hv, hs;
    for (auto &h : all.hashes) {
      hv.push_back(h.first);
      hs.push_back(h.second);
    }
    ok = put(d, "hash_values", list_of(hv)) && put(d, "hash_strings", list_of(hs)) &&
         put(d, "hash_types", list_of(all.hash_types));
  }
  if (ok) {
    std::vector<int64_t> rp, rr;
    for (auto &x : all.ranks) {
      rp.push_back(x.first);
      rr.push_back(x.second);
    }
    ok = put(d, "rank_pid", bytes_of(rp)) && put(d, "rank", bytes_of(rr));
  }
  PyObject *args = ok ? PyList_New(0) : nullptr;
  ok = ok && args;
  for (size_t k = 0; ok && k < all.arg_dicts.size(); ++k) {
    PyObject *c = PyDict_New();
    auto col = [k](const columns &b) -> const arg_column & { return b.args[k]; };
    ok =
        c &&
        put(c, "kind",
            gather<uint8_t>(
                all,
                [&](const columns &b) -> const std::vector<uint8_t> & { return col(b).kind; })) &&
        put(c, "i",
            gather<int64_t>(
                all, [&](const columns &b) -> const std::vector<int64_t> & { return col(b).i; })) &&
        put(c, "d",
            gather<double>(
                all, [&](const columns &b) -> const std::vector<double> & { return col(b).d; })) &&
        put(c, "s", gather<int32_t>(all, [&](const columns &b) -> I32 { return col(b).s; })) &&
        put(c, "strings", list_of(all.arg_dicts[k].values)) && PyList_Append(args, c) == 0;
    Py_XDECREF(c);
  }
  if (ok)
    ok = put(d, "args", args);
  else
    Py_XDECREF(args);
  if (!ok) {
    Py_DECREF(d);
    return nullptr;
  }
  return d;
}

// plan(path) -> {"unit", "described", "parts": [(kind, lines, text_bytes, ts_min_us, ts_max_us)]}
// from the DT fields, without inflating (kind: "member", "plain" or "stream"; a stream's size
// is its compressed length, its lines and times unknown: 0).
PyObject *plan(PyObject *, PyObject *a) {
  const char *path = nullptr;
  if (!PyArg_ParseTuple(a, "s", &path)) return nullptr;
  dftrace::detail::trace_file tf;
  std::string why;
  if (!tf.open(path, &why)) {
    PyErr_Format(PyExc_OSError, "%s: %s", path, why.c_str());
    return nullptr;
  }
  const time_unit unit = dftrace::detail::header_time_unit(tf);
  PyObject *parts = PyList_New(0);
  if (!parts) return nullptr;
  for (const auto &p : tf.parts()) {
    const char *kind = p.kind == dftrace::detail::planned_part::member  ? "member"
                       : p.kind == dftrace::detail::planned_part::plain ? "plain"
                                                                        : "stream";
    const bool m = p.kind == dftrace::detail::planned_part::member;
    PyObject *t =
        Py_BuildValue("(sKKKK)", kind, static_cast<unsigned long long>(m ? p.dt.lines : 0),
                      static_cast<unsigned long long>(m ? p.dt.uncompressed_len : p.length),
                      static_cast<unsigned long long>(m ? p.dt.ts_min : 0),
                      static_cast<unsigned long long>(m ? p.dt.ts_max : 0));
    if (!t || PyList_Append(parts, t) != 0) {
      Py_XDECREF(t);
      Py_DECREF(parts);
      return nullptr;
    }
    Py_DECREF(t);
  }
  return Py_BuildValue("{s:s,s:O,s:N}", "unit", unit == time_unit::ns ? "ns" : "us", "described",
                       tf.fully_described() ? Py_True : Py_False, "parts", parts);
}

PyMethodDef methods[] = {
    {"plan", plan, METH_VARARGS, "plan(path) -> the file's parts from its DT fields"},
    {"read_columns", read_columns, METH_VARARGS,
     "read_columns(paths, cats, names, start_ns, end_ns, args, threads[, parts, metadata_only])"
     " -> dict of columns"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT,
                          "dftrace._reader",
                          "The columns behind dftrace.read (the C++ trace reader).",
                          -1,
                          methods,
                          nullptr,
                          nullptr,
                          nullptr,
                          nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__reader(void) { return PyModule_Create(&module_def); }
