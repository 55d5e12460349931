// cmd_stat.cpp: dftrace stat: counts and durations per category/name, pid and thread.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>

#include "analysis/io_class.hpp"
#include "args.hpp"
#include "base/format.hpp"
#include "commands.hpp"
#include "inputs.hpp"
#include "lines.hpp"
#include "progress.hpp"
#include "reader/aggregated.hpp"
#include "reader/json_string.hpp"
#include "stat.hpp"

namespace dftrace::tools {

namespace {

using namespace stat;
using analysis::io_bytes;
using analysis::io_direction;
using analysis::io_event_bytes;

// Per (cat, name) as written: its stats, its decoded text (views of the map's key, which stays
// where it is) and its I/O kind, worked out once.
struct name_cache_entry {
  std::string_view cat, name;            // as written
  std::string_view cat_text, name_text;  // as meant
  name_stats *stats = nullptr;
  int dir = -1;
  io_bytes how = io_bytes::ret;
};

// What the worker keeps from line to line.
struct scan_state {
  parsed_line pl;
  std::string key, name_buf, cat_buf;
  span_stats *pid_stats = nullptr, *thread_stats = nullptr;
  std::string_view last_pid, last_tid;
  name_cache_entry cache[16];
};

// A metadata line: a pid's rank, a file's path, what a budget or sampling folded, a trigger.
void note_metadata(partial &r, scan_state &st) {
  const parsed_line &pl = st.pl;
  const std::string_view mname = detail::string_text(pl.name, &st.name_buf);
  const jvalue *n = pl.arg_value("name");
  const jvalue *v = pl.arg_value("value");
  if (mname == "PR") {  // the MPI rank of a pid, when it is known
    if (n && v && detail::text_equals(*n, "rank") && v->type == jtype::number)
      r.ranks[std::string(pl.pid.text)] = std::string(v->text);
  } else if (mname == "FH") {  // a file's hash and its path
    if (n && v) r.files.emplace(detail::decoded(*v), detail::decoded(*n));
  } else if ((mname == "budget" || mname == "sample") && detail::text_equals(pl.cat, "dftracer")) {
    if (n && v)
      r.limits.insert(std::string(mname) + '\x1f' + detail::decoded(*n) + '\x1f' +
                      detail::decoded(*v));
  }
  auto arg = [&pl](const char *k) {
    const jvalue *a = pl.arg_value(k);
    return a ? detail::decoded(*a) : std::string();
  };
  if (detail::text_equals(pl.name, "trigger_end") && detail::text_equals(pl.cat, "dftracer"))
    r.trigger_ends[std::string(pl.pid.text) + '\x1f' + arg("from")] = arg("time");
  if (detail::text_equals(pl.name, "trigger") && detail::text_equals(pl.cat, "dftracer")) {
    r.triggers.insert(arg("time") + '\x1f' + std::string(pl.pid.text) + '\x1f' + arg("name") +
                      '\x1f' + arg("value") + '\x1f' + arg("from") + '\x1f' + arg("after") +
                      '\x1f' + arg("to"));
  }
}

// The event's span in its process's and thread's (consecutive lines mostly share pid and tid:
// the maps are looked up only when they change).
void note_span(partial &r, scan_state &st, uint64_t ts, uint64_t end) {
  const parsed_line &pl = st.pl;
  if (!st.pid_stats || pl.pid.text != st.last_pid) {
    st.key.assign(pl.pid.text);
    st.pid_stats = &r.pids[st.key];
    st.last_pid = pl.pid.text;
    st.thread_stats = nullptr;
  }
  st.pid_stats->add(ts, end);
  if (!st.thread_stats || pl.tid.text != st.last_tid) {
    st.key.assign(pl.pid.text);
    st.key.push_back('\x1f');
    st.key.append(pl.tid.text);
    st.thread_stats = &r.threads[st.key];
    st.last_tid = pl.tid.text;
  }
  st.thread_stats->add(ts, end);
}

// The (cat, name)'s entry: a few names make most of a trace, so a small direct-mapped cache
// stands in front of the map.
name_cache_entry &name_entry(partial &r, scan_state &st) {
  const parsed_line &pl = st.pl;
  const size_t slot = (pl.name.text.size() * 31 + (pl.name.text.empty() ? 0 : pl.name.text[0]) +
                       (pl.cat.text.empty() ? 0 : pl.cat.text[0]) * 7) &
                      15;
  name_cache_entry &ce = st.cache[slot];
  if (!ce.stats || ce.name != pl.name.text || ce.cat != pl.cat.text) {
    st.key.assign(detail::string_text(pl.cat, &st.cat_buf));
    st.key.push_back('\x1f');
    st.key.append(detail::string_text(pl.name, &st.name_buf));
    const auto it = r.names.try_emplace(st.key).first;
    ce.stats = &it->second;
    ce.name = pl.name.text;
    ce.cat = pl.cat.text;
    const size_t sep = it->first.find('\x1f');
    ce.cat_text = std::string_view(it->first).substr(0, sep);
    ce.name_text = std::string_view(it->first).substr(sep + 1);
    ce.dir = io_direction(ce.cat_text, ce.name_text, &ce.how);
  }
  return ce;
}

// A read or write on a file (its hash fh): its bytes, calls and time.
void note_io_on(partial &r, scan_state &st, const name_cache_entry &ce, const jvalue &fh, int dir,
                const event_fields &f, time_unit unit, uint64_t bytes) {
  const parsed_line &pl = st.pl;
  st.key.assign(ce.cat_text);
  st.key.push_back('\x1f');
  st.key.append(detail::string_text(fh, &st.name_buf));
  io_stats &io = r.io[st.key];
  uint64_t n = 1, dur = f.dur;
  if (f.ph == 'A' && !detail::aggregated_calls(pl, unit, &n, &dur)) n = dur = 0;
  if (ce.how == io_bytes::folded) {  // its span is not time in the calls, which is unknown
    const jvalue *c = pl.arg_value(f.ph == 'A' ? "calls_sum" : "calls");
    if (!c || !detail::value_u64(*c, &n)) n = 0;
    dur = 0;
  }
  analysis::add_count(&io.calls[dir], n);
  analysis::add_ns(&io.ns[dir], dur);
  analysis::add_bytes(&io.bytes[dir], bytes);
  if (!analysis::add_bytes(&r.all_bytes, bytes)) r.bytes_overflow = true;
}

// A read or write on a file (fhash); an in-kernel copy, a read of its source's file (from_hash)
// and a write of its target's (to_hash).
void note_io(partial &r, scan_state &st, const name_cache_entry &ce, const event_fields &f,
             time_unit unit) {
  const parsed_line &pl = st.pl;
  uint64_t bytes = 0;
  if (ce.dir == analysis::k_io_copy || ce.dir >= 0) {
    if (!io_event_bytes(pl, ce.how, f.ph == 'A', &bytes)) {
      ++r.bad_bytes;  // left out of the I/O figures, listed
      return;
    }
  }
  if (ce.dir == analysis::k_io_copy) {
    const jvalue *from = pl.arg_value("from_hash"), *to = pl.arg_value("to_hash");
    if (from) note_io_on(r, st, ce, *from, 0, f, unit, bytes);
    if (to) note_io_on(r, st, ce, *to, 1, f, unit, bytes);
    return;
  }
  const jvalue *fh = pl.arg_value("fhash");
  if (ce.dir < 0 || !fh) return;
  note_io_on(r, st, ce, *fh, ce.dir, f, unit, bytes);
}

// A complete event or aggregated record into its name's count, total and durations.
void note_call(partial &r, scan_state &st, time_unit unit, const event_fields &f) {
  const parsed_line &pl = st.pl;
  name_cache_entry &ce = name_entry(r, st);
  name_stats &ns = *ce.stats;
  if (ce.name_text == "end" && ce.cat_text == "dftracer") {
    if (const jvalue *d = pl.arg_value("dropped_events")) {
      uint64_t v = 0;
      if (detail::value_u64(*d, &v)) analysis::add_count(&r.dropped, v);
    }
  }
  note_io(r, st, ce, f, unit);
  if (f.ph == 'A') {
    // DFTracer 2.x's aggregated record: dft_cnt events whose durations sum to dur_sum (or,
    // for one event or one value, "dur"); folded into the counts and totals exactly, not
    // into the percentiles (their single durations are not in the trace).
    uint64_t n = 0, sum = 0;
    if (!detail::aggregated_calls(pl, unit, &n, &sum)) return;
    ++r.aggregated;
    analysis::add_count(&ns.count, n);
    analysis::add_ns(&ns.total, sum);
    return;
  }
  analysis::count_one(&ns.count);
  analysis::add_ns(&ns.total, f.dur);
  ns.durs.push_back(f.dur);
}

// The worker: a block's lines added up.
void scan_block(detail::text_block &b, time_unit unit) {
  auto r = std::make_unique<partial>();
  auto st = std::make_unique<scan_state>();
  parsed_line &pl = st->pl;
  detail::for_each_line(b.whole_lines(), [&](std::string_view line) {
    ++r->lines;
    if (line.empty() || line[0] != '{') {
      const std::string_view t = trim(line);
      if (t.empty() || t == "[" || t == "]") return true;
    }
    if (!detail::parse_line(line, pl)) {
      ++r->invalid;
      return true;
    }
    ++r->objects;
    event_fields f = fields_of(pl, unit);
    // DFTracer 2.0.2 writes its aggregated calls as counters: they are calls, as "A" records are.
    if (f.ph == 'C' && detail::is_counter_aggregate(pl)) f.ph = 'A';
    r->by_ph[static_cast<unsigned char>(f.ph) & 127]++;
    if (f.ph == 'M') {
      note_metadata(*r, *st);
      return true;
    }
    if (!pl.ts.present()) return true;
    // a ts or dur that is no time, or an end past 2^64-1: left out, counted (as analyze)
    if (!f.has_ts || (pl.dur.present() && !f.has_dur) || f.ts + f.dur < f.ts) {
      ++r->bad_times;
      return true;
    }
    if (f.ph == 'C') add_counter_line(pl, f.ts, &r->counters);
    const uint64_t end = f.ts + f.dur;
    r->ts_min = std::min(r->ts_min, f.ts);
    r->end_max = std::max(r->end_max, end);
    note_span(*r, *st, f.ts, end);
    if (f.ph == 'X' || f.ph == 'A') note_call(*r, *st, unit, f);
    return true;
  });
  b.result = std::move(r);
}

// One file from its DT fields alone (O(members)): line counts, sizes and time ranges.
void read_dt_fields(const detail::trace_file &f, file_summary *s, partial *all) {
  s->lines_from_dt = true;
  for (const auto &part : f.parts()) {
    s->lines += part.dt.lines;
    s->text += part.dt.uncompressed_len;
    if (part.dt.ts_min || part.dt.ts_max) {  // DT times are epoch microseconds
      all->ts_min = std::min(all->ts_min, detail::unit_to_ns(part.dt.ts_min, time_unit::us));
      all->end_max = std::max(all->end_max, detail::unit_to_ns(part.dt.ts_max, time_unit::us));
    }
  }
  all->lines += s->lines;
}

// --fast on a file without DT fields everywhere: its lines counted.
void count_lines(detail::text_block &b) {
  auto r = std::make_unique<partial>();
  uint64_t n = 0;
  detail::for_each_line(b.text, [&n](std::string_view) {
    ++n;
    return true;
  });
  r->lines = n;
  b.result = std::move(r);
}

// One stat run over its inputs.
struct stat_job {
  bool fast = false;
  bool ok = true;
  partial all;
  std::vector<file_summary> summaries;
  std::vector<std::unique_ptr<detail::trace_file>> opened;
  detail::read_options opt = tool_read_options();

  void open_inputs(const std::vector<std::string> &files, uint64_t *bytes) {
    for (const auto &p : files) {
      auto f = std::make_unique<detail::trace_file>();
      if (!open_trace(p, f.get(), &ok)) continue;
      *bytes += f->size();
      opened.push_back(std::move(f));
    }
  }

  void read(detail::trace_file &f, progress &bar) {
    file_summary s;
    s.path = f.path();
    s.compressed = f.size();
    s.members = f.parts().size();
    s.dt_members = f.dt_members();
    if (print_plan_issues(f, f.path())) ok = false;
    if (fast && f.fully_described()) {
      read_dt_fields(f, &s, &all);
      bar.add(f.size());
      summaries.push_back(s);
      return;
    }
    const uint64_t bad_times = all.bad_times, bad_bytes = all.bad_bytes;
    std::function<void(detail::text_block &)> work = count_lines;
    if (!fast)
      work = [unit = detail::header_time_unit(f)](detail::text_block &b) { scan_block(b, unit); };
    detail::for_each_block(f, opt, work, [&](detail::text_block &b) {
      auto *r = static_cast<partial *>(b.result.get());
      s.lines += r->lines;
      s.text += b.text.size();
      all.merge(*r);
      for (const auto &i : b.issues) {
        error_line(f.path() + ": byte " + std::to_string(i.offset) + ": " + i.message);
        if (i.error) ok = false;
      }
      bar.add(b.in_bytes);
      f.release(b.in_offset, b.in_bytes);
    });
    if (all.bad_times > bad_times) {
      error_line(f.path() + ": " + std::to_string(all.bad_times - bad_times) +
                 " event(s) left out: a ts or dur that is no time in nanoseconds from 0 to "
                 "2^64-1 (negative, not a number, or ending past it)");
      ok = false;
    }
    if (all.bad_bytes > bad_bytes) {
      error_line(f.path() + ": " + std::to_string(all.bad_bytes - bad_bytes) +
                 " I/O event(s) left out of the I/O figures: a ret, size or bytes that is no "
                 "byte count (an integer up to 2^63-1; a negative ret is a failed call)");
      ok = false;
    }
    summaries.push_back(s);
  }
};

}  // namespace

int cmd_stat(const args_t &a) {
  stat_job j;
  const std::vector<std::string> files = input_files(a, "stat", &j.ok);
  if (files.empty()) return 2;
  j.fast = a.has("--fast");
  uint64_t total_bytes = 0;
  j.open_inputs(files, &total_bytes);
  progress bar("stat", total_bytes);
  for (auto &f : j.opened) j.read(*f, bar);
  bar.done();
  if (j.all.bytes_overflow) {
    error_line(
        "stat: the bytes of the I/O calls add up past 2^64-1: the byte figures are held at "
        "2^64-1, not exact");
    j.ok = false;
  }
  if (j.all.time_held()) {
    error_line(
        "stat: the durations of the events reach 2^64-1 ns: the time figures are held at "
        "2^64-1, not exact");
    j.ok = false;
  }
  if (j.all.calls_held()) {
    error_line(
        "stat: the calls of the events reach 2^64-1: the counts of calls are held at 2^64-1, "
        "not exact");
    j.ok = false;
  }
  const std::string out = stat::report(j.all, j.summaries, a.has("--json"), j.fast);
  fwrite(out.data(), 1, out.size(), stdout);
  fflush(stdout);
  return j.ok ? 0 : 1;
}

}  // namespace dftrace::tools
