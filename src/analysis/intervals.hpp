// intervals.hpp: exact interval arithmetic on integer nanoseconds: unions, intersections,
// differences, and the exclusive split of a window over layers ranked by priority.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dftrace::analysis {

// [start, end): half-open, so abutting intervals share no time.
struct interval {
  uint64_t start = 0, end = 0;
};

// A sorted list of disjoint, non-abutting, non-empty intervals: a union.
using interval_set = std::vector<interval>;

// The union of any intervals (sorted in place, then merged): nested, abutting and identical
// intervals count once; empty ones vanish.
interval_set union_of(std::vector<interval> &v);
// The same for v made of sorted runs (each run sorted by start; runs[i] is where run i begins):
// the runs are merged, not sorted again (the per-thread unions of a group).
interval_set union_of_runs(std::vector<interval> &v, std::vector<size_t> runs);
// Total length.
uint64_t measure(const interval_set &a);
// a AND b, a MINUS b (both unions; linear in their sizes).
interval_set intersect(const interval_set &a, const interval_set &b);
interval_set subtract(const interval_set &a, const interval_set &b);
uint64_t intersect_measure(const interval_set &a, const interval_set &b);

// The exclusive split of windows over classes by priority: class 0 wins over class 1 and so
// on; time in no class is `other`. Built once per group from the classes' unions, then each
// window [start, end) is answered in O(log n), and its parts sum to end - start exactly.
class priority_timeline {
 public:
  explicit priority_timeline(const std::vector<interval_set> &classes);
  // parts[i] for class i, parts[classes] for other; parts is resized to classes + 1.
  void split(uint64_t start, uint64_t end, std::vector<uint64_t> *parts) const;

 private:
  struct segment {
    uint64_t start, end;
    uint32_t cls;
  };
  std::vector<segment> segs_;               // disjoint, sorted, each with its winning class
  std::vector<std::vector<uint64_t>> cum_;  // cum_[c][i]: class c's time in segs_[0, i)
  size_t nclasses_;
};

}  // namespace dftrace::analysis
