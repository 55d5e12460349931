// analyze.cpp: groups from ranks and parents, then per group the exact unions, overlaps, self
// time and steps; then the partials merged (the steps compared across ranks: step_compare).
#include "analysis/analyze.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_map>

#include "analysis/held_sum.hpp"
#include "analysis/inputs.hpp"
#include "analysis/intervals.hpp"
#include "analysis/name_stats.hpp"
#include "analysis/step_compare.hpp"
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include "reader/line_parser.hpp"

namespace dftrace::analysis {

size_t step_rows_budget() { return spill_budget() / 8 ? spill_budget() / 8 : spill_budget(); }

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
  std::string key, host, pid;  // key: process_key(); pid: canonical
  process_facts *facts = nullptr;
  long parent = -1;
  size_t parents_named = 0;  // processes that its parent pid could name (more than 1: none)
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
    p.pid = canonical_pid(pid_of_key(kv.first));
    p.facts = &kv.second;
    by_pid[p.pid].push_back(ps.size());
    ps.push_back(std::move(p));
  }
  for (proc &p : ps) {
    if (p.facts->parent().empty()) continue;
    const auto it = by_pid.find(canonical_pid(p.facts->parent()));
    if (it == by_pid.end()) continue;
    for (size_t q : it->second)
      if (ps[q].host == p.host || it->second.size() == 1) {
        p.parent = static_cast<long>(q);
        ++p.parents_named;
      }
    // Two processes of its host with its parent's pid (two ranks that share a pid): which one
    // started it is not written, so it joins neither (and is listed).
    if (p.parents_named > 1) p.parent = -1;
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

// The sums of durations (add_ns) and counts of calls (add_count) that reached 2^64-1, held
// there, never wrapped, listed
// as the byte sums are. A group's figures need none: each is a measure within its span.
void list_held_totals(analysis_result *r) {
  if (r->io.ns_held)
    r->process_problems.push_back(
        "the durations of the I/O calls reach 2^64-1 ns: the io section's time figures are held "
        "at 2^64-1, not exact");
  if (r->io.calls_held)
    r->process_problems.push_back(
        "the calls of the I/O records reach 2^64-1: the io section's counts of calls are held "
        "at 2^64-1, not exact");
  if (held(r->step_total))  // the bound_by totals are parts of it
    r->process_problems.push_back(
        "the durations of the steps reach 2^64-1 ns: steps.total_ns and bound_by are held at "
        "2^64-1, not exact");
  if (held(r->collectives.blocked_ns))  // every other figure of the section is part of it
    r->process_problems.push_back(
        "the durations of the collective calls reach 2^64-1 ns: the collectives section's time "
        "figures are held at 2^64-1, not exact");
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

// The outermost step (or `.iter`) events of a thread: one inside another of the thread (a
// step function that calls itself, a step event written twice) is no new step, so its time is
// counted once. Inside: starting within the other, or at its start, and ending by its end; a
// step that begins where the last one ended, even one of no length, is a new step.
void outermost(std::vector<step_event> &it, std::vector<step_event> *out) {
  std::sort(it.begin(), it.end(), [](const step_event &a, const step_event &b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  });
  uint64_t cur_start = 0, cur_end = 0;
  bool any = false;
  for (const step_event &s : it) {
    if (any && s.end <= cur_end && (s.start < cur_end || s.start == cur_start)) continue;
    out->push_back(s);
    cur_start = s.start;
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

void check_counts(const std::vector<proc> &ps, analysis_result *r) {
  for (const proc &p : ps) {
    const process_facts &f = *p.facts;
    if (p.parents_named > 1)
      r->process_problems.push_back(
          "process " + p.pid + (p.host.empty() ? "" : " on " + p.host) + ": its parent pid " +
          f.parent() + " is the pid of " + std::to_string(p.parents_named) +
          " processes there (ranks that share a pid): which started it is not written, so it "
          "is its own group");
    if (f.starts > 1) {  // two lifetimes under one key: no count of it can be checked
      std::string files;
      for (const std::string &n : f.start_files) files += (files.empty() ? "" : ", ") + n;
      r->process_problems.push_back(
          "process " + p.pid + (p.host.empty() ? "" : " on " + p.host) +
          (f.has_rank ? " (rank " + std::to_string(f.rank) + ")" : "") + ": " +
          std::to_string(f.starts) +
          " start events: processes that share this pid cannot be told apart, read as one (" +
          files + ")");
      continue;
    }
    if (!f.has_end) {
      ++r->processes_without_end;
      continue;
    }
    // dftrace counts events (aggregated records by dft_cnt); DFTracer every line with an id,
    // metadata included, which `dftrace merge` keeps once for all processes.
    if (held(f.event_records)) {  // aggregated records' dft_cnt: no count to check against
      r->process_problems.push_back("process " + p.pid + (p.host.empty() ? "" : " on " + p.host) +
                                    ": its events (aggregated records' dft_cnt) reach 2^64-1: "
                                    "their count is held at 2^64-1, not checked");
      continue;
    }
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
                 step_store *out) {
  // By start and end, then arguments: the order the candidates were read in (spilled or not,
  // one file or several) never decides.
  std::sort(st.begin(), st.end(), [](const step_event &a, const step_event &b) {
    return std::tie(a.start, a.end, a.has_step, a.step, a.has_epoch, a.epoch) <
           std::tie(b.start, b.end, b.has_step, b.step, b.has_epoch, b.epoch);
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
    out->append(&s, 1);
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

// The run's steps in group order. One partial whose groups are in the run's order (one
// machine) hands its store over: the steps are held (or written) once, never copied.
void take_steps(std::vector<analysis_partial> &parts,
                const std::vector<std::pair<size_t, size_t>> &src, bool any_step_event,
                const layer_table &table, analysis_result *r) {
  bool in_place = parts.size() == 1;
  for (size_t g = 0; g < src.size() && in_place; ++g) in_place = src[g].second == g;
  // Else each group's rows are read from its partial's store where they lie: not copied.
  std::vector<std::shared_ptr<const step_store>> from(parts.size());
  if (in_place) {
    r->steps = std::move(parts[0].steps);
  } else {
    r->steps = step_store(step_rows_budget());
    for (size_t i = 0; i < parts.size(); ++i)
      from[i] = std::make_shared<const step_store>(std::move(parts[i].steps));
  }
  for (size_t g = 0; g < src.size(); ++g) {
    const analysis_partial &part = parts[src[g].first];
    group_partial &gp = parts[src[g].first].groups[src[g].second];
    r->groups[g] = std::move(gp.fig);
    if (gp.readback_failed)
      r->process_problems.push_back("the analysis's temporary file could not be read back: " +
                                    group_label_of(r->groups[g]) + " is incomplete");
    // A part without step events took its `.iter` events; the run has step events, so this
    // group has no steps (its own would be step events). Never so with one partial.
    if (any_step_event && !part.any_step_event && !table.explicit_steps()) {
      r->groups[g].steps = 0;
      continue;
    }
    if (!in_place)
      r->steps.borrow(from[src[g].first], gp.first_step, gp.nsteps, static_cast<uint32_t>(g));
  }
  for (analysis_partial &p : parts) p.steps.clear();
}

// The group's collectives: each process's calls (read back when spilled) with its asynchronous
// calls tied to their waits (its comm_id numbers are its own), joined, put in canonical order,
// and spilled once the groups' calls held pass the budget (*held). False when spilled calls
// could not be read back.
bool group_collectives(collection &c, group_partial *gp, size_t *held) {
  bool ok = true;
  for (const std::string &key : gp->procs) {
    const auto it = c.colls.find(key);
    if (it == c.colls.end()) continue;
    ok = it->second.load() && ok;
    it->second.resolve_waits();
    gp->colls.append(it->second);
    c.colls.erase(it);
  }
  ok = !gp->colls.lost && ok;
  gp->colls.calls.shrink_to_fit();  // held until phase 2: no room left from doubling
  gp->colls.canonical();
  const size_t budget = coll_calls_budget(c.spill_after), n = gp->colls.calls.size();
  if (budget && *held + n > budget) {
    if (!c.coll_file) c.coll_file = std::make_shared<spill_store>();
    if (gp->colls.spill(c.coll_file)) return ok;
  }
  *held += n;
  return ok;
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
    out.any_step_event =
        out.any_step_event || !kv.second.steps.empty() || !kv.second.steps_spilled.empty();
  }
  const bool by_step_events = out.any_step_event || table.explicit_steps();
  out.steps = step_store(step_rows_budget());
  std::vector<layered_event> ev;
  size_t coll_held = 0;  // canonical collective calls kept in memory
  for (size_t g = 0; g < roots.size(); ++g) {
    group_work &w = work[g];
    group_partial &gp = out.groups[g];
    for (thread_events *te : threads_of[g]) {
      if (!te->take_layered(&c.spill, &ev) || !te->take_candidates(&c.spill))
        gp.readback_failed = true;
      sweep_thread(ev, w);
      outermost(te->steps, &w.steps);
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
    if (!group_collectives(c, &gp, &coll_held)) gp.readback_failed = true;
#if defined(__GLIBC__)
    // The group's step candidates and intervals were freed, but glibc keeps freed chunks inside
    // its heap resident (they lie below live ones): handed back to the system here.
    malloc_trim(0);
#endif
  }
  c.colls.clear();
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
        *why = "process " + pid_of_key(kv.first) +
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
  std::vector<uint8_t> increasing;
  bool by_args = true;
  step_totals(&r, &increasing, &by_args);
  if (r.steps.empty()) r.step_source = table.explicit_steps() ? r.step_source : "";
  std::vector<const coll_data *> colls(roots.size());
  for (size_t g = 0; g < roots.size(); ++g)
    colls[g] = &parts[src[g].first].groups[src[g].second].colls;
  bool colls_read = true;
  r.collectives = match_collectives(colls, coll_spreads_budget(spill_budget()), &colls_read);
  if (!colls_read)
    r.process_problems.push_back(
        "the analysis's temporary file of collective calls could not be read back: the "
        "collectives' figures are incomplete");
  compare_steps(&r, increasing, by_args);
  io_data io;
  for (analysis_partial &p : parts) io.merge(p.io);
  std::unordered_map<std::string, size_t> proc_index;
  for (size_t i = 0; i < ps.size(); ++i) proc_index[ps[i].key] = i;
  r.io = summarize_io(io, [&](const std::string &key) -> long {
    const auto pi = proc_index.find(key);
    return pi == proc_index.end() ? -1 : static_cast<long>(ps[pi->second].group);
  });
  if (r.io.bytes_overflow)
    r.process_problems.push_back(
        "the bytes of the I/O calls add up past 2^64-1: the io section's byte figures are held "
        "at 2^64-1, not exact");
  list_held_totals(&r);
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
