// collect.cpp: the per-block scan (worker threads) and the folding of blocks and files into
// processes and threads (the caller's thread, in file order).
#include "analysis/collect.hpp"

#include <algorithm>

#include "analysis/held_sum.hpp"
#include "analysis/name_stats.hpp"
#include "reader/line_parser.hpp"

namespace dftrace::analysis {

using detail::jtype;
using detail::jvalue;
using detail::parsed_line;

void thread_events::append(thread_events &o, bool keep_iters) {
  const uint32_t base = count;
  for (spilled_run r : o.spilled) {
    r.seq_add += base;
    spilled.push_back(r);
  }
  for (auto &v : o.layered) {
    if (base)
      for (layered_event &e : v) e.seq += base;
    layered.push_back(std::move(v));
  }
  count += o.count;
  steps_spilled.insert(steps_spilled.end(), o.steps_spilled.begin(), o.steps_spilled.end());
  steps.insert(steps.end(), o.steps.begin(), o.steps.end());
  if (!keep_iters) return;
  iters_spilled.insert(iters_spilled.end(), o.iters_spilled.begin(), o.iters_spilled.end());
  iters.insert(iters.end(), o.iters.begin(), o.iters.end());
}

void thread_events::drop_iters() {
  std::vector<step_event>().swap(iters);
  iters_spilled.clear();
}

namespace {

// Candidates in memory to the store as one run (kept in memory when it cannot); how many left.
size_t spill_candidates(spill_store &store, std::vector<step_event> *v,
                        std::vector<spilled_run> *runs) {
  spilled_run r;
  if (v->empty() || !store.write_bytes(v->data(), v->size() * sizeof(step_event), &r.offset))
    return 0;
  r.count = static_cast<uint32_t>(v->size());
  runs->push_back(r);
  std::vector<step_event>().swap(*v);
  return r.count;
}

bool take_runs(const spill_store *store, std::vector<spilled_run> *runs,
               std::vector<step_event> *v) {
  if (runs->empty()) return true;
  bool ok = true;
  size_t n = v->size();
  for (const spilled_run &r : *runs) n += r.count;
  std::vector<step_event> all;
  all.reserve(n);
  for (const spilled_run &r : *runs) {
    const size_t at = all.size();
    all.resize(at + r.count);
    if (!store || !store->read_bytes(r.offset, all.data() + at, r.count * sizeof(step_event))) {
      all.resize(at);
      ok = false;
    }
  }
  all.insert(all.end(), v->begin(), v->end());
  *v = std::move(all);
  runs->clear();
  return ok;
}

}  // namespace

bool thread_events::take_candidates(const spill_store *store) {
  const bool a = take_runs(store, &steps_spilled, &steps);
  return take_runs(store, &iters_spilled, &iters) && a;
}

size_t thread_events::spill(spill_store &store) {
  size_t n = 0;
  std::vector<std::vector<layered_event>> kept;
  for (auto &v : layered) {
    spilled_run r;
    if (v.empty()) continue;
    if (!store.write(v.data(), v.size(), &r.offset)) {
      kept.push_back(std::move(v));
      continue;
    }
    r.count = static_cast<uint32_t>(v.size());
    spilled.push_back(r);
    n += v.size();
    std::vector<layered_event>().swap(v);
  }
  layered = std::move(kept);
  return n + spill_candidates(store, &steps, &steps_spilled) +
         spill_candidates(store, &iters, &iters_spilled);
}

bool thread_events::take_layered(const spill_store *store, std::vector<layered_event> *out) {
  bool ok = true;
  out->clear();
  if (spilled.empty() && layered.size() == 1) {
    *out = std::move(layered[0]);
  } else {
    out->reserve(count);
    for (const spilled_run &r : spilled) {
      const size_t at = out->size();
      if (!store || !store->read(r.offset, r.count, out)) {
        ok = false;
        continue;
      }
      if (r.seq_add)
        for (size_t i = at; i < out->size(); ++i) (*out)[i].seq += r.seq_add;
    }
    for (auto &v : layered) {
      out->insert(out->end(), v.begin(), v.end());
      std::vector<layered_event>().swap(v);
    }
  }
  spilled.clear();
  layered.clear();
  return ok;
}

void process_facts::merge(const process_facts &o) {
  if (host.empty()) host = o.host;
  if (ppid.empty()) ppid = o.ppid;
  if (pr_ppid.empty()) pr_ppid = o.pr_ppid;
  if (hhash.empty()) hhash = o.hhash;
  if (!has_rank && o.has_rank) {
    has_rank = true;
    rank = o.rank;
  }
  if (!has_end && o.has_end) {
    has_end = true;
    end_num_events = o.end_num_events;
  }
  dftrace_writer = dftrace_writer || o.dftrace_writer;
  shared_file = shared_file || o.shared_file;
  add_count(&event_records, o.event_records);
  id_lines += o.id_lines;
  ts_min = std::min(ts_min, o.ts_min);
  end_max = std::max(end_max, o.end_max);
  checkpoint_events += o.checkpoint_events;
  checkpoint_max_ns = std::max(checkpoint_max_ns, o.checkpoint_max_ns);
  starts += o.starts;
  for (const std::string &f : o.start_files)
    if (!std::binary_search(start_files.begin(), start_files.end(), f))
      start_files.insert(std::upper_bound(start_files.begin(), start_files.end(), f), f);
}

std::string process_key(const std::string &host, const std::string &pid, const process_facts &f) {
  std::string k = host + '\x1f' + pid;
  if (f.has_rank) k += '\x1e' + std::to_string(f.rank);
  return k;
}

std::string pid_of_key(const std::string &key) {
  const size_t a = key.find('\x1f') + 1;
  const size_t b = key.find('\x1e', a);
  return key.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

void name_durations::merge(name_durations &o) {
  add_count(&calls, o.calls);
  add_ns(&total, o.total);
  if (durs.empty())
    durs = std::move(o.durs);
  else
    durs.insert(durs.end(), o.durs.begin(), o.durs.end());
  runs.insert(runs.end(), o.runs.begin(), o.runs.end());
  lo = std::min(lo, o.lo);
  hi = std::max(hi, o.hi);
}

size_t name_durations::spill(spill_store &store) {
  run r;
  if (durs.empty() || !store.write_bytes(durs.data(), durs.size() * sizeof(uint64_t), &r.offset))
    return 0;
  const auto mm = std::minmax_element(durs.begin(), durs.end());
  lo = std::min(lo, *mm.first);
  hi = std::max(hi, *mm.second);
  r.count = durs.size();
  runs.push_back(r);
  std::vector<uint64_t>().swap(durs);
  return r.count;
}

uint64_t name_durations::count() const {
  uint64_t n = durs.size();
  for (const run &r : runs) n += r.count;
  return n;
}

void line_counts::merge(const line_counts &o) {
  lines += o.lines;
  objects += o.objects;
  invalid += o.invalid;
  complete += o.complete;
  metadata += o.metadata;
  counters += o.counters;
  instants += o.instants;
  aggregated += o.aggregated;
  unknown_phase += o.unknown_phase;
  bad_times += o.bad_times;
  bad_bytes += o.bad_bytes;
}

namespace {

bool blank_or_bracket(std::string_view line) {
  size_t i = 0, j = line.size();
  while (i < j && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
  while (j > i && (line[j - 1] == ' ' || line[j - 1] == '\t' || line[j - 1] == '\r')) --j;
  return i == j || (j - i == 1 && (line[i] == '[' || line[i] == ']'));
}

// What a metadata line says of its process: the host (HH, PR hostname) and the rank.
void metadata_fact(const parsed_line &pl, process_facts &pf) {
  const jvalue *n = pl.arg_value("name");
  const jvalue *v = pl.arg_value("value");
  if (!n || !v) return;
  if (pl.name.text == "HH" && pf.host.empty()) {
    pf.host.assign(n->text);
  } else if (pl.name.text == "PR" && n->text == "hostname" && pf.host.empty()) {
    pf.host.assign(v->text);
  } else if (pl.name.text == "PR" && n->text == "ppid") {
    pf.pr_ppid.assign(v->text);
  } else if (pl.name.text == "PR" && n->text == "rank") {
    int64_t r = 0;
    if (detail::value_i64(*v, &r)) {
      pf.has_rank = true;
      pf.rank = r;
    }
  }
}

step_event step_of(const parsed_line &pl, uint64_t ts, uint64_t end) {
  step_event s;
  s.start = ts;
  s.end = end;
  if (const jvalue *v = pl.arg_value("step")) s.has_step = detail::value_i64(*v, &s.step);
  if (const jvalue *v = pl.arg_value("epoch")) s.has_epoch = detail::value_i64(*v, &s.epoch);
  return s;
}

// A few (cat, name) pairs make most of a trace: a direct-mapped cache in front of classify().
struct class_cache {
  struct entry {
    std::string cat, name;
    event_class c;
    io_kind io;
    name_durations *names = nullptr;  // its figures in the block, once it is counted
    bool used = false;
  } e[32];
  entry &get(const layer_table &t, std::string_view cat, std::string_view name) {
    const size_t slot = (name.size() * 31 + (name.empty() ? 0 : name[0]) * 7 +
                         (name.empty() ? 0 : name.back()) + (cat.empty() ? 0 : cat[0]) * 13) &
                        31;
    entry &x = e[slot];
    if (!x.used || x.name != name || x.cat != cat) {
      x.cat.assign(cat);
      x.name.assign(name);
      x.c = t.classify(cat, name);
      x.io = io_classify(cat, name);
      x.names = nullptr;
      x.used = true;
    }
    return x;
  }
};

// A metadata line: the process's host and rank, the hosts' and files' names.
void metadata_line(const parsed_line &pl, process_facts *pf, block_part *r) {
  metadata_fact(pl, *pf);
  if (pl.name.text == "HH") {
    const jvalue *hn = pl.arg_value("name"), *hv = pl.arg_value("value");
    if (hn && hv) r->hosts.emplace(std::string(hv->text), std::string(hn->text));
  } else if (pl.name.text == "FH") {
    const jvalue *fn = pl.arg_value("name"), *fv = pl.arg_value("value");
    if (fn && fv) {  // of two paths for one hash the smaller (io_data::name_file)
      auto it = r->io.fh_paths.emplace(std::string(fv->text), std::string(fn->text)).first;
      if (fn->text < it->second) it->second = std::string(fn->text);
    }
  }
}

// The `start` event's parent, writer and host; the `end` event's count.
void start_or_end(const parsed_line &pl, bool is_end, process_facts *pf) {
  const jvalue *v = pl.arg_value(is_end ? "num_events" : "ppid");
  if (is_end && v && detail::value_u64(*v, &pf->end_num_events)) pf->has_end = true;
  if (!is_end && v && (v->type == jtype::number || v->type == jtype::string))
    pf->ppid.assign(v->text);
  if (!is_end) ++pf->starts;
  if (!is_end && pl.arg_value("timer_source")) pf->dftrace_writer = true;
  if (const jvalue *h = is_end ? nullptr : pl.arg_value("hhash"))
    if (pf->hhash.empty()) pf->hhash.assign(h->text);
}

// A complete event's duration, or an aggregated record's count and total (as `dftrace stat`).
name_durations &name_entry(const parsed_line &pl, std::string *key,
                           std::unordered_map<std::string, name_durations> *names) {
  key->assign(pl.cat.text);
  key->push_back('\x1f');
  key->append(pl.name.text);
  return (*names)[*key];
}

void name_call(const parsed_line &pl, char ph, uint64_t dur, detail::time_unit unit,
               name_durations &n) {
  if (ph == 'X') {
    count_one(&n.calls);
    add_ns(&n.total, dur);
    n.durs.push_back(dur);
    return;
  }
  uint64_t cnt = 0, sum = 0;
  const jvalue *c = pl.arg_value("dft_cnt");
  const jvalue *d = pl.arg_value("dur_sum");
  if (!d) d = pl.arg_value("dur");
  if (!c || !detail::value_u64(*c, &cnt)) return;
  if (d && detail::value_ns(*d, unit, &sum) && !pl.arg_value("dur_sum") &&
      __builtin_mul_overflow(sum, cnt, &sum))
    sum = UINT64_MAX;  // held, as the sum it stands for
  add_count(&n.calls, cnt);
  add_ns(&n.total, sum);
}

// Counts a line by its phase; false for a phase the analysis does not know.
bool count_phase(line_counts &n, char ph) {
  switch (ph) {
    case 'M': ++n.metadata; return true;
    case 'X': ++n.complete; return true;
    case 'C': ++n.counters; return true;
    case 'i':
    case 'I': ++n.instants; return true;
    case 'A': ++n.aggregated; return true;
    default: ++n.unknown_phase; return false;
  }
}

// The thread's events of a layer, steps and iterations (consecutive lines mostly share the
// thread: the map is looked up only when it changes).
struct thread_cursor {
  thread_events *te = nullptr;
  std::string_view last_tid;
  std::string key;
  void place(block_part *r, const parsed_line &pl, const event_class &c, uint64_t ts,
             uint64_t end) {
    if (!te || pl.tid.text != last_tid) {
      key.assign(pl.pid.text);
      key.push_back('\x1f');
      key.append(pl.tid.text);
      te = &r->threads[key];
      last_tid = pl.tid.text;
    }
    if (c.layer != event_class::k_no_layer) {
      if (te->layered.empty()) te->layered.emplace_back();
      auto &v = te->layered.back();
      v.push_back({ts, end, te->count++, c.layer});
    }
    if (c.step) te->steps.push_back(step_of(pl, ts, end));
    if (c.iter) te->iters.push_back(step_of(pl, ts, end));
  }
};

// A line with no time in nanoseconds: left out, counted; the process's own count still holds
// it (no second report).
void left_out_for_its_time(const parsed_line &pl, char ph, bool is_end, process_facts *pf,
                           line_counts *n) {
  ++n->bad_times;
  uint64_t cnt = 1;
  const jvalue *c = ph == 'A' ? pl.arg_value("dft_cnt") : nullptr;
  if (c && !detail::value_u64(*c, &cnt)) cnt = 0;
  if (!(pl.cat.text == "dftracer" && (is_end || pl.name.text == "start")))
    add_count(&pf->event_records, cnt);
}

void checkpoint_event(uint64_t dur, process_facts *pf) {
  ++pf->checkpoint_events;
  pf->checkpoint_max_ns = std::max(pf->checkpoint_max_ns, dur);
}

}  // namespace

void scan_block(detail::text_block &b, detail::time_unit unit, const layer_table &table) {
  auto r = std::make_unique<block_part>();
  parsed_line pl;
  class_cache cache;
  std::string key, names_key;
  io_scan_state io_state;
  process_facts *pf = nullptr;
  coll_data *colls = nullptr;
  thread_cursor threads;
  std::string_view last_pid;
  line_counts &n = r->counts;
  detail::for_each_line(b.whole_lines(), [&](std::string_view line) {
    ++n.lines;
    if ((line.empty() || line[0] != '{') && blank_or_bracket(line)) return true;
    if (!detail::parse_line(line, pl)) {
      ++n.invalid;
      return true;
    }
    ++n.objects;
    const char ph = detail::phase(pl);
    if (!pf || pl.pid.text != last_pid) {
      key.assign(pl.pid.text);
      pf = &r->procs[key];
      last_pid = pl.pid.text;
      threads.te = nullptr;
      colls = nullptr;
    }
    const bool is_end = pl.name.text == "end" && pl.cat.text == "dftracer";
    if (pl.id.present() && !is_end) ++pf->id_lines;
    if (!count_phase(n, ph)) return true;
    if (ph == 'M') {
      metadata_line(pl, pf, r.get());
      return true;
    }
    uint64_t ts = 0, dur = 0;
    if (!pl.ts.present()) return true;
    if (!detail::value_ns(pl.ts, unit, &ts) ||
        (pl.dur.present() && !detail::value_ns(pl.dur, unit, &dur)) || ts + dur < ts) {
      left_out_for_its_time(pl, ph, is_end, pf, &n);
      return true;
    }
    const uint64_t end = ts + dur;
    pf->ts_min = std::min(pf->ts_min, ts);
    pf->end_max = std::max(pf->end_max, end);
    // the line's class, I/O kind and name figures, looked up once
    auto &ce = cache.get(table, pl.cat.text, pl.name.text);
    if ((ph == 'X' || ph == 'A') && !scan_io(pl, ph, ts, dur, unit, ce.io, &r->io, &io_state))
      ++n.bad_bytes;
    if (table.name_stats() && ph == 'A' && pl.cat.text != "dftracer")
      name_call(pl, ph, dur, unit, name_entry(pl, &names_key, &r->names));
    if (ph == 'A') {
      uint64_t cnt = 0;
      const jvalue *c = pl.arg_value("dft_cnt");
      if (c && detail::value_u64(*c, &cnt)) add_count(&pf->event_records, cnt);
      return true;
    }
    if (pl.cat.text == "dftracer" && (is_end || pl.name.text == "start")) {
      start_or_end(pl, is_end, pf);
      return true;
    }
    count_one(&pf->event_records);
    if (ph != 'X') return true;
    if (pl.cat.text == "checkpoint") checkpoint_event(dur, pf);
    if (table.name_stats() && pl.cat.text != "dftracer") {
      if (!ce.names) ce.names = &name_entry(pl, &names_key, &r->names);
      name_call(pl, ph, dur, unit, *ce.names);
    }
    if (pl.cat.text == "comm" || pl.cat.text == "MPI") {
      if (!colls) colls = &r->colls[key];
      scan_collective(pl, ts, end, colls);
    }
    const event_class c = ce.c;
    if (c.layer != event_class::k_no_layer || c.step || c.iter)
      threads.place(r.get(), pl, c, ts, end);
    return true;
  });
  b.result = std::move(r);
}

void file_folder::add(block_part &p, collection *c) {
  counts_.merge(p.counts);
  for (auto &kv : p.procs) procs_[kv.first].merge(kv.second);
  bool first_step = false;
  for (auto &kv : p.threads) {
    first_step = first_step || (!c->any_step_event && !kv.second.steps.empty());
    c->any_step_event = c->any_step_event || !kv.second.steps.empty();
    c->buffered += kv.second.count + kv.second.steps.size() + kv.second.iters.size();
    threads_[kv.first].append(kv.second, !c->any_step_event);
  }
  if (first_step) {  // the `.iter` events held so far will not be steps
    for (auto &kv : threads_) kv.second.drop_iters();
    for (auto &kv : c->threads) kv.second.drop_iters();
  }
  for (auto &kv : p.hosts) hosts_.emplace(kv.first, std::move(kv.second));
  io_.add(p.io, &c->io);
  for (auto &kv : p.names) {
    c->durations_buffered += kv.second.durs.size();
    c->names[kv.first].merge(kv.second);
  }
  if (c->spill_after && c->durations_buffered >= durations_budget(c->spill_after)) {
    for (auto &kv : c->names) kv.second.spill(c->spill);
    c->durations_buffered = 0;  // what the store refused stays in memory, counted no more
  }
  for (auto &kv : p.colls) {
    c->coll_buffered += kv.second.calls.size() + kv.second.waits.size();
    colls_[kv.first].append(kv.second);
  }
  const size_t coll_budget = coll_calls_budget(c->spill_after);
  if (coll_budget && c->coll_buffered > coll_budget) {
    if (!c->coll_file) c->coll_file = std::make_shared<spill_store>();
    for (auto &kv : colls_) kv.second.spill(c->coll_file);  // what it refuses stays
    for (auto &kv : c->colls) kv.second.spill(c->coll_file);
    c->coll_buffered = 0;
  }
  if (!c->spill_after || c->buffered < c->spill_after) return;
  size_t out = 0;
  for (auto &kv : threads_) out += kv.second.spill(c->spill);
  for (auto &kv : c->threads) out += kv.second.spill(c->spill);
  c->buffered -= out < c->buffered ? out : c->buffered;
}

void file_folder::finish(collection *c, const std::string &path) {
  c->counts.merge(counts_);
  std::unordered_map<std::string, std::string> keys;  // pid as written -> process key
  for (auto &kv : procs_) {
    kv.second.shared_file = procs_.size() > 1;
    // The host its start event names (a merged trace holds each HH line once, for one pid).
    const auto h = hosts_.find(kv.second.hhash);
    if (!kv.second.hhash.empty() && h != hosts_.end()) kv.second.host = h->second;
    if (kv.second.starts) kv.second.start_files.assign(1, path);
    keys[kv.first] = process_key(kv.second.host, kv.first, kv.second);
  }
  auto key_of = [&](const std::string &pid) {
    const auto k = keys.find(pid);
    return k == keys.end() ? '\x1f' + pid : k->second;
  };
  for (auto &kv : procs_) c->procs[keys[kv.first]].merge(kv.second);
  io_.finish(key_of, &c->io);
  for (auto &kv : threads_) {
    const size_t sep = kv.first.find('\x1f');
    thread_events &te = c->threads[key_of(kv.first.substr(0, sep)) + kv.first.substr(sep)];
    te.append(kv.second, !c->any_step_event);
    te.steps.shrink_to_fit();  // held until the analysis: no room left from doubling
    te.iters.shrink_to_fit();
  }
  for (auto &kv : colls_) {
    coll_data &d = c->colls[key_of(kv.first)];
    d.append(kv.second);
    d.calls.shrink_to_fit();  // held until the analysis: no room left from doubling
  }
  *this = file_folder();
}

}  // namespace dftrace::analysis
