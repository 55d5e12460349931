// cmd_stat.cpp: dftrace stat: counts and durations per category/name, pid and thread.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "analysis/io_class.hpp"
#include "base/format.hpp"
#include "common.hpp"
#include "reader/aggregated.hpp"
#include "reader/json_string.hpp"
#include "stat_counters.hpp"

namespace dftrace::tools {

namespace {

using analysis::io_bytes;
using analysis::io_direction;
using analysis::io_event_bytes;

struct name_stats {
  uint64_t count = 0;
  uint64_t total = 0;
  std::vector<uint64_t> durs;
};

struct span_stats {
  uint64_t events = 0;
  uint64_t ts_min = UINT64_MAX;
  uint64_t end_max = 0;
  void add(uint64_t ts, uint64_t end) {
    ++events;
    ts_min = std::min(ts_min, ts);
    end_max = std::max(end_max, end);
  }
  void merge(const span_stats &o) {
    events += o.events;
    ts_min = std::min(ts_min, o.ts_min);
    end_max = std::max(end_max, o.end_max);
  }
};

// The data one file moved through one layer (POSIX, STDIO, MPIIO, H5): bytes, calls and the
// time spent in them, reads and writes apart.
struct io_stats {
  uint64_t bytes[2] = {}, calls[2] = {}, ns[2] = {};  // [0] read, [1] write
  void merge(const io_stats &o) {
    for (int k = 0; k < 2; ++k) {
      bytes[k] += o.bytes[k];
      calls[k] += o.calls[k];
      ns[k] += o.ns[k];
    }
  }
};

// What one block (or the whole run) adds up to. Keys are the text the values stand for (JSON
// escapes decoded; an object or array in a hostile trace as its raw text).
struct partial : detail::block_result {
  uint64_t lines = 0;
  uint64_t objects = 0;
  uint64_t invalid = 0;
  uint64_t by_ph[128] = {};
  uint64_t dropped = 0;
  uint64_t aggregated = 0;  // aggregated records (DFTracer 2.x), folded into by_name
  uint64_t ts_min = UINT64_MAX;
  uint64_t end_max = 0;
  std::unordered_map<std::string, name_stats> names;  // cat '\x1f' name
  std::unordered_map<std::string, span_stats> pids;
  std::unordered_map<std::string, span_stats> threads;  // pid '\x1f' tid
  std::unordered_map<std::string, std::string> ranks;   // pid -> rank
  // The writer's budget and sample lines: kind '\x1f' name '\x1f' value (what it folded).
  std::set<std::string> limits;
  // The flight recorder's trigger lines: time '\x1f' pid '\x1f' source '\x1f' reason '\x1f'
  // from '\x1f' after (the window each wrote).
  std::set<std::string> triggers;
  std::unordered_map<std::string, io_stats> io;        // cat '\x1f' fhash
  std::unordered_map<std::string, std::string> files;  // fhash -> path (FH lines)
  counter_map counters;                                // counter series (stat_counters.hpp)

  void merge(partial &o) {
    lines += o.lines;
    objects += o.objects;
    invalid += o.invalid;
    for (int i = 0; i < 128; ++i) by_ph[i] += o.by_ph[i];
    dropped += o.dropped;
    aggregated += o.aggregated;
    ts_min = std::min(ts_min, o.ts_min);
    end_max = std::max(end_max, o.end_max);
    for (auto &kv : o.names) {
      auto &d = names[kv.first];
      d.count += kv.second.count;
      d.total += kv.second.total;
      if (d.durs.empty()) {
        d.durs = std::move(kv.second.durs);
      } else {
        d.durs.insert(d.durs.end(), kv.second.durs.begin(), kv.second.durs.end());
      }
    }
    for (auto &kv : o.pids) pids[kv.first].merge(kv.second);
    for (auto &kv : o.threads) threads[kv.first].merge(kv.second);
    for (auto &kv : o.ranks) ranks[kv.first] = kv.second;
    limits.insert(o.limits.begin(), o.limits.end());
    triggers.insert(o.triggers.begin(), o.triggers.end());
    for (auto &kv : o.io) io[kv.first].merge(kv.second);
    for (auto &kv : o.files) files.emplace(kv.first, std::move(kv.second));
    for (auto &kv : o.counters) counters[kv.first].merge(kv.second);
  }
};

void scan_block(detail::text_block &b, time_unit unit) {
  auto r = std::make_unique<partial>();
  parsed_line pl;
  std::string key, name_buf, cat_buf;
  span_stats *pid_stats = nullptr, *thread_stats = nullptr;
  std::string_view last_pid, last_tid;
  // Per (cat, name) as written: its stats, its decoded text (views of the map's key, which
  // stays where it is) and its I/O kind, worked out once.
  struct name_cache_entry {
    std::string_view cat, name;            // as written
    std::string_view cat_text, name_text;  // as meant
    name_stats *stats = nullptr;
    int dir = -1;
    io_bytes how = io_bytes::ret;
  } cache[16];
  const std::string_view text = b.whole_lines();
  detail::for_each_line(text, [&](std::string_view line) {
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
      const std::string_view mname = detail::string_text(pl.name, &name_buf);
      const jvalue *n = pl.arg_value("name");
      const jvalue *v = pl.arg_value("value");
      if (mname == "PR") {  // the MPI rank of a pid, when it is known
        if (n && v && detail::text_equals(*n, "rank") && v->type == jtype::number)
          r->ranks[std::string(pl.pid.text)] = std::string(v->text);
      } else if (mname == "FH") {  // a file's hash and its path
        if (n && v) r->files.emplace(detail::decoded(*v), detail::decoded(*n));
      } else if ((mname == "budget" || mname == "sample") &&
                 detail::text_equals(pl.cat, "dftracer")) {
        if (n && v)
          r->limits.insert(std::string(mname) + '\x1f' + detail::decoded(*n) + '\x1f' +
                           detail::decoded(*v));
      }
    }
    if (f.ph == 'M' && detail::text_equals(pl.name, "trigger") &&
        detail::text_equals(pl.cat, "dftracer")) {
      auto arg = [&pl](const char *k) {
        const jvalue *v = pl.arg_value(k);
        return v ? detail::decoded(*v) : std::string();
      };
      r->triggers.insert(arg("time") + '\x1f' + std::string(pl.pid.text) + '\x1f' + arg("name") +
                         '\x1f' + arg("value") + '\x1f' + arg("from") + '\x1f' + arg("after"));
    }
    if (!f.has_ts || f.ph == 'M') return true;
    if (f.ph == 'C') add_counter_line(pl, f.ts, &r->counters);
    const uint64_t end = f.ts + (f.has_dur ? f.dur : 0);
    r->ts_min = std::min(r->ts_min, f.ts);
    r->end_max = std::max(r->end_max, end);
    // Consecutive lines mostly share pid and tid: look the maps up only when they change.
    if (!pid_stats || pl.pid.text != last_pid) {
      key.assign(pl.pid.text);
      pid_stats = &r->pids[key];
      last_pid = pl.pid.text;
      thread_stats = nullptr;
    }
    pid_stats->add(f.ts, end);
    if (!thread_stats || pl.tid.text != last_tid) {
      key.assign(pl.pid.text);
      key.push_back('\x1f');
      key.append(pl.tid.text);
      thread_stats = &r->threads[key];
      last_tid = pl.tid.text;
    }
    thread_stats->add(f.ts, end);
    if (f.ph != 'X' && f.ph != 'A') return true;
    // A few names make most of a trace: a small direct-mapped cache in front of the map.
    const size_t slot = (pl.name.text.size() * 31 + (pl.name.text.empty() ? 0 : pl.name.text[0]) +
                         (pl.cat.text.empty() ? 0 : pl.cat.text[0]) * 7) &
                        15;
    name_cache_entry &ce = cache[slot];
    if (!ce.stats || ce.name != pl.name.text || ce.cat != pl.cat.text) {
      key.assign(detail::string_text(pl.cat, &cat_buf));
      key.push_back('\x1f');
      key.append(detail::string_text(pl.name, &name_buf));
      const auto it = r->names.try_emplace(key).first;
      ce.stats = &it->second;
      ce.name = pl.name.text;
      ce.cat = pl.cat.text;
      const size_t sep = it->first.find('\x1f');
      ce.cat_text = std::string_view(it->first).substr(0, sep);
      ce.name_text = std::string_view(it->first).substr(sep + 1);
      ce.dir = io_direction(ce.cat_text, ce.name_text, &ce.how);
    }
    name_stats &ns = *ce.stats;
    if (ce.name_text == "end" && ce.cat_text == "dftracer") {
      if (const jvalue *d = pl.arg_value("dropped_events")) {
        uint64_t v = 0;
        if (detail::value_u64(*d, &v)) r->dropped += v;
      }
    }
    const io_bytes how = ce.how;
    const int dir = ce.dir;
    if (dir >= 0) {
      if (const jvalue *fh = pl.arg_value("fhash")) {
        key.assign(ce.cat_text);
        key.push_back('\x1f');
        key.append(detail::string_text(*fh, &name_buf));
        io_stats &io = r->io[key];
        uint64_t n = 1, dur = f.dur;
        if (f.ph == 'A' && !detail::aggregated_calls(pl, unit, &n, &dur)) n = dur = 0;
        if (how == io_bytes::folded) {  // its span is not time in the calls, which is unknown
          const jvalue *c = pl.arg_value(f.ph == 'A' ? "calls_sum" : "calls");
          if (!c || !detail::value_u64(*c, &n)) n = 0;
          dur = 0;
        }
        io.calls[dir] += n;
        io.ns[dir] += dur;
        io.bytes[dir] += io_event_bytes(pl, how, f.ph == 'A');
      }
    }
    if (f.ph == 'A') {
      // DFTracer 2.x's aggregated record: dft_cnt events whose durations sum to dur_sum (or,
      // for one event or one value, "dur"); folded into the counts and totals exactly, not
      // into the percentiles (their single durations are not in the trace).
      uint64_t n = 0, sum = 0;
      if (!detail::aggregated_calls(pl, unit, &n, &sum)) return true;
      ++r->aggregated;
      ns.count += n;
      ns.total += sum;
      return true;
    }
    ++ns.count;
    ns.total += f.dur;
    ns.durs.push_back(f.dur);
    return true;
  });
  b.result = std::move(r);
}

uint64_t percentile(std::vector<uint64_t> &v, double q) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  if (k >= v.size()) k = v.size() - 1;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

struct file_summary {
  std::string path;
  uint64_t compressed = 0;
  uint64_t text = 0;
  uint64_t lines = 0;
  size_t members = 0;
  size_t dt_members = 0;
  bool lines_from_dt = false;
};

// The fields of a text joined by '\x1f'.
std::vector<std::string> split_fields(const std::string &t) {
  std::vector<std::string> f;
  size_t a = 0;
  for (size_t b; (b = t.find('\x1f', a)) != std::string::npos; a = b + 1)
    f.push_back(t.substr(a, b - a));
  f.push_back(t.substr(a));
  f.resize(6);
  return f;
}

// Keys hold decoded text: quoted and escaped anew.
std::string jstr(std::string_view s) { return detail::json_quote(s); }

// A pid/tid as JSON: a number when it is one (also when it was quoted, leading zeros and
// '+' dropped: "0677792" is 677792), else a string.
std::string jnum(std::string_view s) {
  std::string n;
  return detail::canonical_number(s, &n) ? n : jstr(s);
}

}  // namespace

int cmd_stat(const args_t &a) {
  bool ok = true;
  const std::vector<std::string> files = input_files(a, "stat", &ok);
  if (files.empty()) return 2;
  const bool json = a.has("--json");
  const bool fast = a.has("--fast");
  uint64_t total_bytes = 0;
  partial all;
  std::vector<file_summary> summaries;
  std::vector<std::unique_ptr<detail::trace_file>> opened;
  for (const auto &p : files) {
    auto f = std::make_unique<detail::trace_file>();
    if (!open_trace(p, f.get(), &ok)) continue;
    total_bytes += f->size();
    opened.push_back(std::move(f));
  }
  progress bar("stat", total_bytes);
  const detail::read_options opt = tool_read_options();
  for (auto &f : opened) {
    file_summary s;
    s.path = f->path();
    s.compressed = f->size();
    s.members = f->parts().size();
    s.dt_members = f->dt_members();
    if (print_plan_issues(*f, f->path())) ok = false;
    if (fast && f->fully_described()) {
      // O(members): the DT fields know the line counts, sizes and time ranges.
      s.lines_from_dt = true;
      for (const auto &part : f->parts()) {
        s.lines += part.dt.lines;
        s.text += part.dt.uncompressed_len;
        if (part.dt.ts_min || part.dt.ts_max) {  // DT times are epoch microseconds
          all.ts_min = std::min(all.ts_min, detail::unit_to_ns(part.dt.ts_min, time_unit::us));
          all.end_max = std::max(all.end_max, detail::unit_to_ns(part.dt.ts_max, time_unit::us));
        }
      }
      all.lines += s.lines;
      bar.add(f->size());
      summaries.push_back(s);
      continue;
    }
    std::function<void(detail::text_block &)> work;
    if (fast) {
      work = [](detail::text_block &b) {
        auto r = std::make_unique<partial>();
        uint64_t n = 0;
        detail::for_each_line(b.text, [&n](std::string_view) {
          ++n;
          return true;
        });
        r->lines = n;
        b.result = std::move(r);
      };
    } else {
      const time_unit unit = detail::header_time_unit(*f);
      work = [unit](detail::text_block &b) { scan_block(b, unit); };
    }
    detail::for_each_block(*f, opt, work, [&](detail::text_block &b) {
      auto *r = static_cast<partial *>(b.result.get());
      s.lines += r->lines;
      s.text += b.text.size();
      all.merge(*r);
      for (const auto &i : b.issues) {
        error_line(f->path() + ": byte " + std::to_string(i.offset) + ": " + i.message);
        if (i.error) ok = false;
      }
      bar.add(b.in_bytes);
      f->release(b.in_offset, b.in_bytes);
    });
    summaries.push_back(s);
  }
  bar.done();

  // Sorted views.
  struct name_row {
    std::string cat, name;
    uint64_t count, total, p50, p99;
  };
  std::vector<name_row> rows;
  for (auto &kv : all.names) {
    const size_t sep = kv.first.find('\x1f');
    name_row r{kv.first.substr(0, sep),
               kv.first.substr(sep + 1),
               kv.second.count,
               kv.second.total,
               percentile(kv.second.durs, 0.50),
               percentile(kv.second.durs, 0.99)};
    rows.push_back(r);
  }
  std::sort(rows.begin(), rows.end(), [](const name_row &x, const name_row &y) {
    if (x.total != y.total) return x.total > y.total;
    if (x.cat != y.cat) return x.cat < y.cat;
    return x.name < y.name;
  });
  // I/O per file and layer, most bytes first.
  struct io_row {
    std::string cat, fhash, path;
    io_stats s;
  };
  std::vector<io_row> io_rows;
  for (auto &kv : all.io) {
    const size_t sep = kv.first.find('\x1f');
    io_row r{kv.first.substr(0, sep), kv.first.substr(sep + 1), "", kv.second};
    const auto f = all.files.find(r.fhash);
    r.path = f == all.files.end() ? "" : f->second;
    io_rows.push_back(std::move(r));
  }
  std::sort(io_rows.begin(), io_rows.end(), [](const io_row &x, const io_row &y) {
    const uint64_t a = x.s.bytes[0] + x.s.bytes[1], b = y.s.bytes[0] + y.s.bytes[1];
    if (a != b) return a > b;
    return x.cat != y.cat ? x.cat < y.cat : x.path < y.path;
  });
  // MB/s while in the calls (bytes over the time the calls took); 0 without time.
  auto mbps = [](uint64_t bytes, uint64_t ns) {
    return ns ? static_cast<double>(bytes) * 1e3 / static_cast<double>(ns) : 0.0;
  };
  std::map<std::string, span_stats> pids(all.pids.begin(), all.pids.end());
  std::map<std::string, span_stats> threads(all.threads.begin(), all.threads.end());
  uint64_t lines = 0, text = 0;
  for (auto &s : summaries) {
    lines += s.lines;
    text += s.text;
  }
  const bool have_span = all.ts_min != UINT64_MAX;
  const uint64_t span = have_span && all.end_max > all.ts_min ? all.end_max - all.ts_min : 0;

  std::string out;
  char buf[512];
  if (json) {
    out += "{\"files\":[";
    for (size_t i = 0; i < summaries.size(); ++i) {
      const auto &s = summaries[i];
      snprintf(buf, sizeof buf,
               "%s{\"path\":%s,\"compressed_bytes\":%" PRIu64 ",\"text_bytes\":%" PRIu64
               ",\"lines\":%" PRIu64 ",\"members\":%zu,\"dt_members\":%zu,\"lines_from_dt\":%s}",
               i ? "," : "", detail::json_quote(s.path).c_str(), s.compressed, s.text, s.lines,
               s.members, s.dt_members, s.lines_from_dt ? "true" : "false");
      out += buf;
    }
    snprintf(buf, sizeof buf,
             "],\"lines\":%" PRIu64 ",\"text_bytes\":%" PRIu64 ",\"events\":%" PRIu64
             ",\"complete_events\":%" PRIu64 ",\"metadata\":%" PRIu64 ",\"counters\":%" PRIu64
             ",\"instants\":%" PRIu64 ",\"invalid_lines\":%" PRIu64 ",\"dropped_events\":%" PRIu64,
             lines, text, all.objects, all.by_ph['X'], all.by_ph['M'], all.by_ph['C'],
             all.by_ph['i'] + all.by_ph['I'], all.invalid, all.dropped);
    out += buf;
    out += ",\"aggregated_records\":" + std::to_string(all.aggregated) + ",\"folded_names\":[";
    for (const std::string &l : all.limits) {
      const size_t a = l.find('\x1f'), b = l.find('\x1f', a + 1);
      out += (&l == &*all.limits.begin() ? "{\"kind\":" : ",{\"kind\":") + jstr(l.substr(0, a)) +
             ",\"name\":" + jstr(l.substr(a + 1, b - a - 1)) +
             ",\"value\":" + jstr(l.substr(b + 1)) + "}";
    }
    out += "],\"triggers\":[";
    for (const std::string &t : all.triggers) {
      const std::vector<std::string> f = split_fields(t);
      out += std::string(&t == &*all.triggers.begin() ? "" : ",") + "{\"time\":" + f[0] +
             ",\"pid\":" + f[1] + ",\"source\":" + jstr(f[2]) + ",\"reason\":" + jstr(f[3]) +
             ",\"from\":" + f[4] + ",\"after\":" + jstr(f[5]) + "}";
    }
    out += "]";
    if (have_span) {
      out += ",\"ts_min\":" + us_text(all.ts_min) + ",\"ts_end\":" + us_text(all.end_max) +
             ",\"span_us\":" + us_text(span) + ",\"span_ns\":" + std::to_string(span);
    }
    out += ",\"by_name\":[";
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto &r = rows[i];
      // Names and ids are appended, not formatted: a long one must not be cut (invalid JSON).
      out += i ? ",{\"cat\":" : "{\"cat\":";
      out += jstr(r.cat) + ",\"name\":" + jstr(r.name);
      snprintf(buf, sizeof buf, ",\"count\":%" PRIu64 ",\"total_us\":", r.count);
      out += buf;
      out += us_text(r.total);
      snprintf(buf, sizeof buf, ",\"total_ns\":%" PRIu64 ",\"mean_us\":%.3f,\"p50_us\":", r.total,
               r.count ? static_cast<double>(r.total) / r.count / 1e3 : 0.0);
      out += buf;
      out += us_text(r.p50) + ",\"p99_us\":" + us_text(r.p99) + "}";
    }
    // One {"pid":..., [rank or tid,] "events", "ts_min", "ts_end"} entry per process or thread.
    auto entry = [&](bool first, const std::string &ids, const auto &span) {
      out += first ? "{\"pid\":" : ",{\"pid\":";
      out += ids;
      out += ",\"events\":" + std::to_string(span.events) + ",\"ts_min\":" + us_text(span.ts_min) +
             ",\"ts_end\":" + us_text(span.end_max) + "}";
    };
    out += "],\"io_files\":[";
    for (size_t i = 0; i < io_rows.size(); ++i) {
      const io_row &r = io_rows[i];
      out += i ? ",{\"cat\":" : "{\"cat\":";
      out += jstr(r.cat) + ",\"fhash\":" + jstr(r.fhash) +
             ",\"path\":" + (r.path.empty() ? std::string("null") : jstr(r.path));
      for (int k = 0; k < 2; ++k) {
        const char *d = k ? "write" : "read";
        snprintf(buf, sizeof buf,
                 ",\"%s_bytes\":%" PRIu64 ",\"%s_calls\":%" PRIu64 ",\"%s_ns\":%" PRIu64
                 ",\"%s_mb_per_s\":%.3f",
                 d, r.s.bytes[k], d, r.s.calls[k], d, r.s.ns[k], d, mbps(r.s.bytes[k], r.s.ns[k]));
        out += buf;
      }
      out += "}";
    }
    out += "],\"counter_series\":[" + format_counters(all.counters, true);
    out += "],\"by_pid\":[";
    bool first = true;
    for (auto &kv : pids) {
      auto rk = all.ranks.find(kv.first);
      entry(first, jnum(kv.first) + ",\"rank\":" + (rk == all.ranks.end() ? "null" : rk->second),
            kv.second);
      first = false;
    }
    out += "],\"by_thread\":[";
    first = true;
    for (auto &kv : threads) {
      const size_t sep = kv.first.find('\x1f');
      entry(first, jnum(kv.first.substr(0, sep)) + ",\"tid\":" + jnum(kv.first.substr(sep + 1)),
            kv.second);
      first = false;
    }
    out += "]}\n";
  } else {
    snprintf(buf, sizeof buf, "%zu file(s), %" PRIu64 " lines, %.1f MB of text", summaries.size(),
             lines, text / 1e6);
    out += buf;
    size_t from_dt = 0;
    for (auto &s : summaries) from_dt += s.lines_from_dt;
    if (from_dt) {
      snprintf(buf, sizeof buf, " (%zu counted from DT fields)", from_dt);
      out += buf;
    }
    out += "\n";
    if (!fast) {
      snprintf(buf, sizeof buf,
               "events: %" PRIu64 " complete, %" PRIu64 " counters, %" PRIu64 " instants, %" PRIu64
               " metadata; %" PRIu64 " invalid lines; %" PRIu64 " dropped events\n",
               all.by_ph['X'], all.by_ph['C'], all.by_ph['i'] + all.by_ph['I'], all.by_ph['M'],
               all.invalid, all.dropped);
      out += buf;
      if (all.aggregated) {
        snprintf(buf, sizeof buf,
                 "%" PRIu64 " aggregated records, folded into the counts and totals below\n",
                 all.aggregated);
        out += buf;
      }
      for (const std::string &l : all.limits) {  // what a budget or sampling folded, and why
        const size_t a = l.find('\x1f'), b = l.find('\x1f', a + 1);
        out += l.substr(0, a) + " " + l.substr(a + 1, b - a - 1) + ": " + l.substr(b + 1) + "\n";
      }
      for (const std::string &t : all.triggers) {  // the flight recorder's captured windows
        const std::vector<std::string> f = split_fields(t);
        out += "trigger at " + f[0] + " (pid " + f[1] + "): " + f[2] + ": " + f[3] +
               "; window from " + f[4] + ", then full detail for " + f[5] + "\n";
      }
    }
    if (have_span) {
      snprintf(buf, sizeof buf, "time span: %.6f s (ts %s .. %s us)\n", span / 1e9,
               us_text(all.ts_min).c_str(), us_text(all.end_max).c_str());
      out += buf;
    }
    if (!rows.empty()) {
      snprintf(buf, sizeof buf, "\n%-14s %-28s %10s %14s %12s %10s %10s\n", "cat", "name", "count",
               "total_ms", "mean_us", "p50_us", "p99_us");
      out += buf;
      for (const auto &r : rows) {
        snprintf(buf, sizeof buf, "%-14s %-28s %10" PRIu64 " %14.3f %12.2f %10s %10s\n",
                 r.cat.c_str(), r.name.c_str(), r.count, r.total / 1e6,
                 r.count ? static_cast<double>(r.total) / r.count / 1e3 : 0.0,
                 us_text(r.p50).c_str(), us_text(r.p99).c_str());
        out += buf;
      }
    }
    if (!io_rows.empty()) {
      const size_t shown = std::min<size_t>(io_rows.size(), 20);
      snprintf(buf, sizeof buf,
               "\nI/O by file (%zu of %zu; MB/s: bytes over the time in the calls)\n"
               "%-6s %12s %8s %9s %12s %8s %9s  %s\n",
               shown, io_rows.size(), "cat", "read_MB", "reads", "read_MB/s", "write_MB", "writes",
               "write_MB/s", "file");
      out += buf;
      uint64_t tb[2] = {}, tn[2] = {};
      for (size_t i = 0; i < io_rows.size(); ++i) {
        const io_row &r = io_rows[i];
        for (int k = 0; k < 2; ++k) {
          tb[k] += r.s.bytes[k];
          tn[k] += r.s.ns[k];
        }
        if (i >= shown) continue;
        snprintf(buf, sizeof buf, "%-6s %12.3f %8" PRIu64 " %9.1f %12.3f %8" PRIu64 " %9.1f  ",
                 r.cat.c_str(), r.s.bytes[0] / 1e6, r.s.calls[0], mbps(r.s.bytes[0], r.s.ns[0]),
                 r.s.bytes[1] / 1e6, r.s.calls[1], mbps(r.s.bytes[1], r.s.ns[1]));
        out += buf;
        out += (r.path.empty() ? "fhash " + r.fhash : r.path) + "\n";
      }
      snprintf(buf, sizeof buf, "%-6s %12.3f %8s %9.1f %12.3f %8s %9.1f  (all files, all layers)\n",
               "total", tb[0] / 1e6, "", mbps(tb[0], tn[0]), tb[1] / 1e6, "", mbps(tb[1], tn[1]));
      out += buf;
    }
    out += format_counters(all.counters, false);
    if (!pids.empty()) {
      snprintf(buf, sizeof buf, "\n%-12s %-6s %-12s %10s %14s\n", "pid", "rank", "tid", "events",
               "span_s");
      out += buf;
      for (auto &kv : pids) {
        auto rk = all.ranks.find(kv.first);
        snprintf(buf, sizeof buf, "%-12s %-6s %-12s %10" PRIu64 " %14.6f\n", kv.first.c_str(),
                 rk == all.ranks.end() ? "-" : rk->second.c_str(), "*", kv.second.events,
                 (kv.second.end_max - kv.second.ts_min) / 1e9);
        out += buf;
        const std::string prefix = kv.first + '\x1f';
        for (auto it = threads.lower_bound(prefix);
             it != threads.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
          snprintf(buf, sizeof buf, "%-12s %-6s %-12s %10" PRIu64 " %14.6f\n", "", "",
                   it->first.substr(prefix.size()).c_str(), it->second.events,
                   (it->second.end_max - it->second.ts_min) / 1e9);
          out += buf;
        }
      }
    }
  }
  fwrite(out.data(), 1, out.size(), stdout);
  fflush(stdout);
  return ok ? 0 : 1;
}

}  // namespace dftrace::tools
