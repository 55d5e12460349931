// cmd_merge.cpp: dftrace merge: one trace from many per-process files, ordered by ts, with
// metadata de-duplicated, hashes defined up front, ids unique and clocks aligned.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <queue>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "args.hpp"
#include "base/format.hpp"
#include "commands.hpp"
#include "inputs.hpp"
#include "lines.hpp"
#include "output/member_stream.hpp"
#include "progress.hpp"
#include "sorted_runs.hpp"

namespace dftrace::tools {

namespace {

// One line of a trace, with the positions a rewrite needs (offsets into the line; 0-length when
// absent).
struct line_rec {
  const char *p = nullptr;
  uint32_t len = 0;
  uint32_t file = 0;
  uint64_t ts = 0;  // nanoseconds since the epoch
  uint32_t id_off = 0, id_len = 0;
  uint32_t ts_off = 0, ts_len = 0;
  uint32_t pidx_off = 0, pidx_len = 0;
  bool has_ts = false;
  bool is_meta = false;
  bool has_id = false;
  uint64_t id = 0;
};

// The clock alignment contract with the MPI layer: M lines
// {"name":"PR",...,"args":{...,"name":"clock_offset_ns","value":<int64>}} give what to add to
// this file's timestamps to put them on rank 0's clock.
bool clock_offset_of(std::string_view line, const parsed_line &pl, int64_t *ns) {
  if (line.find("clock_offset_ns") == std::string_view::npos || pl.name.text != "PR") return false;
  const jvalue *n = pl.arg_value("name");
  const jvalue *v = pl.arg_value("value");
  if (!n || !v || n->type != jtype::string || n->text != "clock_offset_ns") return false;
  return detail::value_i64(*v, ns);
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
std::atomic<uint64_t> g_unmappable{0};

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

// ---- the streaming merge (tools/README.md, "merge")

// A line of a file's metadata, kept as text (metadata is small beside the events).
struct meta_line {
  std::string text;
  uint32_t file;
  line_rec rec;  // offsets into text (rec.p is set when it is written)
};

// Pass 1, per block: metadata lines, the ids of events, counts.
struct scan_result : detail::block_result {
  std::vector<meta_line> meta;
  std::vector<uint64_t> ids;
  uint64_t others = 0, invalid = 0;
};

// The positions a rewrite needs, from a parsed line.
line_rec positions(std::string_view line, const parsed_line &pl, uint32_t file, time_unit unit) {
  line_rec rec;
  rec.p = line.data();
  rec.len = static_cast<uint32_t>(line.size());
  rec.file = file;
  const event_fields f = fields_of(pl, unit);
  rec.is_meta = f.ph == 'M';
  if (f.has_ts && !rec.is_meta) {
    rec.has_ts = true;
    rec.ts = f.ts;
    rec.ts_off = static_cast<uint32_t>(pl.ts.text.data() - line.data());
    rec.ts_len = static_cast<uint32_t>(pl.ts.text.size());
  }
  int64_t id = 0;
  if (pl.id.present() && detail::value_i64(pl.id, &id) && id >= 0) {
    rec.has_id = true;
    rec.id = static_cast<uint64_t>(id);
    rec.id_off = static_cast<uint32_t>(pl.id.text.data() - line.data());
    rec.id_len = static_cast<uint32_t>(pl.id.text.size());
  }
  if (const jvalue *pi = pl.arg_value("p_idx")) {
    int64_t v = 0;
    if (detail::value_i64(*pi, &v) && v >= 0) {
      rec.pidx_off = static_cast<uint32_t>(pi->text.data() - line.data());
      rec.pidx_len = static_cast<uint32_t>(pi->text.size());
    }
  }
  return rec;
}

// Ids seen, one bit each (ids are dense small integers in dftrace and DFTracer traces); an id
// beyond k_dense makes the set "sparse": merge then remaps without looking further.
struct id_bits {
  static constexpr uint64_t k_dense = 1ull << 34;
  std::vector<uint64_t> words;
  bool sparse = false;
  void add(uint64_t id) {
    if (id >= k_dense) {
      sparse = true;
      return;
    }
    const size_t w = static_cast<size_t>(id / 64);
    if (w >= words.size()) words.resize(std::max(w + 1, words.size() * 2), 0);
    words[w] |= 1ull << (id % 64);
  }
  // Adds o's ids; true when one of them was already here.
  bool merge_in(const id_bits &o) {
    bool shared = false;
    if (o.words.size() > words.size()) words.resize(o.words.size(), 0);
    for (size_t k = 0; k < o.words.size(); ++k) {
      shared = shared || (words[k] & o.words[k]) != 0;
      words[k] |= o.words[k];
    }
    sparse = sparse || o.sparse;
    return shared;
  }
};

// Pass 2, per block: the block's events, rewritten.
struct event_result : detail::block_result {
  std::string text;                                  // rewritten lines, back to back
  std::vector<std::pair<uint64_t, uint32_t>> lines;  // (ts ns, length) in order
};

// One input of the merge.
struct input {
  std::string path;
  std::unique_ptr<detail::trace_file> file;
  time_unit unit = time_unit::us;
  int64_t shift = 0;  // its clock offset, in ns
};

// What the phases of one merge share.
struct merge_job {
  std::string out_path;
  std::vector<std::string> files;
  bool ok = true;
  std::vector<input> inputs;
  std::vector<meta_line> all_meta;
  std::vector<meta_line *> meta;  // the metadata lines written, in order
  uint64_t meta_dups = 0;
  id_bits ids_all;
  bool ids_shared = false;
  bool remap = false;
  uint64_t others = 0, invalid = 0, events = 0;
  detail::read_options opt;
  std::unique_ptr<progress> bar;
  // DFTRACE_TOOL_TIMING=1: seconds per phase on stderr (for benchmarks).
  bool timing = std::getenv("DFTRACE_TOOL_TIMING") != nullptr;
  double t_phase = now_seconds();
  void phase(const char *what) {
    if (!timing) return;
    const double t = now_seconds();
    fprintf(stderr, "merge: %s %.2f s\n", what, t - t_phase);
    t_phase = t;
  }
};

// Writing over an input would pull the mapped text away under the merge.
bool output_is_an_input(const merge_job &j) {
  struct stat out_st {};
  if (stat(j.out_path.c_str(), &out_st) != 0) return false;
  for (const auto &f : j.files) {
    struct stat in_st {};
    if (stat(f.c_str(), &in_st) == 0 && in_st.st_dev == out_st.st_dev &&
        in_st.st_ino == out_st.st_ino) {
      error_line("merge: the output " + j.out_path + " is also an input");
      return true;
    }
  }
  return false;
}

uint64_t total_bytes(const std::vector<std::string> &files) {
  uint64_t total = 0;
  for (const auto &f : files) {
    struct stat st {};
    if (stat(f.c_str(), &st) == 0) total += static_cast<uint64_t>(st.st_size);
  }
  return total;
}

// Pass 1's worker: a block's metadata lines, the ids of its events, what it drops.
void scan_block(detail::text_block &b, uint32_t index, time_unit unit) {
  auto r = std::make_unique<scan_result>();
  parsed_line pl;
  detail::for_each_line(b.whole_lines(), [&](std::string_view line) {
    const std::string_view t = trim(line);
    if (t.empty() || t == "[" || t == "]") return true;
    if (!detail::parse_line(line, pl)) {
      ++r->invalid;
      return true;
    }
    if (detail::phase(pl) == 'M') {
      r->meta.push_back({std::string(line), index, {}});
      return true;
    }
    int64_t id = 0;
    uint64_t ts = 0;
    if (!pl.ts.present() || !detail::value_ns(pl.ts, unit, &ts)) {
      ++r->others;
      return true;
    }
    if (pl.id.present() && detail::value_i64(pl.id, &id) && id >= 0)
      r->ids.push_back(static_cast<uint64_t>(id));
    return true;
  });
  b.result = std::move(r);
}

// Pass 1 over one file; false (after one line) when its time unit differs from the first's.
bool scan_input(merge_job &j, const std::string &path) {
  input in;
  in.path = path;
  in.file = std::make_unique<detail::trace_file>();
  if (!open_trace(path, in.file.get(), &j.ok)) return true;
  print_plan_issues(*in.file, path);
  in.unit = detail::header_time_unit(*in.file);
  if (!j.inputs.empty() && in.unit != j.inputs[0].unit) {
    error_line("merge: " + j.inputs[0].path + " and " + path +
               " have different time units (time_metric us and ns); merge traces of one unit");
    return false;
  }
  const uint32_t index = static_cast<uint32_t>(j.inputs.size());
  const time_unit unit = in.unit;
  id_bits mine;
  auto work = [index, unit](detail::text_block &b) { scan_block(b, index, unit); };
  detail::for_each_block(*in.file, j.opt, work, [&](detail::text_block &b) {
    auto *r = static_cast<scan_result *>(b.result.get());
    for (auto &m : r->meta) j.all_meta.push_back(std::move(m));
    for (uint64_t id : r->ids) mine.add(id);
    j.others += r->others;
    j.invalid += r->invalid;
    in.file->release(b.in_offset, b.in_bytes);  // the resident set stays flat
    for (const auto &iss : b.issues) {
      error_line(path + ": byte " + std::to_string(iss.offset) + ": " + iss.message);
      if (iss.error) j.ok = false;
    }
    j.bar->add(b.in_bytes / 2);
  });
  j.ids_shared = j.ids_all.merge_in(mine) || j.ids_shared;
  j.inputs.push_back(std::move(in));
  return true;
}

// Clock offsets, from the files' PR clock_offset_ns lines.
void align_clocks(merge_job &j) {
  parsed_line pl;
  std::vector<bool> done(j.inputs.size(), false);
  for (const auto &m : j.all_meta) {
    int64_t ns = 0;
    if (done[m.file] || !detail::parse_line(m.text, pl) || !clock_offset_of(m.text, pl, &ns))
      continue;
    done[m.file] = true;
    input &in = j.inputs[m.file];
    if (ns > k_max_offset_ns || ns < -k_max_offset_ns) {
      error_line(in.path + ": clock_offset_ns " + std::to_string(ns) +
                 " is out of range (more than 10^18 ns); this file is not clock-aligned");
      j.ok = false;
      continue;
    }
    // A microsecond trace moves by whole microseconds (rounded half away from zero).
    in.shift = in.unit == time_unit::ns ? ns : (ns + (ns < 0 ? -500 : 500)) / 1000 * 1000;
  }
}

// What makes two metadata lines the same: a hash definition's type, string and value; any
// other line's text without its id (the same property of the same pid once).
std::string meta_key(const meta_line &m, const parsed_line &pl, bool def) {
  std::string key;
  if (def) {
    const jvalue *n = pl.arg_value("name");
    const jvalue *v = pl.arg_value("value");
    key.append(pl.name.text).push_back('\x1f');
    if (n) key.append(n->text);
    key.push_back('\x1f');
    if (v) key.append(v->text);
  } else {
    const line_rec &r = m.rec;
    key.assign(m.text.data(), r.id_len ? r.id_off : 0);
    key.append(m.text.data() + r.id_off + r.id_len, m.text.size() - r.id_off - r.id_len);
  }
  return key;
}

// Metadata first: hash definitions (one per distinct type/string/value), then the other
// metadata lines, without exact duplicates. Every hash is thus defined before any use; the
// time unit's declarations come first of all, where readers look for it.
void choose_metadata(merge_job &j) {
  parsed_line pl;
  for (auto &m : j.all_meta) {
    if (!detail::parse_line(m.text, pl)) continue;
    m.rec = positions(m.text, pl, m.file, j.inputs[m.file].unit);
  }
  std::unordered_set<std::string> seen;
  for (int pass = 0; pass < 2; ++pass) {
    for (auto &m : j.all_meta) {
      if (!detail::parse_line(m.text, pl)) continue;
      const bool def = is_hash_def(pl);
      if (def != (pass == 0)) continue;
      if (!seen.insert(meta_key(m, pl, def)).second) {
        ++j.meta_dups;
        continue;
      }
      j.meta.push_back(&m);
    }
  }
  std::stable_partition(j.meta.begin(), j.meta.end(),
                        [](const meta_line *m) { return declares_unit(m->text); });
}

// Ids stay as they are unless two inputs share one among the lines written; then every id (and
// p_idx) becomes id * nfiles + file index, which keeps them unique and the parent links intact.
void decide_remap(merge_job &j) {
  const size_t nfiles = j.inputs.size();
  std::vector<id_bits> meta_ids(nfiles);
  for (const meta_line *m : j.meta)
    if (m->rec.has_id) meta_ids[m->file].add(m->rec.id);
  for (auto &b : meta_ids) j.ids_shared = j.ids_all.merge_in(b) || j.ids_shared;
  j.remap = nfiles > 1 && (j.ids_shared || j.ids_all.sparse);
}

// Pass 2's worker: a block's events, rewritten (ids, clock shift) back to back.
void rewrite_block(detail::text_block &b, uint32_t fi, time_unit unit, int64_t shift, bool remap,
                   uint64_t nfiles) {
  auto r = std::make_unique<event_result>();
  r->text.reserve(b.text.size() + b.text.size() / 8);
  parsed_line p;
  detail::for_each_line(b.whole_lines(), [&](std::string_view line) {
    const std::string_view t = trim(line);
    if (t.empty() || t == "[" || t == "]") return true;
    if (!detail::parse_line(line, p) || detail::phase(p) == 'M') return true;
    const line_rec rec = positions(line, p, fi, unit);
    if (!rec.has_ts) return true;  // counted in pass 1
    const size_t before = r->text.size();
    if (!remap && shift == 0)
      r->text.append(line);
    else
      rewrite(rec, remap, nfiles, shift, unit, r->text);
    r->lines.emplace_back(shift_ts(rec.ts, shift), static_cast<uint32_t>(r->text.size() - before));
    return true;
  });
  b.result = std::move(r);
}

// Pass 2: every input's events rewritten and sorted in runs spilled beside the output.
bool spill_events(merge_job &j, sorted_runs &runs) {
  bool spilled_ok = true;
  const uint64_t nfiles = j.inputs.size();
  for (uint32_t fi = 0; fi < nfiles && spilled_ok; ++fi) {
    const input &in = j.inputs[fi];
    auto work = [fi, unit = in.unit, shift = in.shift, remap = j.remap, nfiles](
                    detail::text_block &b) { rewrite_block(b, fi, unit, shift, remap, nfiles); };
    detail::for_each_block(*in.file, j.opt, work, [&](detail::text_block &b) {
      auto *r = static_cast<event_result *>(b.result.get());
      size_t pos = 0;
      for (const auto &l : r->lines) {
        spilled_ok =
            runs.add(l.first, fi, std::string_view(r->text).substr(pos, l.second)) && spilled_ok;
        pos += l.second;
      }
      in.file->release(b.in_offset, b.in_bytes);
      j.bar->add(b.in_bytes / 2);
    });
  }
  if (!spilled_ok) error_line("merge: " + runs.error());
  return spilled_ok;
}

// The metadata, then the k-way merge over every run, into the output.
bool write_output(merge_job &j, sorted_runs &runs) {
  const uint64_t nfiles = j.inputs.size();
  detail::member_stream w(j.out_path, tool_threads());
  if (!w.ok()) {
    error_line(w.error());
    runs.remove();
    return false;
  }
  w.line("[", false, 0);
  for (const meta_line *m : j.meta) {
    line_rec rec = m->rec;
    rec.p = m->text.data();
    rewrite(rec, j.remap, nfiles, 0, j.inputs[m->file].unit, w.open_line());
    w.close_line(false, 0);
  }
  const bool merged = runs.merge([&](uint64_t ts, uint32_t, std::string_view line) {
    w.line(line, true, ts);
    ++j.events;
  });
  runs.remove();
  if (!merged) {
    error_line("merge: " + runs.error());
    return false;
  }
  w.line("]", false, 0);
  if (!w.finish()) {
    error_line(w.error());
    return false;
  }
  return true;
}

// What was dropped or kept as it was, and the closing line.
void report(merge_job &j) {
  const uint64_t nfiles = j.inputs.size();
  if (g_unmappable) {
    error_line("merge: " + std::to_string(g_unmappable.load()) +
               " ids or p_idx values are too large to remap (id * " + std::to_string(nfiles) +
               " + file index passes 2^64 - 1): they are kept as they were and may repeat");
    j.ok = false;
  }
  if (j.others)
    error_line("merge: dropped " + std::to_string(j.others) +
               " lines that are neither metadata nor carry a ts");
  if (j.invalid)
    error_line("merge: dropped " + std::to_string(j.invalid) +
               " lines that are not valid JSON (run dftrace validate for details)");
  std::string s =
      "merged " + std::to_string(nfiles) + " file(s): " + std::to_string(j.events) + " events, " +
      std::to_string(j.meta.size()) + " metadata lines (" + std::to_string(j.meta_dups) +
      " duplicates removed)" +
      (j.remap ? ", ids remapped (id * " + std::to_string(nfiles) + " + file index)" : "");
  int aligned = 0;
  for (const auto &in : j.inputs) aligned += in.shift != 0;
  if (aligned) s += ", " + std::to_string(aligned) + " file(s) clock-aligned";
  s += " -> " + j.out_path + "\n";
  fputs(s.c_str(), stderr);
}

}  // namespace

int cmd_merge(const args_t &a) {
  merge_job j;
  j.out_path = a.output("merge", "OUT.pfw.gz");
  if (j.out_path.empty()) return 2;
  j.files = input_files(a, "merge", &j.ok);
  if (j.files.empty() || output_is_an_input(j)) return 2;
  j.bar = std::make_unique<progress>("merge", total_bytes(j.files));
  j.opt = tool_read_options();
  j.opt.window = static_cast<size_t>(2 * j.opt.threads + 2);  // few blocks in flight
  // ---- pass 1: each file's metadata, unit, clock offset and the ids of its events
  for (const auto &path : j.files)
    if (!scan_input(j, path)) return 2;
  if (j.inputs.empty()) {
    error_line("merge: nothing to merge");
    return 1;
  }
  j.phase("metadata");
  if (!a.has("--no-clock-align")) align_clocks(j);
  choose_metadata(j);
  decide_remap(j);
  j.phase("ids");
  // ---- pass 2: events rewritten, sorted in runs spilled beside the output (sorted_runs)
  sorted_runs runs(j.out_path + ".merge-" + std::to_string(::getpid()));
  std::string why;
  if (!runs.open(&why)) {
    error_line("merge: " + why);
    return 1;
  }
  if (!spill_events(j, runs)) return 1;
  j.phase("sorted runs");
  if (!write_output(j, runs)) return 1;
  j.phase("merge and write");
  j.bar->done();
  report(j);
  return j.ok ? 0 : 1;
}

}  // namespace dftrace::tools
