// sorted_runs.hpp: an external sort of trace lines by time, for the tools that must order a
// trace larger than memory (merge, split --by time): lines are gathered into runs of about
// run_bytes, each run is sorted and spilled to a file in a scratch folder, and a k-way merge
// over the runs hands the lines back in (ts, file, order of arrival) order.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dftrace::tools {

class sorted_runs {
 public:
  // dir: a folder to create for the run files (removed by remove() or the destructor).
  explicit sorted_runs(std::string dir, size_t run_bytes = 48u << 20);
  ~sorted_runs();
  sorted_runs(const sorted_runs &) = delete;
  sorted_runs &operator=(const sorted_runs &) = delete;

  // Creates the folder; false with *why (one line) when it can not be made.
  bool open(std::string *why);
  // Adds a line (ts in ns, the input it came from); may spill a run. False after a write error
  // (error() says which).
  bool add(uint64_t ts, uint32_t file, std::string_view line);
  // Spills what is gathered, then calls fn(ts, file, line) for every line in order. False
  // after a read or write error.
  bool merge(const std::function<void(uint64_t, uint32_t, std::string_view)> &fn);
  const std::string &error() const { return error_; }
  size_t runs() const { return paths_.size(); }
  // Deletes the run files and the folder.
  void remove();

 private:
  bool spill();
  std::string dir_;
  size_t run_bytes_;
  bool made_ = false;
  std::string text_;
  struct entry {
    uint64_t ts;
    uint32_t file;
    uint64_t seq;
    uint64_t off;
    uint32_t len;
  };
  std::vector<entry> entries_;
  uint64_t seq_ = 0;
  std::vector<std::string> paths_;
  std::string error_;
};

}  // namespace dftrace::tools
