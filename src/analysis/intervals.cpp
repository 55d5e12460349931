// intervals.cpp: exact unions, intersections and differences of intervals, and the
// priority timeline that splits a step over layers.
#include "analysis/intervals.hpp"

#include <algorithm>

namespace dftrace::analysis {

namespace {

// Intervals sorted by start merged where they overlap or abut; empty ones dropped.
interval_set coalesce(const std::vector<interval> &sorted) {
  interval_set out;
  for (const interval &i : sorted) {
    if (i.end <= i.start) continue;
    if (!out.empty() && i.start <= out.back().end) {
      if (i.end > out.back().end) out.back().end = i.end;
    } else {
      out.push_back(i);
    }
  }
  return out;
}

}  // namespace

interval_set union_of(std::vector<interval> &v) {
  std::sort(v.begin(), v.end(), [](const interval &a, const interval &b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  });
  return coalesce(v);
}

interval_set union_of_runs(std::vector<interval> &v, std::vector<size_t> runs) {
  const auto by_start = [](const interval &a, const interval &b) { return a.start < b.start; };
  // Bottom-up: merge neighbouring runs until one is left (log2(runs) passes). bounds holds
  // each run's first index, then v.size().
  std::vector<size_t> bounds = std::move(runs);
  bounds.push_back(v.size());
  while (bounds.size() > 2) {
    const size_t k = bounds.size() - 1;  // runs
    std::vector<size_t> next;
    for (size_t r = 0; r < k; r += 2) {
      next.push_back(bounds[r]);
      if (r + 1 < k)
        std::inplace_merge(v.begin() + static_cast<std::ptrdiff_t>(bounds[r]),
                           v.begin() + static_cast<std::ptrdiff_t>(bounds[r + 1]),
                           v.begin() + static_cast<std::ptrdiff_t>(bounds[r + 2]), by_start);
    }
    next.push_back(v.size());
    bounds = std::move(next);
  }
  return coalesce(v);
}

uint64_t measure(const interval_set &a) {
  uint64_t n = 0;
  for (const interval &i : a) n += i.end - i.start;
  return n;
}

interval_set intersect(const interval_set &a, const interval_set &b) {
  interval_set out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const uint64_t s = std::max(a[i].start, b[j].start), e = std::min(a[i].end, b[j].end);
    if (s < e) out.push_back({s, e});
    if (a[i].end < b[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

uint64_t intersect_measure(const interval_set &a, const interval_set &b) {
  return measure(intersect(a, b));
}

interval_set subtract(const interval_set &a, const interval_set &b) {
  interval_set out;
  size_t j = 0;
  for (const interval &x : a) {
    uint64_t s = x.start;
    while (j < b.size() && b[j].end <= s) ++j;
    for (size_t k = j; k < b.size() && b[k].start < x.end; ++k) {
      if (b[k].start > s) out.push_back({s, b[k].start});
      s = std::max(s, b[k].end);
      if (s >= x.end) break;
    }
    if (s < x.end) out.push_back({s, x.end});
  }
  return out;
}

priority_timeline::priority_timeline(const std::vector<interval_set> &classes)
    : nclasses_(classes.size()) {
  // Class c owns what is in its union and in no union of a higher priority.
  interval_set higher;
  std::vector<interval> tmp;
  for (size_t c = 0; c < classes.size(); ++c) {
    for (const interval &i : subtract(classes[c], higher))
      segs_.push_back({i.start, i.end, static_cast<uint32_t>(c)});
    tmp.assign(higher.begin(), higher.end());
    tmp.insert(tmp.end(), classes[c].begin(), classes[c].end());
    higher = union_of(tmp);
  }
  std::sort(segs_.begin(), segs_.end(),
            [](const segment &a, const segment &b) { return a.start < b.start; });
  cum_.assign(nclasses_, std::vector<uint64_t>(segs_.size() + 1, 0));
  for (size_t i = 0; i < segs_.size(); ++i)
    for (size_t c = 0; c < nclasses_; ++c)
      cum_[c][i + 1] = cum_[c][i] + (segs_[i].cls == c ? segs_[i].end - segs_[i].start : 0);
}

void priority_timeline::split(uint64_t start, uint64_t end, std::vector<uint64_t> *parts) const {
  parts->assign(nclasses_ + 1, 0);
  if (end <= start) return;
  // Segments are disjoint and sorted: [lo, hi) are those that end after start and begin
  // before end; only the first and the last may stick out of the window.
  const auto lo_it = std::upper_bound(segs_.begin(), segs_.end(), start,
                                      [](uint64_t t, const segment &s) { return t < s.end; });
  const auto hi_it = std::lower_bound(segs_.begin(), segs_.end(), end,
                                      [](const segment &s, uint64_t t) { return s.start < t; });
  const size_t lo = static_cast<size_t>(lo_it - segs_.begin());
  const size_t hi = static_cast<size_t>(hi_it - segs_.begin());
  uint64_t covered = 0;
  if (lo < hi) {
    for (size_t c = 0; c < nclasses_; ++c) (*parts)[c] = cum_[c][hi] - cum_[c][lo];
    const segment &f = segs_[lo], &l = segs_[hi - 1];
    if (f.start < start) (*parts)[f.cls] -= start - f.start;
    if (l.end > end) (*parts)[l.cls] -= l.end - end;
    for (size_t c = 0; c < nclasses_; ++c) covered += (*parts)[c];
  }
  (*parts)[nclasses_] = (end - start) - covered;
}

}  // namespace dftrace::analysis
