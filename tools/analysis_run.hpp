// analysis_run.hpp: one run read and analysed (src/analysis), as `dftrace analyze` and
// `dftrace diff` both do it: the layer table from the options, the progress bar, the spill
// budget.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/analyze.hpp"
#include "analysis/inputs.hpp"
#include "analysis/name_stats.hpp"
#include "args.hpp"

namespace dftrace::tools {

struct analysis_run {
  analysis::input_report in;
  analysis::analysis_result r;
  size_t processes = 0;
  uint64_t events = 0;
  // With table.name_stats(): each "cat/name"'s figures, and the names whose spilled durations
  // could not be read back (their p50 and p99 unknown).
  std::map<std::string, analysis::name_summary> names;
  std::vector<std::string> names_unread;
  // The names whose total time is held at 2^64-1 ns (analysis::held_names_line), or "".
  std::string names_held;
  // The names whose count of calls is held at 2^64-1 (analysis::held_calls_line), or "".
  std::string names_calls_held;
  bool damaged() const {
    return !in.damaged.empty() || !r.process_problems.empty() || !names_unread.empty() ||
           !names_held.empty() || !names_calls_held.empty();
  }
};

// --layers FILE and --steps NAME into *table; false after one error line.
bool analysis_table(const args_t &a, const char *cmd, analysis::layer_table *table);

// Reads and analyses files.
void run_analysis(const std::vector<std::string> &files, const analysis::layer_table &table,
                  const char *what, analysis_run *out);

}  // namespace dftrace::tools
