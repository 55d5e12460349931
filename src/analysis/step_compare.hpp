// step_compare.hpp: the run's steps taken together, once every group's are in the result.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/analyze.hpp"

namespace dftrace::analysis {

// One pass over the steps: the totals, p50 and p99 (the durations selected as `dftrace diff`
// selects a name's, spilled past the budget), per group whether its `step` arguments increase
// (*increasing), and whether steps can be matched by them (*by_args: every step has one and no
// group repeats one).
void step_totals(analysis_result *r, std::vector<uint8_t> *increasing, bool *by_args);

// Stragglers and imbalance: steps matched across groups by their `step` (and `epoch`)
// arguments when by_args (as step_totals gives it), else by index.
void compare_steps(analysis_result *r, const std::vector<uint8_t> &increasing, bool by_args);

}  // namespace dftrace::analysis
