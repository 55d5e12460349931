// diff.hpp: two runs compared: the figures `dftrace diff` reports (per name and category,
// steps, bound_by, I/O) with their change, and the `--fail-if` gates on any of them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/analyze.hpp"
#include "analysis/name_stats.hpp"

namespace dftrace::analysis {

// What a run is reduced to: the analysis's figures and each (cat, name)'s calls and times.
struct run_summary {
  uint64_t events = 0;
  size_t steps = 0;
  analysis_result r;                          // its step items may be dropped (steps counts them)
  std::map<std::string, name_summary> names;  // "cat/name"
};

// One compared figure, named as --fail-if names it: "step.p50", "bound_by.io", "io.read_bytes",
// "POSIX/read.p99", ...; in_base / in_new: whether the run has it (a name may be missing).
struct metric {
  std::string key;
  double base = 0, now = 0;
  bool in_base = true, in_new = true;
  double change() const { return now - base; }
  // Relative change in percent: +inf when the base is 0 and the new value is not.
  double change_pct() const;
};
std::vector<metric> compare_runs(const run_summary &base, const run_summary &now);
// Names ("cat/name") in one run only.
void appeared_vanished(const run_summary &base, const run_summary &now,
                       std::vector<std::string> *appeared, std::vector<std::string> *vanished);

// A gate: METRIC OP VALUE, OP one of > >= < <=; VALUE "+5%" / "-5%" (relative change), "+100"
// / "-100" (change, in the metric's unit) or "100" (the new value).
struct fail_rule {
  std::string text, metric, op;
  enum kind_t { relative, change, value } kind = relative;
  double limit = 0;
};
bool parse_fail_rule(const std::string &text, fail_rule *out, std::string *why);
// Whether m fails the rule; *line says why (the rule, both values and the change).
bool rule_fails(const fail_rule &rule, const metric &m, std::string *line);

}  // namespace dftrace::analysis
