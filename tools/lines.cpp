// lines.cpp: the fields, times and references the commands read from lines.
#include "lines.hpp"

#include <cstdio>

namespace dftrace::tools {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

event_fields fields_of(const parsed_line &pl, time_unit unit) {
  event_fields f;
  f.ok = pl.error == nullptr;
  f.ph = detail::phase(pl);
  if (pl.ts.present() && detail::value_ns(pl.ts, unit, &f.ts)) f.has_ts = true;
  if (pl.dur.present() && detail::value_ns(pl.dur, unit, &f.dur)) f.has_dur = true;
  return f;
}

std::string us_text(uint64_t ns) {
  std::string s = std::to_string(ns / 1000);
  if (const uint64_t f = ns % 1000) {
    char buf[8];
    std::snprintf(buf, sizeof buf, ".%03u", static_cast<unsigned>(f));
    s += buf;
    while (s.back() == '0') s.pop_back();
  }
  return s;
}

bool declares_unit(std::string_view line) {
  if (line.find("\"time_metric\"") == std::string_view::npos) return false;
  parsed_line pl;
  time_unit u;
  return detail::parse_line(line, pl) && pl.name.text == "PR" && detail::declares_time_unit(pl, &u);
}

void hash_refs(const parsed_line &pl, std::vector<std::string_view> *out) {
  for (int i = 0; i < pl.nargs; ++i) {
    const auto &kv = pl.args_kv[i];
    if (!detail::is_hash_ref_key(kv.key)) continue;
    if (kv.value.type == jtype::number || kv.value.type == jtype::string)
      out->push_back(kv.value.text);
  }
}

}  // namespace dftrace::tools
