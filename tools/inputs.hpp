// inputs.hpp: a command's input traces: directories expanded, files opened, damage found while
// planning them reported, and the threads and reading options the commands use.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "args.hpp"
#include "reader/trace_reader.hpp"

namespace dftrace::tools {

// Expands directories into the trace files they hold (*.pfw, *.pfw.gz, sorted by name); a file
// named twice is kept once (analysis::unique_files): *again gets {path, kept name} for each
// other naming, or, when again is null, one "warning: PATH: the same file as KEPT, given
// again: read once" line each.
std::vector<std::string> expand_inputs(
    const std::vector<std::string> &in, bool *ok,
    std::vector<std::pair<std::string, std::string>> *again = nullptr);
// The command's positional inputs, expanded; when there are none, one "CMD: no input files"
// line and an empty list (the command then exits with status 2).
std::vector<std::string> input_files(
    const args_t &a, const char *cmd, bool *ok,
    std::vector<std::pair<std::string, std::string>> *again = nullptr);

// Opens a trace; on failure one "PATH: reason" line, *ok = false, and false.
bool open_trace(const std::string &path, detail::trace_file *f, bool *ok);
// One "PATH: byte N: ..." line per damage found while planning the file; returns how many.
size_t print_plan_issues(const detail::trace_file &f, const std::string &path);

// Threads to use: DFTRACE_TOOL_THREADS, else the hardware concurrency (at least 1).
int tool_threads();
// Reading options for a command: tool_threads() workers, the reader's defaults otherwise.
detail::read_options tool_read_options();

}  // namespace dftrace::tools
