// diff_json.cpp: the JSON document of two runs compared.
#include "analysis/diff_json.hpp"

#include <cmath>
#include <cstdio>
#include <map>

#include "base/format.hpp"

namespace dftrace::analysis {

std::string diff_json_number(double x) {
  if (!std::isfinite(x)) return "null";
  char buf[48];
  if (x == std::floor(x) && std::fabs(x) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", x);
  else
    std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

namespace {

void name_json(std::string &o, const std::map<std::string, name_summary> &names,
               const std::string &key) {
  const auto it = names.find(key);
  if (it == names.end()) {
    o += "null";
    return;
  }
  const name_summary &n = it->second;
  o += "{\"calls\":" + std::to_string(n.calls) + ",\"total_ns\":" + std::to_string(n.total) +
       ",\"mean_ns\":" + diff_json_number(n.calls ? double(n.total) / double(n.calls) : 0) +
       ",\"p50_ns\":" + std::to_string(n.p50) + ",\"p99_ns\":" + std::to_string(n.p99) + "}";
}

}  // namespace

void diff_json(std::string &o, const std::vector<metric> &ms, const run_summary &base,
               const run_summary &now, const std::vector<std::string> &appeared,
               const std::vector<std::string> &vanished, const std::vector<std::string> &failed) {
  using detail::json_quote;
  o += "{\"version\":1,\"base\":{\"events\":" + std::to_string(base.events) +
       "},\"new\":{\"events\":" + std::to_string(now.events) + "},\"metrics\":{";
  bool first = true;
  for (const metric &m : ms) {
    if (is_name_metric(m.key)) continue;
    o += std::string(first ? "" : ",") + json_quote(m.key) +
         ":{\"base\":" + diff_json_number(m.base) + ",\"new\":" + diff_json_number(m.now) +
         ",\"change\":" + diff_json_number(m.change()) +
         ",\"change_pct\":" + diff_json_number(m.change_pct()) + "}";
    first = false;
  }
  o += "},\"names\":[";
  std::map<std::string, bool> keys;
  for (const auto &kv : base.names) keys[kv.first] = true;
  for (const auto &kv : now.names) keys[kv.first] = true;
  first = true;
  for (const auto &kv : keys) {
    o += std::string(first ? "" : ",") + "{\"name\":" + json_quote(kv.first) + ",\"base\":";
    name_json(o, base.names, kv.first);
    o += ",\"new\":";
    name_json(o, now.names, kv.first);
    o += "}";
    first = false;
  }
  auto list = [&](const char *k, const std::vector<std::string> &v) {
    o += std::string("],\"") + k + "\":[";
    for (size_t i = 0; i < v.size(); ++i) o += (i ? "," : "") + json_quote(v[i]);
  };
  list("appeared", appeared);
  list("vanished", vanished);
  list("failed", failed);
  o += "]}\n";
}

}  // namespace dftrace::analysis
