// analysis_run.cpp: one run read and analysed, for analyze and diff.
#include "analysis_run.hpp"

#include "inputs.hpp"
#include "progress.hpp"

#include <cstdlib>
#include <filesystem>

namespace dftrace::tools {

bool analysis_table(const args_t &a, const char *cmd, analysis::layer_table *table) {
  if (a.has("--layers")) {
    std::string why;
    if (!table->load_yaml(a.get("--layers"), &why)) {
      error_line(std::string(cmd) + ": --layers " + why);
      return false;
    }
  }
  if (a.has("--steps")) {
    if (a.get("--steps").empty()) {
      error_line(std::string(cmd) + ": --steps needs an event name");
      return false;
    }
    table->set_step_name(a.get("--steps"));
  }
  return true;
}

void run_analysis(const std::vector<std::string> &files, const analysis::layer_table &table,
                  const char *what, analysis_run *out) {
  uint64_t total = 0;
  for (const auto &f : files) {
    std::error_code ec;
    const auto n = std::filesystem::file_size(f, ec);
    if (!ec) total += n;
  }
  progress bar(what, total);
  analysis::collection c;
  c.spill_after = analysis::spill_budget();
  analysis::read_traces(files, table, tool_read_options(), &c, &out->in,
                        [&](uint64_t n) { bar.add(n); });
  bar.done();
  out->processes = c.procs.size();
  out->events = c.counts.objects;
  // before the analysis, so that its peak does not hold the durations
  out->names = analysis::summarize_names(c.names, &c.spill, &out->names_unread,
                                         analysis::durations_budget(c.spill_after));
  out->names_held = analysis::held_names_line(out->names);
  out->names_calls_held = analysis::held_calls_line(out->names);
  decltype(c.names)().swap(c.names);
  out->r = analysis::analyze(c, table);
}

}  // namespace dftrace::tools
