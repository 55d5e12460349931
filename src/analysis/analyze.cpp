// analyze.cpp: groups from ranks and parents, then per group the exact unions, overlaps, self
// time and steps; then the comparison of steps across ranks.
#include "analysis/analyze.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_map>

#include "analysis/intervals.hpp"
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include "reader/line_parser.hpp"

namespace dftrace::analysis {

uint64_t percentile_sorted(const std::vector<uint64_t> &v, unsigned p) {
  if (v.empty()) return 0;
  size_t k = (static_cast<size_t>(p) * v.size() + 99) / 100;  // ceil(p% of n), nearest rank
  return v[k ? k - 1 : 0];
}

namespace {

std::string canonical_pid(const std::string &s) {
  std::string n;
  return detail::canonical_number(s, &n) ? n : s;
}

// Numbers by value (shorter first), then text.
bool pid_less(const std::string &a, const std::string &b) {
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}

struct proc {
  std::string key, host, pid;  // key: host '\x1f' pid as written; pid: canonical
  process_facts *facts = nullptr;
  long parent = -1;
  size_t group = 0;
};

// Processes, their parents (the process of the same host whose pid is the `ppid` of their
// `start` event) and their groups (a process with a rank other than its parent's, or without
// a parent in the trace, roots a group; every other process joins its parent's).
std::vector<proc> build_processes(std::map<std::string, process_facts> &procs,
                                  std::vector<size_t> *roots) {
  std::vector<proc> ps;
  std::unordered_map<std::string, std::vector<size_t>> by_pid;
  for (auto &kv : procs) {
    proc p;
    p.key = kv.first;
    p.host = kv.second.host;
    p.pid = canonical_pid(kv.first.substr(kv.first.find('\x1f') + 1));
    p.facts = &kv.second;
    by_pid[p.pid].push_back(ps.size());
    ps.push_back(std::move(p));
  }
  for (proc &p : ps) {
    if (p.facts->parent().empty()) continue;
    const auto it = by_pid.find(canonical_pid(p.facts->parent()));
    if (it == by_pid.end()) continue;
    for (size_t q : it->second)
      if (ps[q].host == p.host || it->second.size() == 1) p.parent = static_cast<long>(q);
  }
  std::map<size_t, size_t> group_of_root;
  for (size_t i = 0; i < ps.size(); ++i) {
    size_t r = i;
    // Up while the process has no rank of its own, or its parent's (a worker that inherited
    // its rank from the environment, as torch's RANK is).
    for (size_t hops = 0; ps[r].parent >= 0 && hops < ps.size(); ++hops) {
      const process_facts &f = *ps[r].facts, &pf = *ps[static_cast<size_t>(ps[r].parent)].facts;
      if (f.has_rank && !(pf.has_rank && pf.rank == f.rank)) break;
      r = static_cast<size_t>(ps[r].parent);
    }
    ps[i].group = r;  // the root's index for now
  }
  for (size_t i = 0; i < ps.size(); ++i)
    if (ps[i].group == i) roots->push_back(i);
  // Groups in a fixed order: ranked ones by rank, then the others by host and pid.
  std::sort(roots->begin(), roots->end(), [&](size_t a, size_t b) {
    const process_facts &fa = *ps[a].facts, &fb = *ps[b].facts;
    if (fa.has_rank != fb.has_rank) return fa.has_rank;
    if (fa.has_rank && fa.rank != fb.rank) return fa.rank < fb.rank;
    if (ps[a].pid != ps[b].pid) return pid_less(ps[a].pid, ps[b].pid);
    return ps[a].host < ps[b].host;
  });
  for (size_t g = 0; g < roots->size(); ++g) group_of_root[(*roots)[g]] = g;
  for (proc &p : ps) p.group = group_of_root[p.group];
  return ps;
}

std::string group_label_of(const group_result &g) {
  return g.has_rank ? "rank " + std::to_string(g.rank)
                    : "pid " + (g.pids.empty() ? std::string("?") : g.pids[0]);
}

struct group_work {
  std::vector<std::vector<interval>> layer_iv, self_iv;    // per layer: the threads' runs
  std::vector<std::vector<size_t>> layer_runs, self_runs;  // where each thread's run begins
  std::vector<step_event> steps, iters;
};

// One sweep over a thread's events in start order (at equal times the enclosing first: longer,
// or written later): the union of each layer on the thread, and the time each layer is the
// innermost work of the thread. Both come out sorted, so the group's unions merge short lists.
void sweep_thread(std::vector<layered_event> &ev, group_work &w) {
  std::vector<std::vector<interval>> *layer_iv = &w.layer_iv, *self = &w.self_iv;
  std::sort(ev.begin(), ev.end(), [](const layered_event &a, const layered_event &b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.end != b.end) return a.end > b.end;
    return a.seq > b.seq;
  });
  auto add = [](std::vector<interval> &v, uint64_t s, uint64_t e) {
    if (!v.empty() && v.back().end >= s) {  // abutting or overlapping: one interval
      if (e > v.back().end) v.back().end = e;
    } else {
      v.push_back({s, e});
    }
  };
  std::vector<std::vector<interval>> own(layer_iv->size()), own_self(layer_iv->size());
  std::vector<const layered_event *> stack;
  uint64_t t = 0;
  auto advance = [&](uint64_t to) {
    while (!stack.empty()) {
      const layered_event &top = *stack.back();
      if (top.end > to) {
        if (t < to) add(own_self[top.layer], t, to);
        break;
      }
      if (t < top.end) add(own_self[top.layer], t, top.end);
      t = std::max(t, top.end);
      stack.pop_back();
    }
    t = std::max(t, to);
  };
  for (const layered_event &e : ev) {
    if (e.end <= e.start) continue;
    advance(e.start);
    stack.push_back(&e);
    add(own[e.layer], e.start, e.end);
  }
  advance(UINT64_MAX);
  for (size_t l = 0; l < own.size(); ++l) {
    if (!own[l].empty()) w.layer_runs[l].push_back((*layer_iv)[l].size());
    if (!own_self[l].empty()) w.self_runs[l].push_back((*self)[l].size());
    (*layer_iv)[l].insert((*layer_iv)[l].end(), own[l].begin(), own[l].end());
    (*self)[l].insert((*self)[l].end(), own_self[l].begin(), own_self[l].end());
  }
}

// The outermost `.iter` events of a thread (not inside another `.iter` event of it).
void outermost(std::vector<step_event> &it, std::vector<step_event> *out) {
  std::sort(it.begin(), it.end(), [](const step_event &a, const step_event &b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  });
  uint64_t cur_end = 0;
  bool any = false;
  for (const step_event &s : it) {
    if (any && s.end <= cur_end) continue;
    out->push_back(s);
    cur_end = s.end;
    any = true;
  }
}

void layer_figures(group_work &w, const layer_table &table, group_result *g,
                   std::vector<interval_set> *unions) {
  const size_t nl = table.layers().size();
  unions->resize(nl);
  g->union_ns.assign(nl, 0);
  g->self_ns.assign(nl, 0);
  for (size_t l = 0; l < nl; ++l) {
    (*unions)[l] = union_of_runs(w.layer_iv[l], w.layer_runs[l]);
    g->union_ns[l] = measure((*unions)[l]);
    g->self_ns[l] = measure(union_of_runs(w.self_iv[l], w.self_runs[l]));
    std::vector<interval>().swap(w.layer_iv[l]);
  }
  for (size_t a = 0; a < nl; ++a)
    for (size_t b = a + 1; b < nl; ++b)
      g->overlap_ns.emplace_back(table.layers()[a].name + "+" + table.layers()[b].name,
                                 intersect_measure((*unions)[a], (*unions)[b]));
  const int ci = table.index_of("compute");
  for (size_t l = 0; l < nl; ++l) {
    if (static_cast<int>(l) == ci) continue;
    const uint64_t hidden = ci < 0 ? 0 : intersect_measure((*unions)[l], (*unions)[ci]);
    g->unoverlapped_ns.emplace_back(table.layers()[l].name, g->union_ns[l] - hidden);
  }
}

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
bool group_by_key(const analysis_result &r, bool by_arg, std::vector<uint32_t> *order,
                  std::vector<key_run> *runs) {
  const std::vector<step_result> &st = r.steps;
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
  std::vector<size_t> last_run(r.groups.size(), SIZE_MAX);  // per group: its last step's run
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

// Stragglers and imbalance: steps matched across groups by their `step` (and `epoch`)
// arguments when every step has one and no group repeats one, else by index.
void compare_steps(analysis_result *r) {
  bool by_arg = !r->steps.empty();
  for (const step_result &s : r->steps) by_arg = by_arg && s.has_step;
  std::vector<uint32_t> order;
  std::vector<key_run> runs;
  if (group_by_key(*r, by_arg, &order, &runs) && by_arg) group_by_key(*r, false, &order, &runs);
  std::vector<double> ratios;
  std::vector<const step_result *> same;
  for (const key_run &run : runs) {
    same.clear();
    for (size_t i = run.begin; i < run.end; ++i) same.push_back(&r->steps[order[i]]);
    if (same.size() < 2) continue;
    std::vector<uint64_t> d;
    for (const step_result *s : same) d.push_back(s->dur);
    std::sort(d.begin(), d.end());
    const size_t n = d.size();
    const uint64_t median = n % 2 ? d[n / 2] : d[n / 2 - 1] + (d[n / 2] - d[n / 2 - 1]) / 2;
    const step_result *worst = same[0];
    for (const step_result *s : same) {
      if (s->dur > worst->dur) worst = s;
      if (s->dur > median && s->dur - median > k_straggler_margin_ns &&
          s->dur * k_straggler_den > median * k_straggler_num)
        r->stragglers.push_back({s->group, run.key, s->dur, median});
    }
    if (median == 0) continue;
    const double ratio = static_cast<double>(d.back()) / static_cast<double>(median);
    if (ratio > r->imbalance_max || ratios.empty()) {
      r->imbalance_max = ratio;
      r->imbalance_worst_step = run.key;
      r->imbalance_worst_group = worst->group;
    }
    ratios.push_back(ratio);
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
    return a.dur - a.median != b.dur - b.median ? a.dur - a.median > b.dur - b.median
                                                : a.group < b.group;
  });
}

void check_counts(const std::vector<proc> &ps, analysis_result *r) {
  for (const proc &p : ps) {
    const process_facts &f = *p.facts;
    if (!f.has_end) {
      ++r->processes_without_end;
      continue;
    }
    // dftrace counts events (aggregated records by dft_cnt); DFTracer every line with an id,
    // metadata included, which `dftrace merge` keeps once for all processes.
    if (f.end_num_events == f.event_records) continue;
    if (!f.dftrace_writer && f.end_num_events == f.id_lines) continue;
    const std::string what = "process " + p.pid + (p.host.empty() ? "" : " on " + p.host) +
                             ": its end event says " + std::to_string(f.end_num_events) +
                             " events, " + std::to_string(f.event_records) + " were read";
    if (!f.dftrace_writer && f.shared_file && f.event_records <= f.end_num_events)
      r->process_warnings.push_back(what +
                                    " (not checked: DFTracer counts metadata lines, "
                                    "which a merged trace holds once)");
    else
      r->process_problems.push_back(what);
  }
}

// The group's steps, each split by the priority timeline of its unions.
void group_steps(std::vector<step_event> &st, size_t g, const priority_timeline &tl,
                 std::vector<step_result> *out) {
  std::sort(st.begin(), st.end(), [](const step_event &a, const step_event &b) {
    return a.start != b.start ? a.start < b.start : a.end < b.end;
  });
  std::vector<uint64_t> parts;
  for (size_t i = 0; i < st.size(); ++i) {
    step_result s;
    s.group = static_cast<uint32_t>(g);
    s.index = static_cast<uint32_t>(i);
    s.start = st[i].start;
    s.dur = st[i].end - st[i].start;
    s.has_step = st[i].has_step;
    s.step = st[i].step;
    s.has_epoch = st[i].has_epoch;
    s.epoch = st[i].epoch;
    tl.split(st[i].start, st[i].end, &parts);
    for (size_t k = 0; k <= k_nbound; ++k) s.parts[k] = parts[k];
    out->push_back(s);
  }
}

// Each group's result with its root's rank and host, its pids (root first) and its span.
void init_groups(const std::vector<proc> &ps, const std::vector<size_t> &roots, size_t nl,
                 std::vector<group_work> *work, std::vector<group_partial> *r) {
  work->resize(roots.size());
  r->resize(roots.size());
  for (size_t g = 0; g < roots.size(); ++g) {
    group_work &w = (*work)[g];
    w.layer_iv.resize(nl);
    w.self_iv.resize(nl);
    w.layer_runs.resize(nl);
    w.self_runs.resize(nl);
    const proc &root = ps[roots[g]];
    group_result &x = (*r)[g].fig;
    x.has_rank = root.facts->has_rank;
    x.rank = root.facts->rank;
    x.host = root.host;
    x.pids.push_back(root.pid);
    (*r)[g].procs.push_back(root.key);
  }
  std::vector<uint64_t> gmin(roots.size(), UINT64_MAX), gmax(roots.size(), 0);
  for (size_t i = 0; i < ps.size(); ++i) {
    const size_t g = ps[i].group;
    group_result &x = (*r)[g].fig;
    if (i != roots[g]) {
      x.pids.push_back(ps[i].pid);
      (*r)[g].procs.push_back(ps[i].key);
    }
    gmin[g] = std::min(gmin[g], ps[i].facts->ts_min);
    x.checkpoint_events += ps[i].facts->checkpoint_events;
    x.checkpoint_max_ns = std::max(x.checkpoint_max_ns, ps[i].facts->checkpoint_max_ns);
    gmax[g] = std::max(gmax[g], ps[i].facts->end_max);
  }
  for (size_t g = 0; g < roots.size(); ++g) {
    group_result &x = (*r)[g].fig;
    std::sort(x.pids.begin() + 1, x.pids.end(), pid_less);
    x.start = gmin[g] == UINT64_MAX ? 0 : gmin[g];
    x.span = gmax[g] > x.start ? gmax[g] - x.start : 0;
  }
}

// Each group of a partial matched with the group of the same root in the whole run: the same
// processes, all of them (*src: the partial and the group there, per group of the run).
bool match_groups(const std::vector<analysis_partial> &parts, const std::vector<proc> &ps,
                  const std::vector<size_t> &roots, std::vector<std::pair<size_t, size_t>> *src,
                  std::string *why) {
  std::unordered_map<std::string, size_t> proc_index;
  for (size_t i = 0; i < ps.size(); ++i) proc_index[ps[i].key] = i;
  std::vector<size_t> gsize(roots.size(), 0);
  for (const proc &p : ps) ++gsize[p.group];
  src->assign(roots.size(), {SIZE_MAX, 0});
  for (size_t p = 0; p < parts.size(); ++p) {
    for (size_t j = 0; j < parts[p].groups.size(); ++j) {
      const group_partial &gp = parts[p].groups[j];
      const size_t g = ps[proc_index.at(gp.procs[0])].group;
      bool ok = roots[g] == proc_index.at(gp.procs[0]) && gsize[g] == gp.procs.size() &&
                (*src)[g].first == SIZE_MAX;
      for (const std::string &k : gp.procs) ok = ok && ps[proc_index.at(k)].group == g;
      if (!ok) {
        *why = "the group of " + group_label_of(gp.fig) +
               " was split: its processes were not all analysed together";
        return false;
      }
      (*src)[g] = {p, j};
    }
  }
  return true;
}

// The run's steps in group order, their totals and p50/p99. One partial whose groups are in
// the run's order (one machine) hands its array over: the steps are held once, never copied.
void take_steps(std::vector<analysis_partial> &parts,
                const std::vector<std::pair<size_t, size_t>> &src, bool any_step_event,
                const layer_table &table, analysis_result *r) {
  bool in_place = parts.size() == 1;
  for (size_t g = 0; g < src.size() && in_place; ++g) in_place = src[g].second == g;
  if (in_place) {
    r->steps = std::move(parts[0].steps);
  } else {
    size_t nsteps = 0;
    for (const analysis_partial &p : parts) nsteps += p.steps.size();
    r->steps.reserve(nsteps);
  }
  size_t kept = 0;
  for (size_t g = 0; g < src.size(); ++g) {
    const analysis_partial &part = parts[src[g].first];
    group_partial &gp = parts[src[g].first].groups[src[g].second];
    r->groups[g] = std::move(gp.fig);
    if (gp.readback_failed)
      r->process_problems.push_back("the analysis's temporary file could not be read back: " +
                                    group_label_of(r->groups[g]) + " is incomplete");
    // A part without step events took its `.iter` events; the run has step events, so this
    // group has no steps (its own would be step events).
    if (any_step_event && !part.any_step_event && !table.explicit_steps()) {
      r->groups[g].steps = 0;
      continue;
    }
    const step_result *from = in_place ? r->steps.data() : part.steps.data();
    for (size_t i = gp.first_step; i < gp.first_step + gp.nsteps; ++i) {
      step_result s = from[i];
      s.group = static_cast<uint32_t>(g);
      if (in_place)
        r->steps[kept++] = s;  // kept <= i: groups dropped above only move the rest down
      else
        r->steps.push_back(s);
    }
  }
  if (in_place) r->steps.resize(kept);
  for (analysis_partial &p : parts) std::vector<step_result>().swap(p.steps);
  std::vector<uint64_t> durs;
  durs.reserve(r->steps.size());
  for (const step_result &s : r->steps) {
    for (size_t k = 0; k <= k_nbound; ++k) r->bound_total[k] += s.parts[k];
    r->step_total += s.dur;
    durs.push_back(s.dur);
  }
  std::sort(durs.begin(), durs.end());
  r->step_p50 = percentile_sorted(durs, 50);
  r->step_p99 = percentile_sorted(durs, 99);
}

}  // namespace

analysis_partial analyze_groups(collection &c, const layer_table &table) {
  analysis_partial out;
  std::vector<size_t> roots;
  std::vector<proc> ps = build_processes(c.procs, &roots);
  std::unordered_map<std::string, size_t> proc_index;
  for (size_t i = 0; i < ps.size(); ++i) proc_index[ps[i].key] = i;
  std::vector<group_work> work;
  init_groups(ps, roots, table.layers().size(), &work, &out.groups);
  // Each group's threads, then one group at a time: only its events are in memory (read back
  // from the spill file), and what it leaves is its figures and its steps.
  std::vector<std::vector<thread_events *>> threads_of(roots.size());
  for (auto &kv : c.threads) {
    const size_t sep = kv.first.find('\x1f', kv.first.find('\x1f') + 1);
    const auto pi = proc_index.find(kv.first.substr(0, sep));
    if (pi == proc_index.end()) continue;
    threads_of[ps[pi->second].group].push_back(&kv.second);
    out.any_step_event = out.any_step_event || !kv.second.steps.empty();
  }
  // Each process's asynchronous calls tied to their waits (its comm_id numbers are its own),
  // then its calls joined to its group's.
  for (auto &kv : c.colls) {
    const auto pi = proc_index.find(kv.first);
    if (pi == proc_index.end()) continue;
    kv.second.resolve_waits();
    out.groups[ps[pi->second].group].colls.append(kv.second);
  }
  c.colls.clear();
  for (group_partial &gp : out.groups) {
    gp.colls.calls.shrink_to_fit();  // held until phase 2: no room left from doubling
    gp.colls.canonical();
  }
  // Room for every step at once (pages are touched only as they are filled): an array that
  // grew by doubling would hold its old and new copies together.
  const bool by_step_events = out.any_step_event || table.explicit_steps();
  size_t room = 0;
  for (auto &kv : c.threads)
    room += by_step_events ? kv.second.steps.size() : kv.second.iters.size();
  out.steps.reserve(room);
  std::vector<layered_event> ev;
  for (size_t g = 0; g < roots.size(); ++g) {
    group_work &w = work[g];
    group_partial &gp = out.groups[g];
    for (thread_events *te : threads_of[g]) {
      if (!te->take_layered(&c.spill, &ev)) gp.readback_failed = true;
      sweep_thread(ev, w);
      w.steps.insert(w.steps.end(), te->steps.begin(), te->steps.end());
      outermost(te->iters, &w.iters);
      std::vector<step_event>().swap(te->steps);
      std::vector<step_event>().swap(te->iters);
    }
    std::vector<interval_set> unions;
    layer_figures(w, table, &gp.fig, &unions);
    std::vector<interval_set> classes;
    for (const char *name : k_bound_classes) {
      const int li = table.index_of(name);
      classes.push_back(li < 0 ? interval_set() : unions[li]);
    }
    const priority_timeline tl(classes);
    gp.first_step = out.steps.size();
    group_steps(by_step_events ? w.steps : w.iters, g, tl, &out.steps);
    gp.nsteps = out.steps.size() - gp.first_step;
    gp.fig.steps = gp.nsteps;
    w = group_work();
#if defined(__GLIBC__)
    // The group's step candidates and intervals were freed, but glibc keeps freed chunks inside
    // its heap resident (they lie below live ones): handed back to the system here, the pages
    // the steps array fills next do not come on top of them.
    malloc_trim(0);
#endif
  }
  out.procs = std::move(c.procs);
  out.io = std::move(c.io);
  return out;
}

bool merge_partials(std::vector<analysis_partial> &parts, const layer_table &table,
                    analysis_result *out, std::string *why) {
  analysis_result r;
  for (const auto &l : table.layers()) r.layers.push_back(l.name);
  std::map<std::string, process_facts> procs;
  bool any_step_event = false;
  for (analysis_partial &p : parts) {
    any_step_event = any_step_event || p.any_step_event;
    for (auto &kv : p.procs)
      if (!procs.emplace(kv.first, kv.second).second) {
        *why = "process " + kv.first.substr(kv.first.find('\x1f') + 1) +
               " was read in two parts: its files were not all analysed together";
        return false;
      }
  }
  std::vector<size_t> roots;
  std::vector<proc> ps = build_processes(procs, &roots);
  std::vector<std::pair<size_t, size_t>> src;
  if (!match_groups(parts, ps, roots, &src, why)) return false;
  check_counts(ps, &r);
  std::map<int64_t, bool> ranks;
  for (const proc &p : ps)
    if (p.facts->has_rank) ranks[p.facts->rank] = true;
  r.ranks = ranks.size();
  r.step_source = table.explicit_steps() ? "--steps " + table.step_name()
                  : any_step_event       ? "step"
                                         : ".iter";
  r.groups.resize(roots.size());
  take_steps(parts, src, any_step_event, table, &r);
  if (r.steps.empty()) r.step_source = table.explicit_steps() ? r.step_source : "";
  std::vector<const coll_data *> colls(roots.size());
  for (size_t g = 0; g < roots.size(); ++g)
    colls[g] = &parts[src[g].first].groups[src[g].second].colls;
  r.collectives = match_collectives(colls);
  compare_steps(&r);
  io_data io;
  for (analysis_partial &p : parts) io.merge(p.io);
  std::unordered_map<std::string, size_t> proc_index;
  for (size_t i = 0; i < ps.size(); ++i) proc_index[ps[i].key] = i;
  r.io = summarize_io(io, [&](const std::string &key) -> long {
    const auto pi = proc_index.find(key);
    return pi == proc_index.end() ? -1 : static_cast<long>(ps[pi->second].group);
  });
  *out = std::move(r);
  return true;
}

analysis_result analyze(collection &c, const layer_table &table) {
  std::vector<analysis_partial> parts;
  parts.push_back(analyze_groups(c, table));
  analysis_result r;
  std::string why;
  merge_partials(parts, table, &r, &why);  // one partial holds every group whole
  return r;
}

}  // namespace dftrace::analysis
