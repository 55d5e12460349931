// result_json.hpp: the analysis as one JSON document (the schema in src/analysis/README.md),
// shared by `dftrace analyze --json` and, later, the Python face.
#pragma once

#include <functional>
#include <string>

#include "analysis/analyze.hpp"
#include "analysis/inputs.hpp"

namespace dftrace::analysis {

// One JSON object (with a trailing newline). Times are integer nanoseconds. *read_whole (when
// given): as the return of the version below.
std::string result_json(const input_report &in, const analysis_result &r, size_t processes,
                        bool *read_whole = nullptr);
// The same in parts: sink gets each part (about 1 MiB) and may clear it; a document of many
// steps is never held whole.
// step_items false: `steps.items` is written empty (the Python face builds its items as objects).
// False when a temporary file (the step items', the stragglers') could not be read back while
// the document was written: the document is then short of them, after its inputs section said
// otherwise, so the caller must say so and fail.
bool result_json(const input_report &in, const analysis_result &r, size_t processes,
                 const std::function<void(std::string &)> &sink, bool step_items = true);

// The document's inputs.complete: every file read whole and every process's counts checked.
inline bool inputs_complete(const input_report &in, const analysis_result &r) {
  return in.damaged.empty() && r.process_problems.empty();
}

// A group's name for people: "rank 3", or "pid 4242" (with its host when known).
std::string group_label(const group_result &g);

}  // namespace dftrace::analysis
