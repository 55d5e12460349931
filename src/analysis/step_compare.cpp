// step_compare.cpp: the run's steps taken together: their totals and percentiles, and each
// step compared across groups (stragglers, imbalance), streamed from the step store.
#include "analysis/step_compare.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/name_stats.hpp"
#include "analysis/spill.hpp"

namespace dftrace::analysis {

namespace {

std::string step_key(const step_result &s, bool by_arg) {
  if (!by_arg) return "#" + std::to_string(s.index);
  return s.has_epoch ? std::to_string(s.epoch) + ":" + std::to_string(s.step)
                     : std::to_string(s.step);
}

// The steps with one key: order[begin, end) (indices into r.steps, in their order there).
struct key_run {
  std::string key;
  size_t begin = 0, end = 0;
};

// v sorted by less. Each group's steps usually come in key order already, one sorted run per
// group: then the runs are merged pairwise (log2 of the groups' number of passes, each reading
// the steps in order) rather than sorted from scratch. The same order either way: less is
// total on v's items (no two equal).
template <class T, class Less>
void sort_runs(std::vector<T> *v, Less less) {
  std::vector<size_t> bounds{0};
  for (size_t i = 1; i < v->size(); ++i)
    if (less((*v)[i], (*v)[i - 1])) bounds.push_back(i);
  bounds.push_back(v->size());
  if (bounds.size() > 2 + v->size() / 16) {
    std::sort(v->begin(), v->end(), less);
    return;
  }
  while (bounds.size() > 2) {
    std::vector<size_t> next{0};
    for (size_t k = 0; k + 2 < bounds.size(); k += 2) {
      std::inplace_merge(v->begin() + static_cast<std::ptrdiff_t>(bounds[k]),
                         v->begin() + static_cast<std::ptrdiff_t>(bounds[k + 1]),
                         v->begin() + static_cast<std::ptrdiff_t>(bounds[k + 2]), less);
      next.push_back(bounds[k + 2]);
    }
    if (bounds.size() % 2 == 0) next.push_back(bounds.back());  // an odd run out: kept
    bounds.swap(next);
  }
}

// The steps grouped by key (step_key's text), the runs in the order of that text: keyed by
// numbers first (the text is a function of them, one to one), so that each key is made once.
// True when some group has two steps of one key.
bool group_by_key(const std::vector<step_result> &st, size_t ngroups, bool by_arg,
                  std::vector<uint32_t> *order, std::vector<key_run> *runs) {
  auto num = [&](uint32_t i) {
    const step_result &s = st[i];
    return by_arg ? std::make_tuple(s.has_epoch, s.has_epoch ? s.epoch : 0, s.step)
                  : std::make_tuple(false, int64_t{0}, static_cast<int64_t>(s.index));
  };
  order->resize(st.size());
  for (size_t i = 0; i < st.size(); ++i) (*order)[i] = static_cast<uint32_t>(i);
  // By number, then position (as a stable sort would): 4 bytes per step beside the steps.
  sort_runs(order, [&](uint32_t a, uint32_t b) {
    const auto x = num(a), y = num(b);
    return x < y || (x == y && a < b);
  });
  runs->clear();
  bool repeated = false;
  std::vector<size_t> last_run(ngroups, SIZE_MAX);  // per group: its last step's run
  for (size_t i = 0; i < order->size(); ++i) {
    if (i == 0 || num((*order)[i]) != num((*order)[i - 1]))
      runs->push_back({step_key(st[(*order)[i]], by_arg), i, i});
    runs->back().end = i + 1;
    size_t &last = last_run[st[(*order)[i]].group];
    repeated = repeated || last == runs->size() - 1;
    last = runs->size() - 1;
  }
  std::sort(runs->begin(), runs->end(),
            [](const key_run &a, const key_run &b) { return a.key < b.key; });
  return repeated;
}

// A step's key in numbers: its `step` and `epoch` arguments, or its index in the group. The
// key's text (step_key) is a function of these, one to one.
using key_num = std::tuple<bool, int64_t, int64_t>;
key_num num_key(const step_result &s, bool by_arg) {
  return by_arg ? std::make_tuple(s.has_epoch, s.has_epoch ? s.epoch : 0, s.step)
                : std::make_tuple(false, int64_t{0}, static_cast<int64_t>(s.index));
}

// Whether two of keys are equal (sorts them).
bool repeats(std::vector<key_num> *keys) {
  std::sort(keys->begin(), keys->end());
  return std::adjacent_find(keys->begin(), keys->end()) != keys->end();
}

// What the steps of one key give: its text, the max over median (has_ratio: the median is not
// 0) and the group of the longest step.
struct key_figures {
  std::string key;
  double ratio = 0;
  bool has_ratio = false;
  size_t worst = 0;
};

// The steps of one key (at least two groups'; in group order): their median, stragglers and
// ratio.
void compare_key(const std::vector<step_result> &same, bool by_arg, analysis_result *r,
                 std::vector<key_figures> *keys) {
  std::vector<uint64_t> d;
  for (const step_result &s : same) d.push_back(s.dur);
  std::sort(d.begin(), d.end());
  const size_t n = d.size();
  const uint64_t median = n % 2 ? d[n / 2] : d[n / 2 - 1] + (d[n / 2] - d[n / 2 - 1]) / 2;
  const std::string key = step_key(same[0], by_arg);
  const step_result *worst = &same[0];
  for (const step_result &s : same) {
    if (s.dur > worst->dur) worst = &s;
    if (s.dur > median && s.dur - median > k_straggler_margin_ns &&
        s.dur * k_straggler_den > median * k_straggler_num)
      r->stragglers.push_back({s.group, key, s.dur, median});
  }
  key_figures k{key, 0, median != 0, worst->group};
  if (k.has_ratio) k.ratio = static_cast<double>(d.back()) / static_cast<double>(median);
  keys->push_back(std::move(k));
}

// Each group's steps in key order, read back a piece at a time: the keys met in two groups or
// more, in the order of their numbers, each compared. Needs every group's keys increasing.
void compare_streamed(const analysis_result &r, bool by_arg, analysis_result *out,
                      std::vector<key_figures> *keys) {
  struct cursor {
    size_t next = 0, end = 0, pos = 0;
    std::vector<step_result> buf;
    bool live() const { return pos < buf.size(); }
  };
  std::vector<cursor> cur(r.groups.size());
  auto refill = [&](cursor &c) {
    c.pos = 0;
    if (!r.steps.read(c.next, std::min<size_t>(512, c.end - c.next), &c.buf)) c.buf.clear();
    c.next += c.buf.size();
  };
  size_t at = 0;
  for (size_t g = 0; g < cur.size(); ++g) {
    cur[g].next = at;
    cur[g].end = at += r.groups[g].steps;
    refill(cur[g]);
  }
  std::vector<step_result> same;
  for (;;) {
    const key_num *least = nullptr;
    key_num k;
    for (const cursor &c : cur)
      if (c.live() && (!least || num_key(c.buf[c.pos], by_arg) < *least))
        least = &(k = num_key(c.buf[c.pos], by_arg));
    if (!least) break;
    same.clear();
    for (cursor &c : cur) {
      if (!c.live() || num_key(c.buf[c.pos], by_arg) != k) continue;
      same.push_back(c.buf[c.pos]);
      if (++c.pos == c.buf.size() && c.next < c.end) refill(c);
    }
    if (same.size() >= 2) compare_key(same, by_arg, out, keys);
  }
}

// The same from every step in memory (a group whose `step` arguments do not increase).
void compare_in_memory(const analysis_result &r, bool by_arg, analysis_result *out,
                       std::vector<key_figures> *keys) {
  std::vector<step_result> st;
  r.steps.read(0, r.steps.size(), &st);
  std::vector<uint32_t> order;
  std::vector<key_run> runs;
  if (group_by_key(st, r.groups.size(), by_arg, &order, &runs) && by_arg) {
    by_arg = false;
    group_by_key(st, r.groups.size(), false, &order, &runs);
  }
  std::vector<step_result> same;
  for (const key_run &run : runs) {
    same.clear();
    for (size_t i = run.begin; i < run.end; ++i) same.push_back(st[order[i]]);
    if (same.size() >= 2) compare_key(same, by_arg, out, keys);
  }
}

}  // namespace

// Stragglers and imbalance: steps matched across groups by their `step` (and `epoch`)
// arguments when by_args (every step has one and no group repeats one), else by index. The
// keys are taken in the order of their text (the worst: the first of the greatest ratio; the
// mean sums in that order), stragglers by excess, group and key. By index, or by arguments
// that increase in every group, the steps are streamed; else held in memory and sorted.
void compare_steps(analysis_result *r, const std::vector<uint8_t> &increasing, bool by_args) {
  const bool by_arg = !r->steps.empty() && by_args;
  bool streamed = true;
  for (size_t g = 0; g < increasing.size() && by_arg; ++g) streamed = streamed && increasing[g];
  std::vector<key_figures> keys;
  if (streamed)
    compare_streamed(*r, by_arg, r, &keys);
  else
    compare_in_memory(*r, by_arg, r, &keys);
  std::sort(keys.begin(), keys.end(),
            [](const key_figures &a, const key_figures &b) { return a.key < b.key; });
  std::vector<double> ratios;
  for (const key_figures &k : keys) {
    if (!k.has_ratio) continue;
    if (k.ratio > r->imbalance_max || ratios.empty()) {
      r->imbalance_max = k.ratio;
      r->imbalance_worst_step = k.key;
      r->imbalance_worst_group = k.worst;
    }
    ratios.push_back(k.ratio);
  }
  r->steps_compared = ratios.size();
  if (!ratios.empty()) {
    double sum = 0;
    for (double x : ratios) sum += x;
    r->imbalance_mean = sum / static_cast<double>(ratios.size());
    std::sort(ratios.begin(), ratios.end());
    r->imbalance_p50 = ratios[(ratios.size() + 1) / 2 - 1];
  }
  std::sort(r->stragglers.begin(), r->stragglers.end(), [](const straggler &a, const straggler &b) {
    if (a.dur - a.median != b.dur - b.median) return a.dur - a.median > b.dur - b.median;
    return a.group != b.group ? a.group < b.group : a.step < b.step;
  });
}

// One pass over the steps: the totals, p50 and p99 (the durations selected as `dftrace diff`
// selects a name's, spilled past the budget), per group whether its `step` arguments increase
// (*increasing), and whether steps can be matched by them (*by_args: every step has one and no
// group repeats one). A group's keys are held while it is read, and sorted only when they do
// not increase.
void step_totals(analysis_result *r, std::vector<uint8_t> *increasing, bool *by_args) {
  const size_t budget = step_rows_budget();
  spill_store file;
  name_durations durs;
  increasing->assign(r->groups.size(), 1);
  *by_args = true;
  step_result prev;
  std::vector<key_num> keys;  // the group's keys, while matching by arguments is possible
  size_t group = SIZE_MAX;
  auto group_done = [&] {
    if (*by_args && group != SIZE_MAX && !(*increasing)[group] && repeats(&keys)) *by_args = false;
    keys.clear();
  };
  bool ok = r->steps.for_each([&](const step_result &s, size_t i) {
    for (size_t k = 0; k <= k_nbound; ++k) r->bound_total[k] += s.parts[k];
    r->step_total += s.dur;
    if (s.group != group) {
      group_done();
      group = s.group;
    }
    *by_args = *by_args && s.has_step;
    if (*by_args) keys.push_back(num_key(s, true));
    if (i && prev.group == s.group && !(num_key(prev, true) < num_key(s, true)))
      (*increasing)[s.group] = 0;
    prev = s;
    durs.durs.push_back(s.dur);
    if (budget && durs.durs.size() >= budget) durs.spill(file);
  });
  group_done();
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
