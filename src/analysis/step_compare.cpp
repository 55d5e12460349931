// step_compare.cpp: the run's steps taken together: their totals and percentiles, and each
// step compared across groups (stragglers, imbalance), streamed from the step store.
#include "analysis/step_compare.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "analysis/held_sum.hpp"
#include "analysis/name_stats.hpp"
#include "analysis/spill.hpp"
#include "analysis/step_sort.hpp"

namespace dftrace::analysis {

namespace {

// A step as the comparison sees it: by_arg, its `epoch` and `step` arguments; else its index.
key_row row_of(const step_result &s, bool by_arg) {
  key_row k;
  k.has_epoch = by_arg && s.has_epoch;
  k.epoch = k.has_epoch ? s.epoch : 0;
  k.step = by_arg ? s.step : static_cast<int64_t>(s.index);
  k.dur = s.dur;
  k.group = s.group;
  return k;
}

// The key's text, as the JSON names the step: `epoch:step`, `step`, or `#index`.
std::string key_text(const key_row &k, bool by_arg) {
  if (!by_arg) return "#" + std::to_string(k.step);
  return k.has_epoch ? std::to_string(k.epoch) + ":" + std::to_string(k.step)
                     : std::to_string(k.step);
}

// The steps of one key (at least two groups'; in group order): their median, stragglers and
// ratio.
void compare_key(const std::vector<key_row> &same, bool by_arg, analysis_result *r,
                 figure_sorter *keys) {
  std::vector<uint64_t> d;
  for (const key_row &s : same) d.push_back(s.dur);
  std::sort(d.begin(), d.end());
  const size_t n = d.size();
  const uint64_t median = n % 2 ? d[n / 2] : d[n / 2 - 1] + (d[n / 2] - d[n / 2 - 1]) / 2;
  const std::string key = key_text(same[0], by_arg);
  const key_row *worst = &same[0];
  for (const key_row &s : same) {
    if (s.dur > worst->dur) worst = &s;
    if (s.dur > median && s.dur - median > k_straggler_margin_ns &&
        s.dur * k_straggler_den > median * k_straggler_num)
      r->stragglers.add(s.group, key, s.dur, median);
  }
  key_figure_row k;
  std::memcpy(k.text, key.data(), std::min(key.size(), sizeof k.text - 1));  // 41 at most
  k.worst = worst->group;
  k.has_ratio = median != 0;
  if (k.has_ratio) k.ratio = static_cast<double>(d.back()) / static_cast<double>(median);
  keys->add(k);
}

// The walk over rows in key order (within a key, in group order): each key met in two groups
// or more is compared once its rows are all seen. add() says false, and takes nothing, at a
// second row of one key in one group (`repeated`).
struct key_walk {
  bool by_arg = false;
  analysis_result *out = nullptr;
  figure_sorter *keys = nullptr;
  std::vector<key_row> same;
  bool repeated = false;

  bool add(const key_row &k) {
    if (!same.empty() && !same[0].same_key(k)) finish();
    if (!same.empty() && same.back().group == k.group) {
      repeated = true;
      return false;
    }
    same.push_back(k);
    return true;
  }
  void finish() {
    if (same.size() >= 2) compare_key(same, by_arg, out, keys);
    same.clear();
  }
};

// Each group's steps in key order, read back a piece at a time and merged across groups:
// needs every group's keys increasing (by index they always do). False when the store cannot
// be read back.
bool compare_streamed(const analysis_result &r, key_walk *walk) {
  struct cursor {
    size_t next = 0, end = 0, pos = 0;
    std::vector<step_result> buf;
    bool live() const { return pos < buf.size(); }
  };
  std::vector<cursor> cur(r.groups.size());
  bool ok = true;
  auto refill = [&](cursor &c) {
    c.pos = 0;
    if (!r.steps.read(c.next, std::min<size_t>(512, c.end - c.next), &c.buf)) {
      c.buf.clear();
      ok = false;
    }
    c.next += c.buf.size();
  };
  size_t at = 0;
  for (size_t g = 0; g < cur.size(); ++g) {
    cur[g].next = at;
    cur[g].end = at += r.groups[g].steps;
    refill(cur[g]);
  }
  // One key at a time: the least of the cursors', then each group's step there, in group
  // order (two scans of the cursors per key, not per step).
  for (;;) {
    bool any = false;
    key_row k;
    for (const cursor &c : cur) {
      if (!c.live()) continue;
      const key_row x = row_of(c.buf[c.pos], walk->by_arg);
      if (!any || x.key() < k.key()) k = x;
      any = true;
    }
    if (!any) break;
    for (cursor &c : cur) {
      if (!c.live()) continue;
      const key_row x = row_of(c.buf[c.pos], walk->by_arg);
      if (!x.same_key(k)) continue;
      walk->add(x);
      if (++c.pos == c.buf.size() && c.next < c.end) refill(c);
    }
  }
  walk->finish();
  return ok;
}

// The same when some group's `step` arguments do not increase: every step's key sorted by key
// and group (key_sorter: through a temporary file past the step rows' budget), then walked.
// A group that repeats a key ends the walk (*repeated): the caller matches by index instead.
bool compare_sorted(const analysis_result &r, key_walk *walk) {
  key_sorter sorter(step_rows_budget());
  bool ok = true;
  std::vector<step_result> piece;
  // A repeat in one run's rows already decides it: the rest is not sorted.
  for (size_t i = 0; i < r.steps.size() && !sorter.found_equal(); i += piece.size()) {
    ok = r.steps.read(i, 4096, &piece);
    for (const step_result &s : piece) sorter.add(row_of(s, true));
    if (!ok || piece.empty()) break;
  }
  if (sorter.found_equal()) {
    walk->repeated = true;
    return ok;
  }
  ok = sorter.for_each_sorted([&](const key_row &k) { return walk->add(k); }) && ok;
  if (!walk->repeated) walk->finish();
  return ok;
}

// The compared keys in the order of their text: the worst (the first of the greatest ratio),
// the mean (summed in that order) and the p50 of the ratios (positive doubles, so their bits
// select as integers do: the durations' selection, spilled past the budget). False when a
// temporary file cannot be read back.
bool key_totals(figure_sorter &keys, analysis_result *r) {
  const size_t budget = step_rows_budget();
  spill_store file;
  name_durations ratios;  // the ratios' bits
  uint64_t n = 0;
  double sum = 0;
  bool ok = keys.for_each_sorted([&](const key_figure_row &k) {
    if (!k.has_ratio) return true;
    if (k.ratio > r->imbalance_max || n == 0) {
      r->imbalance_max = k.ratio;
      r->imbalance_worst_step = k.text;
      r->imbalance_worst_group = k.worst;
    }
    ++n;
    sum += k.ratio;
    uint64_t bits;
    std::memcpy(&bits, &k.ratio, sizeof bits);
    ratios.durs.push_back(bits);
    if (budget && ratios.durs.size() >= budget) ratios.spill(file);
    return true;
  });
  r->steps_compared = n;
  if (!n) return ok;
  r->imbalance_mean = sum / static_cast<double>(n);
  std::vector<uint64_t> at;
  ok = select_durations(ratios, &file, {(n + 1) / 2}, &at, budget ? budget : size_t{1} << 20) && ok;
  if (at.size() == 1) std::memcpy(&r->imbalance_p50, &at[0], sizeof at[0]);
  return ok;
}

}  // namespace

// Stragglers and imbalance: steps matched across groups by their `step` (and `epoch`)
// arguments when every step has one and no group repeats one, else by index. The keys are
// taken in the order of their text (key_totals), stragglers by excess, group and key
// (straggler_list: sorted past the step rows' budget through temporary files).
void compare_steps(analysis_result *r, const std::vector<uint8_t> &increasing, bool all_args) {
  const bool by_arg = !r->steps.empty() && all_args;
  bool streamed = true;
  for (size_t g = 0; g < increasing.size() && by_arg; ++g) streamed = streamed && increasing[g];
  figure_sorter keys(step_rows_budget());
  r->stragglers = straggler_list(step_rows_budget());
  key_walk walk{by_arg, r, &keys, {}, false};
  bool ok = streamed ? compare_streamed(*r, &walk) : compare_sorted(*r, &walk);
  if (walk.repeated) {  // a group repeats a key: every step matched by index
    keys = figure_sorter(step_rows_budget());
    r->stragglers = straggler_list(step_rows_budget());
    walk = key_walk{false, r, &keys, {}, false};
    ok = compare_streamed(*r, &walk) && ok;
  }
  ok = key_totals(keys, r) && ok;
  ok = r->stragglers.finish() && ok;
  if (!ok)
    r->process_problems.push_back(
        "the analysis's temporary file of steps could not be read back: the steps' comparison "
        "(stragglers, imbalance) is incomplete");
}

// One pass over the steps: the totals, p50 and p99 (the durations selected as `dftrace diff`
// selects a name's, spilled past the budget), and per group whether its `step` arguments
// increase (*increasing) and whether every step has one (*all_args).
void step_totals(analysis_result *r, std::vector<uint8_t> *increasing, bool *all_args) {
  const size_t budget = step_rows_budget();
  spill_store file;
  name_durations durs;
  increasing->assign(r->groups.size(), 1);
  *all_args = true;
  step_result prev;
  bool ok = r->steps.for_each([&](const step_result &s, size_t i) {
    for (size_t k = 0; k <= k_nbound; ++k) add_ns(&r->bound_total[k], s.parts[k]);
    add_ns(&r->step_total, s.dur);  // each bound_total[k] is part of it
    *all_args = *all_args && s.has_step;
    if (i && prev.group == s.group && !(row_of(prev, true).key() < row_of(s, true).key()))
      (*increasing)[s.group] = 0;
    prev = s;
    durs.durs.push_back(s.dur);
    if (budget && durs.durs.size() >= budget) durs.spill(file);
  });
  const uint64_t n = durs.count();
  std::vector<uint64_t> ks, at;
  for (unsigned p : {50u, 99u}) ks.push_back(std::max<uint64_t>(1, (p * n + 99) / 100));
  if (n) ok = select_durations(durs, &file, ks, &at, budget ? budget : size_t{1} << 20) && ok;
  if (n && at.size() == 2) {
    r->step_p50 = at[0];
    r->step_p99 = at[1];
  }
  if (!ok)
    r->process_problems.push_back(
        "the analysis's temporary file of steps could not be read back: the steps' figures are "
        "incomplete");
}

}  // namespace dftrace::analysis
