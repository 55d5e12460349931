// cmd_validate.cpp: dftrace validate: line-numbered findings on what breaks DFAnalyzer or
// makes Perfetto drop events; exit status 1 when any error is found.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "args.hpp"
#include "commands.hpp"
#include "inputs.hpp"
#include "lines.hpp"
#include "progress.hpp"
#include "reader/aggregated.hpp"
#include "reader/json_string.hpp"

namespace dftrace::tools {

namespace {

// One finding inside a block, before line numbers are known.
struct local_finding {
  uint32_t line;  // 0-based line within the block
  bool error;
  const char *kind;  // groups findings for the per-kind cap
  std::string message;
};

// What a block (then the file) knows about one process's time span: its "start" and "end"
// events (cat dftracer) and its earliest-starting and latest-ending other events. Lines are
// block-relative in a block's result and absolute in the file's.
struct pid_span {
  bool has_start = false, has_end = false, any = false;
  uint64_t start_ts = 0, end_ts = 0, first_ts = 0, last_end = 0;
  uint64_t start_line = 0, end_line = 0, first_line = 0, last_line = 0;

  void merge(const pid_span &o, uint64_t base) {
    if (o.has_start && (!has_start || o.start_ts < start_ts)) {
      has_start = true;
      start_ts = o.start_ts;
      start_line = base + o.start_line;
    }
    if (o.has_end && (!has_end || o.end_ts > end_ts)) {
      has_end = true;
      end_ts = o.end_ts;
      end_line = base + o.end_line;
    }
    if (o.any) {
      if (!any || o.first_ts < first_ts) {
        first_ts = o.first_ts;
        first_line = base + o.first_line;
      }
      if (!any || o.last_end > last_end) {
        last_end = o.last_end;
        last_line = base + o.last_line;
      }
      any = true;
    }
  }
};

struct check_result : detail::block_result {
  std::unordered_map<std::string, pid_span> spans;  // by the pid's text
  uint32_t lines = 0;
  std::vector<local_finding> findings;
  // Structure: the first non-blank line, the first ']' and the first non-blank line after it.
  int64_t first_nonblank = -1;
  std::string_view first_nonblank_text;
  int64_t close_line = -1;
  int64_t after_close = -1;
  int64_t last_nonblank = -1;
  std::string_view last_nonblank_text;
  // Hashes: definitions and first uses within the block.
  std::vector<std::pair<std::string, uint32_t>> defs;
  std::unordered_map<std::string_view, uint32_t> uses;  // views into the block's text
  std::vector<std::pair<uint64_t, uint32_t>> ids;       // (id, line in block)
  // Statistics to compare with the member's DT field.
  detail::member_stats ts_range;  // lines unused
  bool any_ts = false;
  std::string quoted_keys;  // of the line being checked
  // Who wrote the trace (docs/format.md section 4): DFTracer's marks (a hash definition whose
  // value is a string, a start event whose version is a number or begins with 'v') and
  // dftrace's (a start event with timer_source). DFTracer's traces get warnings for what
  // DFTracer writes and dftrace must not.
  bool dftracer_mark = false, dftrace_mark = false;
};

bool is_uint_text(std::string_view t) {
  if (t.empty()) return false;
  for (char c : t)
    if (c < '0' || c > '9') return false;
  return true;
}

bool has_exponent(std::string_view t) {
  for (char c : t)
    if (c == 'e' || c == 'E') return true;
  return false;
}

// Checks that a required field is a number (bare; quoted numbers are a legacy warning).
void need_number(check_result &r, uint32_t ln, const jvalue &v, const char *key, bool integer,
                 bool allow_negative) {
  if (!v.present()) {
    r.findings.push_back({ln, true, "missing", std::string("missing \"") + key + "\""});
    return;
  }
  if (v.type == jtype::string) {
    std::string_view t = v.text;
    if (allow_negative && !t.empty() && t[0] == '-') t.remove_prefix(1);
    uint64_t tmp;
    jvalue bare{jtype::number, t};
    if (is_uint_text(t) || (!integer && detail::value_u64(bare, &tmp))) {
      if (!r.quoted_keys.empty()) r.quoted_keys += ", ";
      r.quoted_keys += key;
    } else {
      r.findings.push_back({ln, true, "type", std::string("\"") + key + "\" is not a number"});
    }
    return;
  }
  if (v.type != jtype::number) {
    r.findings.push_back({ln, true, "type", std::string("\"") + key + "\" is not a number"});
    return;
  }
  if (!allow_negative && v.text[0] == '-') {
    r.findings.push_back({ln, true, "type", std::string("\"") + key + "\" is negative"});
    return;
  }
  if (integer && !detail::value_is_integer(v))
    r.findings.push_back({ln, true, "type", std::string("\"") + key + "\" is not an integer"});
  else if (!integer && has_exponent(v.text))
    r.findings.push_back({ln, false, "type", std::string("\"") + key + "\" uses an exponent"});
}

void need_string(check_result &r, uint32_t ln, const jvalue &v, const char *key) {
  if (!v.present()) {
    r.findings.push_back({ln, true, "missing", std::string("missing \"") + key + "\""});
  } else if (v.type != jtype::string) {
    r.findings.push_back({ln, true, "type", std::string("\"") + key + "\" is not a string"});
  }
}

// The fields every line needs, by its phase.
void check_fields(check_result &r, uint32_t cur, const parsed_line &pl, char ph, time_unit unit) {
  if (pl.ph.type != jtype::number || !ph) need_string(r, cur, pl.ph, "ph");
  need_string(r, cur, pl.name, "name");
  if (ph != 'M') need_string(r, cur, pl.cat, "cat");
  need_number(r, cur, pl.pid, "pid", true, false);
  need_number(r, cur, pl.tid, "tid", true, false);
  if (pl.args.present() && pl.args.type != jtype::object)
    r.findings.push_back({cur, true, "type", "\"args\" is not an object"});
  std::string ph_buf;
  if (ph && pl.ph.type == jtype::string && detail::string_text(pl.ph, &ph_buf).size() != 1)
    r.findings.push_back({cur, true, "type", "\"ph\" is not one character"});
  switch (ph) {
    case 'X':  // a trace in integer nanoseconds has no fractions
      need_number(r, cur, pl.ts, "ts", unit == time_unit::ns, false);
      need_number(r, cur, pl.dur, "dur", unit == time_unit::ns, false);
      break;
    case 'C':
      need_number(r, cur, pl.ts, "ts", false, false);
      if (pl.id.present())
        r.findings.push_back({cur, true, "counter-id",
                              "counter with an \"id\" (Perfetto makes one track per sample)"});
      if (!pl.args.present())
        r.findings.push_back({cur, true, "missing", "counter without \"args\""});
      break;
    case 'i':
    case 'I':
    case 'B':
    case 'E':
    case 'b':
    case 'e':
    case 'n': need_number(r, cur, pl.ts, "ts", false, false); break;
    case 'A':  // DFTracer 2.x's aggregated record: a count and per-field min/max/sum
      need_number(r, cur, pl.ts, "ts", unit == time_unit::ns, false);
      if (!pl.arg_value("dft_cnt"))
        r.findings.push_back({cur, true, "missing", "aggregated record without args.dft_cnt"});
      break;
    case 'M': break;
    case 0: break;
    default:
      r.findings.push_back({cur, false, "ph", "unknown \"ph\" " + std::string(pl.ph.text)});
      break;
  }
  if (!r.quoted_keys.empty()) {
    r.findings.push_back(
        {cur, false, "quoted",
         "numbers in quotes (" + r.quoted_keys + "): older DFTracer; Perfetto drops such events"});
    r.quoted_keys.clear();
  }
}

// A hash definition's value, kept to check that every use comes after one.
void note_definition(check_result &r, uint32_t cur, const parsed_line &pl) {
  if (!detail::text_equals(pl.name, "HH") && !detail::text_equals(pl.name, "SH") &&
      !detail::text_equals(pl.name, "FH"))
    return;
  const jvalue *v = pl.arg_value("value");
  if (!v || (v->type != jtype::number && v->type != jtype::string)) {
    r.findings.push_back(
        {cur, true, "hash", std::string(pl.name.text) + " line without a hash \"value\""});
  } else {
    r.defs.emplace_back(std::string(v->text), cur);
    if (v->type == jtype::string) r.dftracer_mark = true;  // dftrace writes integers
  }
}

// A line's part in its process's span: the start or end event, or any other event (aggregated
// records, also DFTracer 2.0.2's counter form, stand for intervals that may begin before the
// process did: not counted). Notes who wrote the trace from the start event.
bool span_of(check_result &r, uint32_t cur, const parsed_line &pl, char ph, uint64_t ts,
             time_unit unit, pid_span *one) {
  if (ph == 'M' || !ph || ph == 'A' || (ph == 'C' && detail::is_counter_aggregate(pl)))
    return false;
  const bool ours = ph == 'X' && detail::text_equals(pl.cat, "dftracer");
  if (ours && detail::text_equals(pl.name, "start")) {
    if (pl.arg_value("timer_source")) r.dftrace_mark = true;
    const jvalue *ver = pl.arg_value("version");
    if (ver && (ver->type == jtype::number ||
                (ver->type == jtype::string && !ver->text.empty() && ver->text[0] == 'v')))
      r.dftracer_mark = true;
    one->has_start = true;
    one->start_ts = ts;
    one->start_line = cur + 1;
  } else if (ours && detail::text_equals(pl.name, "end")) {
    one->has_end = true;
    one->end_ts = ts;
    one->end_line = cur + 1;
  } else {
    uint64_t dur = 0;
    if (ph == 'X' && pl.dur.present()) detail::value_ns(pl.dur, unit, &dur);
    one->any = true;
    one->first_ts = ts;
    one->last_end = ts + std::min<uint64_t>(dur, UINT64_MAX - ts);
    one->first_line = one->last_line = cur + 1;
  }
  return true;
}

// Where the structure of the file shows: blank lines, the first line, '[' and ']'. True when
// the line is structure only (nothing more to check).
bool note_structure(check_result &r, uint32_t cur, std::string_view t) {
  if (t.empty()) return true;
  if (r.first_nonblank < 0) {
    r.first_nonblank = cur;
    r.first_nonblank_text = t;
  }
  if (r.close_line >= 0 && r.after_close < 0) r.after_close = cur;
  r.last_nonblank = cur;
  r.last_nonblank_text = t;
  if (t == "]" && r.close_line < 0) r.close_line = cur;
  return t == "[" || t == "]";
}

// The worker: a block's lines checked one by one, with what the consumer needs to check
// across blocks (structure, hash definitions and uses, ids, spans).
void check_block(detail::text_block &b, time_unit unit) {
  auto r = std::make_unique<check_result>();
  parsed_line pl;
  std::vector<std::string_view> refs;
  std::string_view recent_refs[8];
  unsigned recent_next = 0;
  uint32_t ln = 0;
  pid_span *span = nullptr;  // of span_pid (map nodes do not move)
  std::string_view span_pid;
  detail::for_each_line(b.text, [&](std::string_view line) {
    const uint32_t cur = ln++;
    if (note_structure(*r, cur, trim(line))) return true;
    if (!detail::parse_line(line, pl)) {
      r->findings.push_back({cur, true, "json",
                             std::string("invalid JSON: ") + pl.error + " at column " +
                                 std::to_string(pl.error_at + 1)});
      return true;
    }
    if (pl.duplicate_key)
      r->findings.push_back({cur, true, "json", "a top-level key appears twice"});
    // "ph": a letter, or DFTracer 2.x's integer phase (1..4)
    const char ph = detail::phase(pl);
    check_fields(*r, cur, pl, ph, unit);
    if (ph == 'M') note_definition(*r, cur, pl);
    refs.clear();
    hash_refs(pl, &refs);
    for (auto v : refs) {
      // Most lines repeat the hashes of the line before (hhash always): skip the map then.
      bool recent = false;
      for (auto &c : recent_refs) recent = recent || c == v;
      if (recent) continue;
      r->uses.emplace(v, cur);
      recent_refs[recent_next++ & 7] = v;
    }
    int64_t id = 0;
    if (pl.id.present() && ph != 'C' && detail::value_i64(pl.id, &id))
      r->ids.emplace_back(static_cast<uint64_t>(id), cur);
    uint64_t ts = 0;  // ns
    if (!pl.ts.present() || !detail::value_ns(pl.ts, unit, &ts)) return true;
    r->ts_range.add_ts(ts / 1000, r->any_ts);  // DT fields hold epoch microseconds
    pid_span one;
    if (!span_of(*r, cur, pl, ph, ts, unit, &one)) return true;
    if (!span || pl.pid.text != span_pid) {  // consecutive lines mostly share the pid
      span = &r->spans[std::string(pl.pid.text)];
      span_pid = pl.pid.text;
    }
    span->merge(one, 0);
    return true;
  });
  r->lines = ln;
  b.result = std::move(r);
}

struct reporter {
  std::string path;
  size_t max_per_kind = 20;
  uint64_t errors = 0, warnings = 0;
  std::map<std::string, uint64_t> per_kind;
  std::map<std::string, uint64_t> suppressed;

  void add(uint64_t line, bool error, const std::string &kind, const std::string &msg) {
    (error ? errors : warnings)++;
    if (++per_kind[kind] > max_per_kind) {
      ++suppressed[kind];
      return;
    }
    std::string s = path;
    if (line) s += ":" + std::to_string(line);
    s += error ? ": error: " : ": warning: ";
    s += msg;
    s += "\n";
    fwrite(s.data(), 1, s.size(), stdout);
  }
  void finish() {
    for (auto &kv : suppressed) {
      std::string s =
          path + ": " + std::to_string(kv.second) + " more " + kv.first + " findings not shown\n";
      fwrite(s.data(), 1, s.size(), stdout);
    }
  }
};

// One file validated: the consumer's state across blocks, and the checks made once the whole
// file was read.
class file_check {
 public:
  file_check(const std::string &path, size_t max_per_kind) {
    rep_.path = path;
    rep_.max_per_kind = max_per_kind;
  }
  void run(detail::trace_file &f, const detail::read_options &opt);
  const reporter &result() const { return rep_; }
  uint64_t lines() const { return base_; }

 private:
  void fold(detail::text_block &b);
  void check_dt(const detail::text_block &b, const check_result &r);
  void check_structure(const check_result &r);
  void check_hashes(const check_result &r);
  void check_spans(bool own);
  void check_ids(bool own);

  reporter rep_;
  uint64_t base_ = 0;  // lines before the current block
  bool seen_first_ = false, closed_ = false, reported_after_close_ = false, json_lines_ = false;
  uint64_t close_at_ = 0;
  std::unordered_set<std::string> defined_, reported_hash_;
  std::vector<std::pair<uint64_t, uint64_t>> ids_;  // (id, absolute line)
  std::map<std::string, pid_span> spans_;
  bool dftracer_mark_ = false, dftrace_mark_ = false;
};

// The member's DT field against its lines.
void file_check::check_dt(const detail::text_block &b, const check_result &r) {
  if (!b.part || b.part->kind != detail::planned_part::member) return;
  const auto &dt = b.part->dt;
  if (dt.lines != r.lines)
    rep_.add(base_ + 1, true, "dt",
             "member at byte " + std::to_string(b.in_offset) + ": DT field says " +
                 std::to_string(dt.lines) + " lines, the member holds " + std::to_string(r.lines));
  const uint64_t mn = r.any_ts ? r.ts_range.ts_min : 0, mx = r.any_ts ? r.ts_range.ts_max : 0;
  if (dt.ts_min != mn || dt.ts_max != mx)
    rep_.add(base_ + 1, true, "dt",
             "member at byte " + std::to_string(b.in_offset) + ": DT field says ts " +
                 std::to_string(dt.ts_min) + ".." + std::to_string(dt.ts_max) +
                 ", its lines have " + std::to_string(mn) + ".." + std::to_string(mx));
}

// '[' first (or plain JSON lines, as DFTracer 2.x writes: no ']' expected), nothing after ']'.
void file_check::check_structure(const check_result &r) {
  if (!seen_first_ && r.first_nonblank >= 0) {
    seen_first_ = true;
    json_lines_ = r.first_nonblank_text != "[";
  }
  const auto after_close = [&](int64_t line) {
    reported_after_close_ = true;
    rep_.add(base_ + static_cast<uint64_t>(line) + 1, true, "structure",
             "data after the closing ']' on line " + std::to_string(close_at_));
  };
  if (closed_ && !reported_after_close_ && r.first_nonblank >= 0) after_close(r.first_nonblank);
  if (closed_ || r.close_line < 0) return;
  closed_ = true;
  close_at_ = base_ + static_cast<uint64_t>(r.close_line) + 1;
  if (json_lines_)
    rep_.add(close_at_, true, "structure", "a closing ']' in a file that did not open with '['");
  if (r.after_close >= 0 && !reported_after_close_) after_close(r.after_close);
}

// Hashes: defined before first use, counting definitions earlier in this block.
void file_check::check_hashes(const check_result &r) {
  for (const auto &u : r.uses) {
    const std::string key(u.first);
    if (defined_.count(key) || reported_hash_.count(key)) continue;
    bool earlier = false;
    for (const auto &d : r.defs)
      if (d.first == u.first && d.second <= u.second) earlier = true;
    if (!earlier) {
      reported_hash_.insert(key);
      rep_.add(base_ + u.second + 1, true, "hash",
               "hash " + key + " is used without an earlier HH/SH/FH definition");
    }
  }
  for (const auto &d : r.defs) defined_.insert(d.first);
}

// The consumer: one block's findings numbered and its summaries folded in, in file order.
void file_check::fold(detail::text_block &b) {
  auto *r = static_cast<check_result *>(b.result.get());
  for (const auto &i : b.issues)
    rep_.add(base_ + r->lines, i.error, "gzip",
             "byte " + std::to_string(i.offset) + ": " + i.message);
  check_dt(b, *r);
  if (b.partial_tail)
    rep_.add(base_ + r->lines, true, "truncated", "the last line is cut short by the damage above");
  check_structure(*r);
  for (const auto &lf : r->findings) rep_.add(base_ + lf.line + 1, lf.error, lf.kind, lf.message);
  check_hashes(*r);
  for (const auto &i : r->ids) ids_.emplace_back(i.first, base_ + i.second + 1);
  for (const auto &kv : r->spans) spans_[kv.first].merge(kv.second, base_);
  dftracer_mark_ = dftracer_mark_ || r->dftracer_mark;
  dftrace_mark_ = dftrace_mark_ || r->dftrace_mark;
  base_ += r->lines;
}

// Every event of a process lies inside its start..end events (one finding per side).
void file_check::check_spans(bool own) {
  for (const auto &kv : spans_) {
    const pid_span &sp = kv.second;
    if (!sp.any) continue;
    if (sp.has_start && sp.first_ts < sp.start_ts)
      rep_.add(sp.first_line, own, "span",
               "pid " + kv.first + ": an event starts at ts " + us_text(sp.first_ts) + ", " +
                   us_text(sp.start_ts - sp.first_ts) +
                   " us before its process's start event (line " + std::to_string(sp.start_line) +
                   ")");
    if (sp.has_end && sp.last_end > sp.end_ts)
      rep_.add(sp.last_line, own, "span",
               "pid " + kv.first + ": an event ends at ts " + us_text(sp.last_end) + ", " +
                   us_text(sp.last_end - sp.end_ts) + " us after its process's end event (line " +
                   std::to_string(sp.end_line) + ")");
  }
}

// Ids are unique. They are dense integers: a table of first lines over their range finds
// duplicates in one pass; very sparse ids are sorted instead.
void file_check::check_ids(bool own) {
  auto dup = [&](uint64_t id, uint64_t line, uint64_t first) {
    rep_.add(
        line, own, "id",
        "duplicate id " + std::to_string(id) + " (first on line " + std::to_string(first) + ")");
  };
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const auto &i : ids_) {
    lo = std::min(lo, i.first);
    hi = std::max(hi, i.first);
  }
  if (!ids_.empty() && hi - lo < std::max<uint64_t>(ids_.size() * 8, 1u << 20)) {
    std::vector<uint64_t> first(static_cast<size_t>(hi - lo + 1), 0);
    for (const auto &i : ids_) {
      uint64_t &f = first[static_cast<size_t>(i.first - lo)];
      if (f)
        dup(i.first, i.second, f);
      else
        f = i.second;
    }
    return;
  }
  std::stable_sort(ids_.begin(), ids_.end(),
                   [](const auto &x, const auto &y) { return x.first < y.first; });
  for (size_t i = 1; i < ids_.size(); ++i)
    if (ids_[i].first == ids_[i - 1].first) dup(ids_[i].first, ids_[i].second, ids_[i - 1].second);
}

void file_check::run(detail::trace_file &f, const detail::read_options &opt) {
  progress bar("validate", f.size());
  for (const auto &i : f.plan_issues())
    rep_.add(0, i.error, "gzip", "byte " + std::to_string(i.offset) + ": " + i.message);
  const time_unit unit = detail::header_time_unit(f);
  auto work = [unit](detail::text_block &b) { check_block(b, unit); };
  detail::for_each_block(f, opt, work, [&](detail::text_block &b) {
    fold(b);
    bar.add(b.in_bytes);
    f.release(b.in_offset, b.in_bytes);
  });
  bar.done();
  if (!closed_ && seen_first_ && !json_lines_)
    rep_.add(base_, false, "structure",
             "no closing ']' (the process did not finish; readers accept this)");
  if (!seen_first_) rep_.add(0, true, "structure", "no lines at all");
  // DFTracer breaks both span and id rules (2.0.2 without metadata repeats ids of nested
  // regions; see docs/format.md section 4): in a trace that is not dftrace's own they are
  // warnings.
  const bool own = dftrace_mark_ || !dftracer_mark_;
  check_spans(own);
  check_ids(own);
  rep_.finish();
}

}  // namespace

int cmd_validate(const args_t &a) {
  bool ok = true;
  const std::vector<std::string> files = input_files(a, "validate", &ok);
  if (files.empty()) return 2;
  size_t max_per_kind = 20;
  if (a.has("--max-findings")) {
    uint64_t v = 0;
    if (!parse_count(a.get("--max-findings"), &v)) {
      error_line("validate: --max-findings needs a number");
      return 2;
    }
    max_per_kind = static_cast<size_t>(v);
  }
  const bool quiet = a.has("--quiet");
  uint64_t total_errors = 0, total_warnings = 0;
  const detail::read_options opt = tool_read_options();
  for (const auto &path : files) {
    detail::trace_file f;
    if (!open_trace(path, &f, &ok)) continue;
    file_check check(path, max_per_kind);
    check.run(f, opt);
    const reporter &rep = check.result();
    total_errors += rep.errors;
    total_warnings += rep.warnings;
    if (!quiet || rep.errors) {
      std::string s = path + ": " + std::to_string(check.lines()) + " lines, " +
                      std::to_string(rep.errors) + " errors, " + std::to_string(rep.warnings) +
                      " warnings\n";
      fwrite(s.data(), 1, s.size(), stdout);
    }
  }
  fflush(stdout);
  if (files.size() > 1) {
    std::string s = "total: " + std::to_string(total_errors) + " errors, " +
                    std::to_string(total_warnings) + " warnings in " +
                    std::to_string(files.size()) + " files\n";
    fwrite(s.data(), 1, s.size(), stdout);
  }
  return (ok && total_errors == 0) ? 0 : 1;
}

}  // namespace dftrace::tools
