// inputs.hpp: reads every trace file for the analysis and says exactly what was read and what
// could not be: files, members, lines, and processes whose counts disagree with their files.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/collect.hpp"
#include "analysis/layers.hpp"
#include "reader/trace_reader.hpp"

namespace dftrace::analysis {

struct file_report {
  std::string path;
  uint64_t lines = 0, text_bytes = 0, compressed_bytes = 0;
  size_t members = 0, dt_members = 0;
  bool damaged = false;
};

// One thing that could not be read (exit status 2 unless --allow-damaged), or a warning.
struct input_problem {
  std::string path;  // the file, or "" for a process
  std::string what;
};

struct input_report {
  std::vector<file_report> files;
  std::vector<input_problem> damaged, warnings;
  line_counts counts;
};

// Layered events held in memory before they go to a temporary file (24 bytes each):
// DFTRACE_ANALYZE_SPILL_EVENTS, 0 for never; 256 Ki (6 MiB) by default.
size_t spill_budget();

// A second reader of the blocks that read_traces inflates (dftrace.read's columns, for
// `dftrace report`): each file is opened, planned and inflated once for both readers.
class block_tap {
 public:
  virtual ~block_tap() = default;
  // A file that could not be opened (also listed as damaged in the input report).
  virtual void unreadable(const std::string &path, const std::string &why) = 0;
  // Before the file's first block.
  virtual void begin(const detail::trace_file &f) = 0;
  // On a worker thread, concurrently with other blocks, before the analysis scans the block:
  // what it leaves in b.result goes to take().
  virtual void work(detail::text_block &b) = 0;
  // On the calling thread, in file order, before the block's memory is given back.
  virtual void take(detail::text_block &b, std::unique_ptr<detail::block_result> r) = 0;
  // After the file's last block.
  virtual void end(const detail::trace_file &f) = 0;
};

// A file named twice (the same path, another path to it, a directory and a file in it), by
// (st_dev, st_ino): once, in the place it was first named, under the lexically smallest of
// its names; *again (may be null) gets {path, kept name} for every other naming, sorted, so
// that neither depends on the order of the inputs. Paths that cannot be stat'ed are kept.
std::vector<std::string> unique_files(const std::vector<std::string> &paths,
                                      std::vector<std::pair<std::string, std::string>> *again);
// The warning for a file named again: "the same file as KEPT, given again: read once".
std::string given_again(const std::string &kept);

// Reads the files in the order given (the results do not depend on it) into *c, reporting in
// *rep. progress (may be empty) gets the compressed bytes of each block consumed; tap (may be
// null) reads the same blocks. Not thread-safe; uses opt.threads workers.
void read_traces(const std::vector<std::string> &paths, const layer_table &table,
                 const detail::read_options &opt, collection *c, input_report *rep,
                 const std::function<void(uint64_t)> &progress, block_tap *tap = nullptr);

}  // namespace dftrace::analysis
