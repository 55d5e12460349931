// diff.cpp: the figures of two runs side by side, and the gates on their changes.
#include "analysis/diff.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace dftrace::analysis {

double metric::change_pct() const {
  if (base == 0) return now == 0 ? 0 : (now > 0 ? 1 : -1) * std::numeric_limits<double>::infinity();
  return (now - base) * 100.0 / std::fabs(base);
}

namespace {

double share(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// Bytes per second while in the calls.
double bandwidth(uint64_t bytes, uint64_t ns) {
  return ns ? static_cast<double>(bytes) * 1e9 / static_cast<double>(ns) : 0.0;
}

std::vector<std::pair<std::string, double>> run_figures(const run_summary &s) {
  const analysis_result &r = s.r;
  std::vector<std::pair<std::string, double>> v;
  auto d = [](uint64_t x) { return static_cast<double>(x); };
  v.emplace_back("events", d(s.events));
  v.emplace_back("step.count", d(s.steps));
  v.emplace_back("step.p50", d(r.step_p50));
  v.emplace_back("step.p99", d(r.step_p99));
  v.emplace_back("step.mean", s.steps ? d(r.step_total) / d(s.steps) : 0);
  for (size_t k = 0; k <= k_nbound; ++k)
    v.emplace_back(std::string("bound_by.") + (k < k_nbound ? k_bound_classes[k] : "other"),
                   share(r.bound_total[k], r.step_total));
  const io_summary &io = r.io;
  v.emplace_back("io.read_bytes", d(io.bytes[0]));
  v.emplace_back("io.write_bytes", d(io.bytes[1]));
  v.emplace_back("io.read_bandwidth", bandwidth(io.bytes[0], io.ns[0]));
  v.emplace_back("io.write_bandwidth", bandwidth(io.bytes[1], io.ns[1]));
  v.emplace_back("io.data_ns", d(io.data_ns));
  v.emplace_back("io.metadata_ns", d(io.meta_ns));
  for (const auto &kv : s.names) {
    const name_summary &n = kv.second;
    v.emplace_back(kv.first + ".calls", d(n.calls));
    v.emplace_back(kv.first + ".total", d(n.total));
    v.emplace_back(kv.first + ".mean", n.calls ? d(n.total) / d(n.calls) : 0);
    v.emplace_back(kv.first + ".p50", d(n.p50));
    v.emplace_back(kv.first + ".p99", d(n.p99));
  }
  return v;
}

}  // namespace

std::vector<metric> compare_runs(const run_summary &base, const run_summary &now) {
  std::vector<metric> out;
  std::map<std::string, size_t> at;
  for (const auto &kv : run_figures(base)) {
    metric m;
    m.key = kv.first;
    m.base = kv.second;
    m.in_new = false;
    at[m.key] = out.size();
    out.push_back(m);
  }
  for (const auto &kv : run_figures(now)) {
    const auto it = at.find(kv.first);
    if (it != at.end()) {
      out[it->second].now = kv.second;
      out[it->second].in_new = true;
      continue;
    }
    metric m;
    m.key = kv.first;
    m.now = kv.second;
    m.in_base = false;
    out.push_back(m);
  }
  return out;
}

void appeared_vanished(const run_summary &base, const run_summary &now,
                       std::vector<std::string> *appeared, std::vector<std::string> *vanished) {
  for (const auto &kv : now.names)
    if (!base.names.count(kv.first)) appeared->push_back(kv.first);
  for (const auto &kv : base.names)
    if (!now.names.count(kv.first)) vanished->push_back(kv.first);
}

bool parse_fail_rule(const std::string &text, fail_rule *out, std::string *why) {
  fail_rule r;
  r.text = text;
  size_t i = text.find_first_of("<>");
  if (i == std::string::npos || i == 0) {
    *why = "'" + text + "': expected METRIC OP VALUE (OP: > >= < <=), e.g. 'step.p50 > +5%'";
    return false;
  }
  size_t a = 0, b = i;
  while (a < b && text[a] == ' ') ++a;
  while (b > a && text[b - 1] == ' ') --b;
  r.metric = text.substr(a, b - a);
  r.op = text.substr(i, text.size() > i + 1 && text[i + 1] == '=' ? 2 : 1);
  std::string v = text.substr(i + r.op.size());
  v.erase(0, v.find_first_not_of(' '));
  while (!v.empty() && v.back() == ' ') v.pop_back();
  if (!v.empty() && v.back() == '%') {
    r.kind = fail_rule::relative;
    v.pop_back();
  } else {
    r.kind = !v.empty() && (v[0] == '+' || v[0] == '-') ? fail_rule::change : fail_rule::value;
  }
  if (r.kind == fail_rule::relative && (v.empty() || (v[0] != '+' && v[0] != '-'))) {
    *why = "'" + text + "': a relative change is signed, e.g. +5% or -10%";
    return false;
  }
  char *end = nullptr;
  r.limit = v.empty() ? 0 : std::strtod(v.c_str(), &end);
  if (r.metric.empty() || v.empty() || !end || *end || !std::isfinite(r.limit)) {
    *why = "'" + text + "': expected METRIC OP VALUE, e.g. 'step.p50 > +5%'";
    return false;
  }
  *out = r;
  return true;
}

bool rule_fails(const fail_rule &rule, const metric &m, std::string *line) {
  const double x = rule.kind == fail_rule::relative ? m.change_pct()
                   : rule.kind == fail_rule::change ? m.change()
                                                    : m.now;
  bool fails = rule.op == ">"    ? x > rule.limit
               : rule.op == ">=" ? x >= rule.limit
               : rule.op == "<"  ? x < rule.limit
                                 : x <= rule.limit;
  if (!m.in_base || !m.in_new) fails = rule.kind == fail_rule::value && m.in_new && fails;
  char buf[200];
  std::snprintf(buf, sizeof buf, ": %.17g -> %.17g (%+.17g, %+.3f%%)", m.base, m.now, m.change(),
                m.change_pct());
  *line = rule.text + buf;
  return fails;
}

}  // namespace dftrace::analysis
