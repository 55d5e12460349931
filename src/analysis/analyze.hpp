// analyze.hpp: from what was collected to the figures: groups, exact layer unions and overlaps,
// self time, steps split over what bound them, stragglers and imbalance.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/collect.hpp"
#include "analysis/collectives.hpp"
#include "analysis/io_collect.hpp"
#include "analysis/layers.hpp"
#include "analysis/step_store.hpp"
#include "analysis/straggler_list.hpp"

namespace dftrace::analysis {

// Stragglers: a rank's step is one when it exceeds the median of that step across ranks by
// both the factor (5/4) and the margin (1 ms).
constexpr uint64_t k_straggler_num = 5, k_straggler_den = 4;
constexpr uint64_t k_straggler_margin_ns = 1000000;

struct group_result {
  bool has_rank = false;
  int64_t rank = 0;
  std::string host;
  std::vector<std::string> pids;  // canonical text, root first, then by number
  uint64_t start = 0, span = 0;
  std::vector<uint64_t> union_ns, self_ns;                        // per layer
  std::vector<std::pair<std::string, uint64_t>> overlap_ns;       // "a+b", a before b in the table
  std::vector<std::pair<std::string, uint64_t>> unoverlapped_ns;  // non-compute layers
  size_t steps = 0;
  uint64_t checkpoint_events = 0, checkpoint_max_ns = 0;  // its processes' `checkpoint` events
};

// What a rule found (findings.hpp).
struct finding {
  std::string rule, severity, metric, suggestion;  // severity: critical, warning, info
  double value = 0;
  std::string evidence;  // a JSON object: the numbers and names behind it
};

struct analysis_result {
  std::vector<std::string> layers;
  std::vector<group_result> groups;
  // steps
  std::string step_source;  // "step", "--steps NAME", ".iter" or "" (none)
  step_store steps;         // in group order, each group's by start
  uint64_t step_p50 = 0, step_p99 = 0, step_total = 0;
  uint64_t bound_total[k_nbound + 1] = {};
  // across ranks
  straggler_list stragglers;  // in order (excess, group, step) once the steps are compared
  size_t steps_compared = 0;  // step keys seen in at least two groups
  double imbalance_max = 0, imbalance_mean = 0, imbalance_p50 = 0;
  std::string imbalance_worst_step;
  size_t imbalance_worst_group = 0;
  // processes whose read disagrees with their `end` event: one line each
  std::vector<std::string> process_problems;
  std::vector<std::string> process_warnings;  // counts that cannot be checked (merged DFTracer)
  size_t processes_without_end = 0;
  size_t ranks = 0;
  io_summary io;
  coll_summary collectives;
  std::vector<finding> findings;  // filled by evaluate_rules
};

// Computes everything from c (whose thread data it consumes). Deterministic: independent of
// the order in which files were read. It is analyze_groups then merge_partials of that one
// partial: the single-machine run and the distributed one are the same code.
analysis_result analyze(collection &c, const layer_table &table);

// Phase 1, the per-group pass: what one set of files gives of each group it holds whole.
struct group_partial {
  std::vector<std::string> procs;     // process keys (host '\x1f' pid), the root first
  group_result fig;                   // every figure of the group, steps counted
  size_t first_step = 0, nsteps = 0;  // its steps: analysis_partial::steps[first_step, +nsteps)
  bool readback_failed = false;       // the spill file could not be read back
  coll_data colls;                    // its processes' collectives, canonical
};
struct analysis_partial {
  std::map<std::string, process_facts> procs;  // host '\x1f' pid
  std::vector<group_partial> groups;
  // Every group's steps, one group after the other (their `group` is the index in the
  // partial), spilled past a budget: a run of one partial hands them to the result.
  step_store steps;
  bool any_step_event = false;  // a step event was read (else the steps are the `.iter` ones)
  io_data io;
};
analysis_partial analyze_groups(collection &c, const layer_table &table);

// Phase 2, the cross-group merge: groups ordered, steps compared (stragglers, imbalance), the
// processes' counts checked, the I/O summarised. Partials must hold disjoint processes and
// every group whole; false with *why when they do not (a group split over partials: its
// figures would be wrong, so nothing is returned). Consumes the partials.
bool merge_partials(std::vector<analysis_partial> &parts, const layer_table &table,
                    analysis_result *out, std::string *why);

// Step rows held in memory before they go to a temporary file (step_store): an eighth of the
// events' spill budget (32 Ki rows, 2.75 MiB, by default), 0 for never.
size_t step_rows_budget();

// Nearest-rank percentile (p in percent) of sorted values; 0 for none.
uint64_t percentile_sorted(const std::vector<uint64_t> &v, unsigned p);

}  // namespace dftrace::analysis
