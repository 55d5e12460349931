// stat_counters.hpp: `dftrace stat`'s counter series ("ph":"C" lines): per category, name and
// series, the number of samples, their least and greatest value, and the value of the latest.
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <unordered_map>

#include "base/format.hpp"
#include "reader/json_string.hpp"
#include "reader/line_parser.hpp"

namespace dftrace::tools {

struct counter_series {
  uint64_t count = 0;
  double min = 0, max = 0, last = 0;
  uint64_t last_ts = 0;
  void add(double v, uint64_t ts) {
    if (count == 0 || v < min) min = v;
    if (count == 0 || v > max) max = v;
    if (count == 0 || ts >= last_ts) last = v, last_ts = ts;
    ++count;
  }
  void merge(const counter_series &o) {
    if (o.count == 0) return;
    if (count == 0) {
      *this = o;
      return;
    }
    min = std::min(min, o.min);
    max = std::max(max, o.max);
    if (o.last_ts >= last_ts) last = o.last, last_ts = o.last_ts;
    count += o.count;
  }
};

// cat '\x1f' name '\x1f' series -> its samples, over every process of the traces.
using counter_map = std::unordered_map<std::string, counter_series>;

// Each numeric series of one counter line.
inline void add_counter_line(const detail::parsed_line &pl, uint64_t ts, counter_map *out) {
  std::string key, buf;
  for (int i = 0; i < pl.nargs; ++i) {
    const auto &a = pl.args_kv[i];
    if (a.value.type != detail::jtype::number) continue;
    key.assign(detail::string_text(pl.cat, &buf));
    key += '\x1f';
    key.append(detail::string_text(pl.name, &buf));
    key += '\x1f';
    key.append(a.key);
    (*out)[key].add(std::strtod(std::string(a.value.text).c_str(), nullptr), ts);
  }
}

inline std::string counter_number(double v) {
  char b[32];
  snprintf(b, sizeof b, "%.17g", v);
  return b;
}

// The series in key order: JSON objects (json) or a table.
inline std::string format_counters(const counter_map &m, bool json) {
  auto jstr = [](const std::string &t) { return detail::json_quote(t); };
  const std::map<std::string, counter_series> sorted(m.begin(), m.end());
  std::string out;
  char buf[512];
  if (!json && !sorted.empty()) {
    snprintf(buf, sizeof buf, "\ncounters\n%-8s %-24s %-22s %8s %14s %14s %14s\n", "cat", "name",
             "series", "count", "min", "max", "last");
    out += buf;
  }
  bool first = true;
  for (const auto &kv : sorted) {
    const size_t a = kv.first.find('\x1f'), b = kv.first.find('\x1f', a + 1);
    const std::string cat = kv.first.substr(0, a), name = kv.first.substr(a + 1, b - a - 1),
                      series = kv.first.substr(b + 1);
    const counter_series &s = kv.second;
    if (json) {
      out += (first ? "{\"cat\":" : ",{\"cat\":") + jstr(cat) + ",\"name\":" + jstr(name) +
             ",\"series\":" + jstr(series) + ",\"count\":" + std::to_string(s.count) +
             ",\"min\":" + counter_number(s.min) + ",\"max\":" + counter_number(s.max) +
             ",\"last\":" + counter_number(s.last) + "}";
    } else {
      snprintf(buf, sizeof buf, "%-8s %-24s %-22s %8" PRIu64 " %14.12g %14.12g %14.12g\n",
               cat.c_str(), name.c_str(), series.c_str(), s.count, s.min, s.max, s.last);
      out += buf;
    }
    first = false;
  }
  return out;
}

}  // namespace dftrace::tools
