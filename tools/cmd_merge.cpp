// cmd_merge.cpp: dftrace merge: one trace from many per-process files, ordered by ts, with
// metadata de-duplicated, hashes defined up front, ids unique and clocks aligned.
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <queue>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "base/format.hpp"
#include "common.hpp"

namespace dftrace::tools {

namespace {

// The clock alignment contract with the MPI layer: M lines
// {"name":"PR",...,"args":{...,"name":"clock_offset_ns","value":<int64>}} give what to add to
// this file's timestamps to put them on rank 0's clock.
bool clock_offset_of(const loaded_trace &t, int64_t *ns) {
  parsed_line pl;
  for (const auto &rec : t.lines) {
    if (!rec.is_meta) continue;
    const std::string_view line = rec.view();
    if (line.find("clock_offset_ns") == std::string_view::npos) continue;
    if (!detail::parse_line(line, pl) || pl.name.text != "PR") continue;
    const jvalue *n = pl.arg_value("name");
    const jvalue *v = pl.arg_value("value");
    if (!n || !v || n->type != jtype::string || n->text != "clock_offset_ns") continue;
    int64_t x = 0;
    if (detail::value_i64(*v, &x)) {
      *ns = x;
      return true;
    }
  }
  return false;
}

// The largest clock offset merge applies: 10^18 ns, about 31 years between two nodes'
// monotonic clocks. Offsets are input; anything beyond is reported and not applied.
constexpr int64_t k_max_offset_ns = 1000000000000000000;

// ts + shift, clamped to [0, UINT64_MAX].
uint64_t shift_ts(uint64_t ts, int64_t shift) {
  if (shift >= 0) {
    const uint64_t s = static_cast<uint64_t>(shift);
    return ts > UINT64_MAX - s ? UINT64_MAX : ts + s;
  }
  const uint64_t s = static_cast<uint64_t>(-(shift + 1)) + 1;
  return ts < s ? 0 : ts - s;
}

bool is_hash_def(const parsed_line &pl) {
  return detail::phase(pl) == 'M' &&
         (pl.name.text == "HH" || pl.name.text == "SH" || pl.name.text == "FH");
}

// Lines whose id or p_idx was too large to remap (id * nfiles + file passes 2^64 - 1): they
// keep their value, and merge says so.
uint64_t g_unmappable = 0;

// Appends line with the id, p_idx and ts values replaced as needed to out (shift in ns; the ts
// is written back in the file's unit, an old trace's microsecond fraction kept exact).
void rewrite(const line_rec &rec, bool remap, uint64_t nfiles, int64_t shift, time_unit unit,
             std::string &out) {
  struct edit {
    uint32_t off, len;
    int kind;  // 0 id, 1 p_idx, 2 ts
  };
  edit e[3];
  int n = 0;
  if (remap && rec.id_len) e[n++] = {rec.id_off, rec.id_len, 0};
  if (remap && rec.pidx_len) e[n++] = {rec.pidx_off, rec.pidx_len, 1};
  if (shift && rec.ts_len) e[n++] = {rec.ts_off, rec.ts_len, 2};
  for (int i = 1; i < n; ++i)  // at most three edits: insertion sort by position
    for (int j = i; j > 0 && e[j].off < e[j - 1].off; --j) std::swap(e[j], e[j - 1]);
  uint32_t pos = 0;
  char num[32];
  for (int i = 0; i < n; ++i) {
    out.append(rec.p + pos, e[i].off - pos);
    const std::string_view old(rec.p + e[i].off, e[i].len);
    if (e[i].kind == 2) {
      const uint64_t ts = shift_ts(rec.ts, shift);
      if (unit == time_unit::ns) {
        out.append(num, static_cast<size_t>(detail::write_u64(num, ts) - num));
      } else if (old.find('.') != std::string_view::npos) {
        out += us_text(ts);
      } else {
        out.append(num, static_cast<size_t>(detail::write_u64(num, ts / 1000) - num));
      }
    } else {
      // The text was read by value_i64 (digits, at most INT64_MAX); ids are input, so the
      // product is checked.
      uint64_t v = 0;
      for (char c : old) v = v * 10 + static_cast<uint64_t>(c - '0');
      if (__builtin_mul_overflow(v, nfiles, &v) || __builtin_add_overflow(v, rec.file, &v)) {
        ++g_unmappable;
        out.append(old);
      } else {
        out.append(num, static_cast<size_t>(detail::write_u64(num, v) - num));
      }
    }
    pos = e[i].off + e[i].len;
  }
  out.append(rec.p + pos, rec.len - pos);
}

}  // namespace

int cmd_merge(const args_t &a) {
  bool ok = true;
  const std::string out_path = a.output("merge", "OUT.pfw.gz");
  if (out_path.empty()) return 2;
  const std::vector<std::string> files = input_files(a, "merge", &ok);
  if (files.empty()) return 2;
  const bool align = !a.has("--no-clock-align");
  {
    // Writing over an input would pull the mapped text away under the merge.
    struct stat out_st {};
    if (stat(out_path.c_str(), &out_st) == 0) {
      for (const auto &f : files) {
        struct stat in_st {};
        if (stat(f.c_str(), &in_st) == 0 && in_st.st_dev == out_st.st_dev &&
            in_st.st_ino == out_st.st_ino) {
          error_line("merge: the output " + out_path + " is also an input");
          return 2;
        }
      }
    }
  }
  uint64_t total_in = 0;
  for (const auto &f : files) {
    FILE *fp = fopen(f.c_str(), "rb");
    if (fp) {
      fseek(fp, 0, SEEK_END);
      total_in += static_cast<uint64_t>(ftell(fp));
      fclose(fp);
    }
  }
  progress bar("merge", total_in);
  // DFTRACE_TOOL_TIMING=1: seconds per phase on stderr (for benchmarks).
  const bool timing = std::getenv("DFTRACE_TOOL_TIMING") != nullptr;
  double t_phase = now_seconds();
  auto phase = [&](const char *what) {
    if (!timing) return;
    const double t = now_seconds();
    fprintf(stderr, "merge: %s %.2f s\n", what, t - t_phase);
    t_phase = t;
  };
  std::vector<std::unique_ptr<loaded_trace>> traces;
  for (const auto &f : files) {
    auto t = std::make_unique<loaded_trace>();
    if (!load_trace(f, static_cast<uint32_t>(traces.size()), t.get(), &bar)) {
      ok = false;
      continue;
    }
    for (const auto &i : t->issues)
      if (i.error) ok = false;
    traces.push_back(std::move(t));
  }
  if (traces.empty()) {
    error_line("merge: nothing to merge");
    return 1;
  }
  phase("load");
  // One file holds one unit: inputs in microseconds and in nanoseconds are not mixed.
  for (const auto &t : traces) {
    if (t->unit == traces[0]->unit) continue;
    error_line("merge: " + traces[0]->path + " and " + t->path +
               " have different time units (time_metric us and ns); merge traces of one unit");
    return 2;
  }
  // Fix file indexes after skipped inputs.
  for (uint32_t i = 0; i < traces.size(); ++i)
    for (auto &rec : traces[i]->lines) rec.file = i;
  const uint64_t nfiles = traces.size();

  std::vector<int64_t> shift(nfiles, 0);
  if (align) {
    for (uint32_t i = 0; i < nfiles; ++i) {
      int64_t ns = 0;
      if (!clock_offset_of(*traces[i], &ns)) continue;
      if (ns > k_max_offset_ns || ns < -k_max_offset_ns) {
        error_line(traces[i]->path + ": clock_offset_ns " + std::to_string(ns) +
                   " is out of range (more than 10^18 ns); this file is not clock-aligned");
        ok = false;
        continue;
      }
      // A microsecond trace moves by whole microseconds (rounded half away from zero).
      shift[i] = traces[i]->unit == time_unit::ns ? ns : (ns + (ns < 0 ? -500 : 500)) / 1000 * 1000;
    }
  }

  parsed_line pl;
  // Metadata first: hash definitions (one per distinct type/string/value), then the other
  // metadata lines, without exact duplicates. Every hash is thus defined before any use.
  std::unordered_set<std::string> seen;
  std::vector<const line_rec *> meta;
  uint64_t meta_dups = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (auto &t : traces) {
      for (const auto &rec : t->lines) {
        if (!rec.is_meta) continue;
        if (!detail::parse_line(rec.view(), pl)) continue;
        const bool def = is_hash_def(pl);
        if (def != (pass == 0)) continue;
        std::string key;
        if (def) {
          const jvalue *n = pl.arg_value("name");
          const jvalue *v = pl.arg_value("value");
          key.append(pl.name.text).push_back('\x1f');
          if (n) key.append(n->text);
          key.push_back('\x1f');
          if (v) key.append(v->text);
        } else {
          // The line without its id: the same property of the same pid once.
          key.assign(rec.p, rec.id_len ? rec.id_off : 0);
          key.append(rec.p + rec.id_off + rec.id_len, rec.len - rec.id_off - rec.id_len);
        }
        if (!seen.insert(std::move(key)).second) {
          ++meta_dups;
          continue;
        }
        meta.push_back(&rec);
      }
    }
  }
  // The time unit's declarations first, where readers look for it (detail::header_time_unit).
  std::stable_partition(meta.begin(), meta.end(),
                        [](const line_rec *r) { return declares_unit(r->view()); });
  // Ids stay as they are unless two inputs share one among the lines written; then every
  // id (and p_idx) becomes id * nfiles + file index, which keeps them unique and the parent
  // links intact.
  bool remap = false;
  {
    // Ids are dense integers: an owner table over their range finds a shared id in one
    // linear pass. Very sparse ids fall back to sorting.
    uint64_t lo = UINT64_MAX, hi = 0, count = 0;
    auto each_id = [&](auto &&fn) {
      for (const line_rec *rec : meta)
        if (rec->has_id) fn(rec->id, rec->file);
      for (auto &t : traces)
        for (const auto &rec : t->lines)
          if (rec.has_id && !rec.is_meta && rec.has_ts) fn(rec.id, rec.file);
    };
    each_id([&](uint64_t id, uint32_t) {
      lo = std::min(lo, id);
      hi = std::max(hi, id);
      ++count;
    });
    if (count && hi - lo < std::max<uint64_t>(count * 8, 1u << 20)) {
      std::vector<uint32_t> owner(static_cast<size_t>(hi - lo + 1), UINT32_MAX);
      each_id([&](uint64_t id, uint32_t file) {
        uint32_t &o = owner[static_cast<size_t>(id - lo)];
        if (o != UINT32_MAX && o != file) remap = true;
        o = file;
      });
    } else if (count) {
      std::vector<std::pair<uint64_t, uint32_t>> ids;
      ids.reserve(static_cast<size_t>(count));
      each_id([&](uint64_t id, uint32_t file) { ids.emplace_back(id, file); });
      std::sort(ids.begin(), ids.end());
      for (size_t i = 1; i < ids.size() && !remap; ++i)
        if (ids[i].first == ids[i - 1].first && ids[i].second != ids[i - 1].second) remap = true;
    }
  }
  phase("metadata and ids");
  trace_writer w(out_path, tool_threads());
  if (!w.ok()) {
    error_line(w.error());
    return 1;
  }
  w.line("[", false, 0);
  for (const line_rec *rec : meta) {
    rewrite(*rec, remap, nfiles, 0, traces[rec->file]->unit, w.open_line());
    w.close_line(false, 0);
  }
  const uint64_t meta_out = meta.size();
  // Lines with a ts: each file sorted (stable: it is nearly sorted already), then a k-way
  // merge on (ts, file, position).
  std::vector<std::vector<const line_rec *>> runs(nfiles);
  std::vector<uint64_t> others_of(nfiles, 0);
  auto sort_run = [&](uint32_t i) {
    auto &run = runs[i];
    run.reserve(traces[i]->lines.size());
    for (const auto &rec : traces[i]->lines) {
      if (rec.is_meta) continue;
      if (!rec.has_ts) {
        ++others_of[i];
        continue;
      }
      run.push_back(&rec);
    }
    auto by_ts = [](const line_rec *x, const line_rec *y) { return x->ts < y->ts; };
    if (!std::is_sorted(run.begin(), run.end(), by_ts))
      std::stable_sort(run.begin(), run.end(), by_ts);
  };
  {
    // Files are sorted on all cores at once.
    std::atomic<uint32_t> next{0};
    std::vector<std::thread> pool;
    const int n = std::min<int>(tool_threads(), static_cast<int>(nfiles));
    for (int k = 0; k < n; ++k)
      pool.emplace_back([&] {
        for (uint32_t i; (i = next.fetch_add(1)) < nfiles;) sort_run(i);
      });
    for (auto &t : pool) t.join();
  }
  uint64_t others = 0;
  for (auto v : others_of) others += v;
  phase("sort");
  struct head {
    uint64_t ts;
    uint32_t file;
    size_t idx;
  };
  auto later = [](const head &x, const head &y) {
    if (x.ts != y.ts) return x.ts > y.ts;
    return x.file > y.file;
  };
  std::priority_queue<head, std::vector<head>, decltype(later)> heap(later);
  auto shifted = [&](const line_rec *r) { return shift_ts(r->ts, shift[r->file]); };
  for (uint32_t i = 0; i < nfiles; ++i)
    if (!runs[i].empty()) heap.push({shifted(runs[i][0]), i, 0});
  uint64_t events = 0;
  while (!heap.empty()) {
    const head h = heap.top();
    heap.pop();
    const line_rec *rec = runs[h.file][h.idx];
    if (!remap && shift[h.file] == 0) {
      w.line(rec->view(), true, h.ts);
    } else {
      rewrite(*rec, remap, nfiles, shift[h.file], traces[h.file]->unit, w.open_line());
      w.close_line(true, h.ts);
    }
    ++events;
    if (h.idx + 1 < runs[h.file].size())
      heap.push({shifted(runs[h.file][h.idx + 1]), h.file, h.idx + 1});
  }
  w.line("]", false, 0);
  if (!w.finish()) {
    error_line(w.error());
    return 1;
  }
  phase("merge and write");
  bar.done();
  if (g_unmappable) {
    error_line("merge: " + std::to_string(g_unmappable) +
               " ids or p_idx values are too large to remap (id * " + std::to_string(nfiles) +
               " + file index passes 2^64 - 1): they are kept as they were and may repeat");
    ok = false;
  }
  if (others)
    error_line("merge: dropped " + std::to_string(others) +
               " lines that are neither metadata nor carry a ts");
  std::string s =
      "merged " + std::to_string(traces.size()) + " file(s): " + std::to_string(events) +
      " events, " + std::to_string(meta_out) + " metadata lines (" + std::to_string(meta_dups) +
      " duplicates removed)" +
      (remap ? ", ids remapped (id * " + std::to_string(nfiles) + " + file index)" : "");
  int aligned = 0;
  for (auto v : shift) aligned += v != 0;
  if (aligned) s += ", " + std::to_string(aligned) + " file(s) clock-aligned";
  s += " -> " + out_path + "\n";
  fputs(s.c_str(), stderr);
  return ok ? 0 : 1;
}

}  // namespace dftrace::tools
