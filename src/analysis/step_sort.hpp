// step_sort.hpp: the steps' match keys, the compared keys' figures and the stragglers put in
// order past a memory budget (an external sort: sorted runs in an unlinked temporary file,
// merged k at a time), so that steps whose `step` arguments do not increase are compared across
// groups by the same streaming walk as the rest, and no key's figures nor every straggler are
// held at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <tuple>
#include <vector>

#include "analysis/spill.hpp"

namespace dftrace::analysis {

// What comparing a step across groups needs of it: its key in numbers (`epoch` when it has
// one, then `step`, or its index in the group), its group and its duration. 32 bytes.
struct key_row {
  int64_t epoch = 0;  // 0 without one
  int64_t step = 0;   // the `step` argument, or the index in the group
  uint64_t dur = 0;
  uint32_t group = 0;
  uint8_t has_epoch = 0;
  uint8_t pad[3] = {};  // written to the file: no byte left uninitialised

  std::tuple<uint8_t, int64_t, int64_t> key() const { return {has_epoch, epoch, step}; }
  bool same_key(const key_row &o) const { return key() == o.key(); }
  // By key, then group: the order the comparison walks.
  bool operator<(const key_row &o) const {
    return key() != o.key() ? key() < o.key() : group < o.group;
  }
};
static_assert(sizeof(key_row) == 32, "a key_row is written to the file as 32 bytes");

// What one compared key gives (step_compare), put in the order of its text: the text as the
// JSON names the step (`epoch:step`, `step` or `#index`: 41 characters at most), the max over
// median (has_ratio: the median is not 0) and the group of the longest step. 64 bytes.
struct key_figure_row {
  char text[44] = {};  // NUL-terminated
  uint32_t worst = 0;
  double ratio = 0;
  uint8_t has_ratio = 0;
  uint8_t pad[7] = {};

  bool operator<(const key_figure_row &o) const;  // by text, bytewise (std::string's order)
};
static_assert(sizeof(key_figure_row) == 64, "a key_figure_row is written as 64 bytes");

// A straggler (step_compare) as the document lists it, put in that order: the greatest excess
// over its step's median first, then by group, then by the step's key text (bytewise). 64 bytes.
struct straggler_row {
  uint64_t excess = 0;  // dur - median
  uint64_t median = 0;
  uint32_t group = 0;
  char step[44] = {};  // NUL-terminated: `epoch:step`, `step` or `#index`, 41 characters at most

  bool operator<(const straggler_row &o) const;
};
static_assert(sizeof(straggler_row) == 64, "a straggler_row is written as 64 bytes");

// Rows (key_row, key_figure_row or straggler_row) added in any order, read back in their order
// (operator<). Holds up to `budget` rows in memory (0: all of them), then writes each budget's
// worth as a sorted run; the runs are merged 64 at a time (a level's merged runs go to the same
// file) until one pass of 64 or fewer reads them all, 512 rows of each at a time. Memory: the
// budget and 64 pieces of 512 rows, whatever the number of rows. A run that cannot be written stays
// in memory (as the step rows do, unsaid). Not thread-safe.
template <class Row>
class run_sorter {
 public:
  explicit run_sorter(size_t budget) : budget_(budget) {}
  void add(const Row &r);
  // Calls fn on every row in order until fn returns false; once only. False when the file
  // cannot be read back (fn has then seen the rows before the failure, in order).
  bool for_each_sorted(const std::function<bool(const Row &)> &fn);
  // True once a run written so far held two equal rows (key_row: a group repeats a key): a
  // caller that needs none can stop adding.
  bool found_equal() const { return found_equal_; }

 private:
  // A sorted run: `count` rows in the file at `offset`, then `mem` (the rows the file could
  // not take: it refuses every write after a failed one).
  struct run {
    uint64_t offset = 0;
    size_t count = 0;
    std::vector<Row> mem;
  };
  void append(run *to, const Row *rows, size_t n);
  void flush();
  bool merge(const std::vector<run> &in, const std::function<bool(const Row &)> &fn) const;

  size_t budget_ = 0;
  bool found_equal_ = false;
  std::vector<Row> buf_;
  std::vector<run> runs_;
  std::unique_ptr<spill_store> file_;
};

using key_sorter = run_sorter<key_row>;
using figure_sorter = run_sorter<key_figure_row>;
using straggler_sorter = run_sorter<straggler_row>;

}  // namespace dftrace::analysis
