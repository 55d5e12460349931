// straggler_list.hpp: the run's stragglers, every one kept in the document's order but held in
// memory only up to a budget (an external sort, then a temporary file read back a piece at a
// time), with their count, summed excess and the first few in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "analysis/spill.hpp"
#include "analysis/step_sort.hpp"

namespace dftrace::analysis {

struct straggler {
  size_t group = 0;
  std::string step;  // the step's key: "epoch:step", "step" or "#index"
  uint64_t dur = 0, median = 0;
};

// Stragglers added in any order (add), then put in order once (finish): the greatest excess
// over the median first, then by group, then by step (its text, bytewise). After finish,
// for_each reads them back in that order as often as asked. Memory: the budget's rows (64
// bytes each) and the sort's pieces, whatever the number of stragglers; past the budget the
// sorted rows lie in an unlinked temporary file of their own (kept in memory when the file
// cannot be written).
class straggler_list {
 public:
  static constexpr size_t k_head = 10;  // the first stragglers held in memory (head())

  explicit straggler_list(size_t budget = 0);
  // dur > median; step: its key's text, 41 characters at most.
  void add(size_t group, const std::string &step, uint64_t dur, uint64_t median);
  // Puts them in order; false when the sort's file cannot be read back (the list then holds
  // the stragglers met before the failure).
  bool finish();
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  uint64_t excess_ns() const { return excess_; }  // the sum of dur - median, held at 2^64-1
  // The first k_head (or fewer) in order, after finish.
  const std::vector<straggler> &head() const { return head_; }
  // Calls fn on each in order, after finish; false when the file cannot be read back (fn has
  // then seen the ones before the failure).
  bool for_each(const std::function<void(const straggler &)> &fn) const;

 private:
  void keep(const straggler_row &s);  // one more in order, after the sort

  size_t budget_ = 0, count_ = 0;
  uint64_t excess_ = 0;
  std::shared_ptr<straggler_sorter> sorter_;  // until finish
  std::vector<straggler> head_;
  // The sorted rows: [0, in_file_) in file_ from offset 0, then mem_.
  std::vector<straggler_row> mem_;
  std::shared_ptr<spill_store> file_;
  size_t in_file_ = 0;
};

}  // namespace dftrace::analysis
