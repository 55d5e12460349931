// stat_report.cpp: dftrace stat's report: the sorted views of what was added up, as JSON or
// as text.
#include <cinttypes>
#include <cstdio>
#include <map>

#include "base/format.hpp"
#include "lines.hpp"
#include "stat.hpp"

namespace dftrace::tools::stat {

namespace {

uint64_t percentile(std::vector<uint64_t> &v, double q) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  if (k >= v.size()) k = v.size() - 1;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

// A trigger's window ends where its trigger_end line says, or with the trace (`otherwise`).
std::string window_end(const partial &all, const std::vector<std::string> &f,
                       const char *otherwise) {
  if (!f[6].empty()) return f[6];  // an attach window says its end ("to")
  const auto e = all.trigger_ends.find(f[1] + '\x1f' + f[0]);
  return e == all.trigger_ends.end() ? otherwise : e->second;
}

// The fields of a text joined by '\x1f'.
std::vector<std::string> split_fields(const std::string &t) {
  std::vector<std::string> f;
  size_t a = 0;
  for (size_t b; (b = t.find('\x1f', a)) != std::string::npos; a = b + 1)
    f.push_back(t.substr(a, b - a));
  f.push_back(t.substr(a));
  f.resize(7);
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

// MB/s while in the calls (bytes over the time the calls took); 0 without time.
double mbps(uint64_t bytes, uint64_t ns) {
  return ns ? static_cast<double>(bytes) * 1e3 / static_cast<double>(ns) : 0.0;
}

// The sorted views of what was added up.
struct views {
  struct name_row {
    std::string cat, name;
    uint64_t count, total, p50, p99;
  };
  std::vector<name_row> rows;  // most time first
  // I/O per file and layer, most bytes first.
  struct io_row {
    std::string cat, fhash, path;
    io_stats s;
  };
  std::vector<io_row> io_rows;
  std::map<std::string, span_stats> pids, threads;
  uint64_t lines = 0, text = 0;
  bool have_span = false;
  uint64_t span = 0;
  bool fast = false;

  views(partial &all, const std::vector<file_summary> &summaries) {
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
    for (auto &kv : all.io) {
      const size_t sep = kv.first.find('\x1f');
      io_row r{kv.first.substr(0, sep), kv.first.substr(sep + 1), "", kv.second};
      const auto f = all.files.find(r.fhash);
      r.path = f == all.files.end() ? "" : f->second;
      io_rows.push_back(std::move(r));
    }
    std::sort(io_rows.begin(), io_rows.end(), [](const io_row &x, const io_row &y) {
      uint64_t a = x.s.bytes[0], b = y.s.bytes[0];  // held at 2^64-1, never wrapped
      analysis::add_bytes(&a, x.s.bytes[1]);
      analysis::add_bytes(&b, y.s.bytes[1]);
      if (a != b) return a > b;
      return x.cat != y.cat ? x.cat < y.cat : x.path < y.path;
    });
    pids.insert(all.pids.begin(), all.pids.end());
    threads.insert(all.threads.begin(), all.threads.end());
    for (auto &s : summaries) {
      lines += s.lines;
      text += s.text;
    }
    have_span = all.ts_min != UINT64_MAX;
    span = have_span && all.end_max > all.ts_min ? all.end_max - all.ts_min : 0;
  }
};

// --json: the files, the counts, what was folded, the triggers and the span.
void json_head(const partial &all, const std::vector<file_summary> &summaries, const views &v,
               std::string &out) {
  char buf[512];
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
           v.lines, v.text, all.objects, all.by_ph['X'], all.by_ph['M'], all.by_ph['C'],
           all.by_ph['i'] + all.by_ph['I'], all.invalid, all.dropped);
  out += buf;
  out += ",\"aggregated_records\":" + std::to_string(all.aggregated) + ",\"folded_names\":[";
  for (const std::string &l : all.limits) {
    const size_t a = l.find('\x1f'), b = l.find('\x1f', a + 1);
    out += (&l == &*all.limits.begin() ? "{\"kind\":" : ",{\"kind\":") + jstr(l.substr(0, a)) +
           ",\"name\":" + jstr(l.substr(a + 1, b - a - 1)) + ",\"value\":" + jstr(l.substr(b + 1)) +
           "}";
  }
  out += "],\"triggers\":[";
  for (const std::string &t : all.triggers) {
    const std::vector<std::string> f = split_fields(t);
    out += std::string(&t == &*all.triggers.begin() ? "" : ",") + "{\"time\":" + f[0] +
           ",\"pid\":" + f[1] + ",\"source\":" + jstr(f[2]) + ",\"reason\":" + jstr(f[3]) +
           ",\"from\":" + f[4] + ",\"to\":" + window_end(all, f, "null") +
           ",\"after\":" + jstr(f[5]) + "}";
  }
  out += "]";
  if (v.have_span) {
    out += ",\"ts_min\":" + us_text(all.ts_min) + ",\"ts_end\":" + us_text(all.end_max) +
           ",\"span_us\":" + us_text(v.span) + ",\"span_ns\":" + std::to_string(v.span);
  }
}

// --json: per name, per file of I/O, per process and per thread.
void json_tables(const partial &all, const views &v, std::string &out) {
  char buf[512];
  out += ",\"by_name\":[";
  for (size_t i = 0; i < v.rows.size(); ++i) {
    const auto &r = v.rows[i];
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
  auto entry = [&](bool first, const std::string &ids, const auto &sp) {
    out += first ? "{\"pid\":" : ",{\"pid\":";
    out += ids;
    out += ",\"events\":" + std::to_string(sp.events) + ",\"ts_min\":" + us_text(sp.ts_min) +
           ",\"ts_end\":" + us_text(sp.end_max) + "}";
  };
  out += "],\"io_files\":[";
  for (size_t i = 0; i < v.io_rows.size(); ++i) {
    const views::io_row &r = v.io_rows[i];
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
  for (auto &kv : v.pids) {
    auto rk = all.ranks.find(kv.first);
    entry(first, jnum(kv.first) + ",\"rank\":" + (rk == all.ranks.end() ? "null" : rk->second),
          kv.second);
    first = false;
  }
  out += "],\"by_thread\":[";
  first = true;
  for (auto &kv : v.threads) {
    const size_t sep = kv.first.find('\x1f');
    entry(first, jnum(kv.first.substr(0, sep)) + ",\"tid\":" + jnum(kv.first.substr(sep + 1)),
          kv.second);
    first = false;
  }
  out += "]}\n";
}

// The files, the counts, what was folded, the triggers and the span, as text.
void text_head(const partial &all, const std::vector<file_summary> &summaries, const views &v,
               std::string &out) {
  char buf[512];
  snprintf(buf, sizeof buf, "%zu file(s), %" PRIu64 " lines, %.1f MB of text", summaries.size(),
           v.lines, v.text / 1e6);
  out += buf;
  size_t from_dt = 0;
  for (auto &s : summaries) from_dt += s.lines_from_dt;
  if (from_dt) {
    snprintf(buf, sizeof buf, " (%zu counted from DT fields)", from_dt);
    out += buf;
  }
  out += "\n";
  if (!v.fast) {
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
             "; window from " + f[4] + " to " + window_end(all, f, "the end of the trace") +
             " (full detail for " + f[5] + " after the trigger)\n";
    }
  }
  if (v.have_span) {
    snprintf(buf, sizeof buf, "time span: %.6f s (ts %s .. %s us)\n", v.span / 1e9,
             us_text(all.ts_min).c_str(), us_text(all.end_max).c_str());
    out += buf;
  }
}

// The table per category and name.
void text_names(const views &v, std::string &out) {
  if (v.rows.empty()) return;
  char buf[512];
  snprintf(buf, sizeof buf, "\n%-14s %-28s %10s %14s %12s %10s %10s\n", "cat", "name", "count",
           "total_ms", "mean_us", "p50_us", "p99_us");
  out += buf;
  for (const auto &r : v.rows) {
    snprintf(buf, sizeof buf, "%-14s %-28s %10" PRIu64 " %14.3f %12.2f %10s %10s\n", r.cat.c_str(),
             r.name.c_str(), r.count, r.total / 1e6,
             r.count ? static_cast<double>(r.total) / r.count / 1e3 : 0.0, us_text(r.p50).c_str(),
             us_text(r.p99).c_str());
    out += buf;
  }
}

// The table of I/O per file (the 20 with most bytes, and the total).
void text_io(const views &v, std::string &out) {
  if (v.io_rows.empty()) return;
  char buf[512];
  const size_t shown = std::min<size_t>(v.io_rows.size(), 20);
  snprintf(buf, sizeof buf,
           "\nI/O by file (%zu of %zu; MB/s: bytes over the time in the calls)\n"
           "%-6s %12s %8s %9s %12s %8s %9s  %s\n",
           shown, v.io_rows.size(), "cat", "read_MB", "reads", "read_MB/s", "write_MB", "writes",
           "write_MB/s", "file");
  out += buf;
  uint64_t tb[2] = {}, tn[2] = {};
  for (size_t i = 0; i < v.io_rows.size(); ++i) {
    const views::io_row &r = v.io_rows[i];
    for (int k = 0; k < 2; ++k) {
      analysis::add_bytes(&tb[k], r.s.bytes[k]);
      analysis::add_ns(&tn[k], r.s.ns[k]);
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

// The table per process and thread.
void text_pids(const partial &all, const views &v, std::string &out) {
  if (v.pids.empty()) return;
  char buf[512];
  snprintf(buf, sizeof buf, "\n%-12s %-6s %-12s %10s %14s\n", "pid", "rank", "tid", "events",
           "span_s");
  out += buf;
  for (auto &kv : v.pids) {
    auto rk = all.ranks.find(kv.first);
    snprintf(buf, sizeof buf, "%-12s %-6s %-12s %10" PRIu64 " %14.6f\n", kv.first.c_str(),
             rk == all.ranks.end() ? "-" : rk->second.c_str(), "*", kv.second.events,
             (kv.second.end_max - kv.second.ts_min) / 1e9);
    out += buf;
    const std::string prefix = kv.first + '\x1f';
    for (auto it = v.threads.lower_bound(prefix);
         it != v.threads.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      snprintf(buf, sizeof buf, "%-12s %-6s %-12s %10" PRIu64 " %14.6f\n", "", "",
               it->first.substr(prefix.size()).c_str(), it->second.events,
               (it->second.end_max - it->second.ts_min) / 1e9);
      out += buf;
    }
  }
}

}  // namespace

std::string report(partial &all, const std::vector<file_summary> &summaries, bool json, bool fast) {
  views v(all, summaries);
  v.fast = fast;
  std::string out;
  if (json) {
    json_head(all, summaries, v, out);
    json_tables(all, v, out);
    return out;
  }
  text_head(all, summaries, v, out);
  text_names(v, out);
  text_io(v, out);
  out += format_counters(all.counters, false);
  text_pids(all, v, out);
  return out;
}

}  // namespace dftrace::tools::stat
