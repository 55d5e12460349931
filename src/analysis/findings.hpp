// findings.hpp: what an analyst would point at first, from rules: each rule names a metric of
// the analysis, the values that make it a warning or critical, and the absolute magnitude
// (time, count) below which it is at most `info`: a rule never marks one call critical.
// Built-in defaults (k_default_rules, YAML), replaced or extended by a user's YAML file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/analyze.hpp"

namespace dftrace::analysis {

struct rule {
  std::string name, metric, suggestion;
  double warning = 0, critical = 0;  // in the metric's unit (percent for every built-in one)
  uint64_t min_ns = 0, min_count = 0;
  bool enabled = true;
};

// The built-in rules, as YAML (docs/analysis.md lists them).
extern const char *const k_default_rules;
// The metrics a rule may name.
std::vector<std::string> rule_metrics();

// Parses rules from YAML text ({rules: [{name, metric, warning, critical, min_ns, min_count,
// suggestion, enabled}]}) into *rules: a rule of a name already there replaces it (fields
// left out keep their value), others are added. False with *why on any problem.
bool parse_rules(const std::string &yaml, const std::string &what, std::vector<rule> *rules,
                 std::string *why);
// The same from a file (a regular file, read as the configuration is).
bool load_rules_file(const std::string &path, std::vector<rule> *rules, std::string *why);

// The findings of r, most severe first, then in rule order.
std::vector<finding> evaluate_rules(const std::vector<rule> &rules, const analysis_result &r);

}  // namespace dftrace::analysis
