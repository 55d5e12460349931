// partial_codec.cpp: the partial's bytes: a tag and version, then each field in a fixed order,
// integers as 8 little-endian bytes, strings and vectors with their length first.
#include "analysis/partial_codec.hpp"

#include <algorithm>
#include <cstring>
#include <set>

namespace dftrace::analysis {

namespace {

constexpr char k_tag[8] = {'d', 'f', 't', 'p', 'a', 'r', 't', '3'};
constexpr char k_names_tag[8] = {'d', 'f', 't', 'n', 'a', 'm', 'e', '1'};

struct writer {
  std::string o;
  void u(uint64_t v) {
    char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    o.append(b, 8);
  }
  void i(int64_t v) { u(static_cast<uint64_t>(v)); }
  void s(const std::string &v) {
    u(v.size());
    o += v;
  }
};

struct reader {
  std::string_view in;
  size_t at = 0;
  bool ok = true;
  uint64_t u() {
    if (in.size() - at < 8) {
      ok = false;
      at = in.size();
      return 0;
    }
    uint64_t v = 0;
    for (int k = 0; k < 8; ++k)
      v |= static_cast<uint64_t>(static_cast<unsigned char>(in[at + k])) << (8 * k);
    at += 8;
    return v;
  }
  int64_t i() { return static_cast<int64_t>(u()); }
  bool b() { return u() != 0; }
  // A count of items of at least `least` bytes each: never more than the bytes left allow.
  size_t n(size_t least = 8) {
    const uint64_t v = u();
    if (v > (in.size() - at) / least) {
      ok = false;
      return 0;
    }
    return static_cast<size_t>(v);
  }
  std::string s() {
    const size_t len = n(1);
    std::string v(in.substr(at, len));
    at += len;
    return v;
  }
};

void put_counts(writer &w, const line_counts &c) {
  for (uint64_t v : {c.lines, c.objects, c.invalid, c.complete, c.metadata, c.counters, c.instants,
                     c.aggregated, c.unknown_phase})
    w.u(v);
}
void get_counts(reader &r, line_counts *c) {
  for (uint64_t *v : {&c->lines, &c->objects, &c->invalid, &c->complete, &c->metadata, &c->counters,
                      &c->instants, &c->aggregated, &c->unknown_phase})
    *v = r.u();
}

void put_problems(writer &w, const std::vector<input_problem> &v) {
  w.u(v.size());
  for (const auto &p : v) {
    w.s(p.path);
    w.s(p.what);
  }
}
void get_problems(reader &r, std::vector<input_problem> *v) {
  v->resize(r.n(16));
  for (auto &p : *v) {
    p.path = r.s();
    p.what = r.s();
  }
}

void put_inputs(writer &w, const input_report &in) {
  w.u(in.files.size());
  for (const file_report &f : in.files) {
    w.s(f.path);
    for (uint64_t v : {f.lines, f.text_bytes, f.compressed_bytes, uint64_t(f.members),
                       uint64_t(f.dt_members), uint64_t(f.damaged)})
      w.u(v);
  }
  put_problems(w, in.damaged);
  put_problems(w, in.warnings);
  put_counts(w, in.counts);
}
void get_inputs(reader &r, input_report *in) {
  in->files.resize(r.n(56));
  for (file_report &f : in->files) {
    f.path = r.s();
    f.lines = r.u();
    f.text_bytes = r.u();
    f.compressed_bytes = r.u();
    f.members = r.u();
    f.dt_members = r.u();
    f.damaged = r.b();
  }
  get_problems(r, &in->damaged);
  get_problems(r, &in->warnings);
  get_counts(r, &in->counts);
}

void put_facts(writer &w, const process_facts &f) {
  w.s(f.host);
  w.s(f.ppid);
  w.s(f.pr_ppid);
  w.s(f.hhash);
  w.u(f.has_rank);
  w.i(f.rank);
  for (uint64_t v : {uint64_t(f.has_end), f.end_num_events, f.event_records, f.id_lines, f.ts_min,
                     f.end_max, f.checkpoint_events, f.checkpoint_max_ns,
                     uint64_t(f.dftrace_writer), uint64_t(f.shared_file)})
    w.u(v);
}
void get_facts(reader &r, process_facts *f) {
  f->host = r.s();
  f->ppid = r.s();
  f->pr_ppid = r.s();
  f->hhash = r.s();
  f->has_rank = r.b();
  f->rank = r.i();
  f->has_end = r.b();
  for (uint64_t *v : {&f->end_num_events, &f->event_records, &f->id_lines, &f->ts_min, &f->end_max,
                      &f->checkpoint_events, &f->checkpoint_max_ns})
    *v = r.u();
  f->dftrace_writer = r.b();
  f->shared_file = r.b();
}

void put_pairs(writer &w, const std::vector<std::pair<std::string, uint64_t>> &v) {
  w.u(v.size());
  for (const auto &p : v) {
    w.s(p.first);
    w.u(p.second);
  }
}
void get_pairs(reader &r, std::vector<std::pair<std::string, uint64_t>> *v) {
  v->resize(r.n(16));
  for (auto &p : *v) {
    p.first = r.s();
    p.second = r.u();
  }
}
void put_u64s(writer &w, const std::vector<uint64_t> &v) {
  w.u(v.size());
  for (uint64_t x : v) w.u(x);
}
void get_u64s(reader &r, std::vector<uint64_t> *v) {
  v->resize(r.n());
  for (uint64_t &x : *v) x = r.u();
}
void put_strings(writer &w, const std::vector<std::string> &v) {
  w.u(v.size());
  for (const auto &x : v) w.s(x);
}
void get_strings(reader &r, std::vector<std::string> *v) {
  v->resize(r.n());
  for (auto &x : *v) x = r.s();
}

void put_colls(writer &w, const coll_data &d) {
  put_strings(w, d.keys);
  w.u(d.size());
  std::vector<coll_call> piece;  // the calls, read back a piece at a time when spilled
  for (size_t i = 0; i < d.size(); i += piece.size()) {
    if (!d.read(i, 4096, &piece)) piece.assign(std::min<size_t>(4096, d.size() - i), {});
    for (const coll_call &c : piece) {
      for (uint64_t v : {c.start, c.end, c.wait_start, c.wait_end}) w.u(v);
      w.i(c.comm_id);
      w.u(c.key);
      w.u(c.has_id);
    }
  }
}
void get_colls(reader &r, coll_data *d) {
  get_strings(r, &d->keys);
  d->calls.resize(r.n(8 * 7));
  for (coll_call &c : d->calls) {
    for (uint64_t *v : {&c.start, &c.end, &c.wait_start, &c.wait_end}) *v = r.u();
    c.comm_id = r.i();
    c.key = static_cast<uint32_t>(r.u());
    c.has_id = r.b();
    r.ok = r.ok && c.key < d->keys.size();
  }
}

void put_group(writer &w, const group_partial &g, const step_store &steps) {
  put_strings(w, g.procs);
  const group_result &f = g.fig;
  w.u(f.has_rank);
  w.i(f.rank);
  w.s(f.host);
  put_strings(w, f.pids);
  for (uint64_t v : {f.start, f.span, uint64_t(f.steps), f.checkpoint_events, f.checkpoint_max_ns})
    w.u(v);
  put_u64s(w, f.union_ns);
  put_u64s(w, f.self_ns);
  put_pairs(w, f.overlap_ns);
  put_pairs(w, f.unoverlapped_ns);
  w.u(g.readback_failed);
  w.u(g.nsteps);
  steps.for_each(g.first_step, g.nsteps, [&](const step_result &s, size_t) {
    w.u(s.start);
    w.u(s.dur);
    w.i(s.step);
    w.i(s.epoch);
    for (uint64_t p : s.parts) w.u(p);
    w.u(s.group);
    w.u(s.index);
    w.u(s.has_step);
    w.u(s.has_epoch);
  });
  put_colls(w, g.colls);
}
void get_group(reader &r, group_partial *g, step_store *steps) {
  get_strings(r, &g->procs);
  group_result &f = g->fig;
  f.has_rank = r.b();
  f.rank = r.i();
  f.host = r.s();
  get_strings(r, &f.pids);
  f.start = r.u();
  f.span = r.u();
  f.steps = r.u();
  f.checkpoint_events = r.u();
  f.checkpoint_max_ns = r.u();
  get_u64s(r, &f.union_ns);
  get_u64s(r, &f.self_ns);
  get_pairs(r, &f.overlap_ns);
  get_pairs(r, &f.unoverlapped_ns);
  g->readback_failed = r.b();
  g->nsteps = r.n(8 * (k_nbound + 9));
  g->first_step = steps->size();
  for (size_t i = 0; i < g->nsteps && r.ok; ++i) {
    step_result s;
    s.start = r.u();
    s.dur = r.u();
    s.step = r.i();
    s.epoch = r.i();
    for (uint64_t &p : s.parts) p = r.u();
    s.group = static_cast<uint32_t>(r.u());
    s.index = static_cast<uint32_t>(r.u());
    s.has_step = r.b();
    s.has_epoch = r.b();
    steps->append(&s, 1);
  }
  get_colls(r, &g->colls);
}

void put_file_io(writer &w, const file_io &f) {
  for (int d = 0; d < 2; ++d)
    for (uint64_t v : {f.bytes[d], f.ops[d], f.ns[d], f.seq[d], f.consec[d], f.ordered[d]}) w.u(v);
  w.u(f.meta_ops);
  w.u(f.meta_ns);
  w.u(f.procs.size());
  for (const auto &p : f.procs) w.s(p);
}
void get_file_io(reader &r, file_io *f) {
  for (int d = 0; d < 2; ++d)
    for (uint64_t *v :
         {&f->bytes[d], &f->ops[d], &f->ns[d], &f->seq[d], &f->consec[d], &f->ordered[d]})
      *v = r.u();
  f->meta_ops = r.u();
  f->meta_ns = r.u();
  for (size_t k = r.n(); k > 0 && r.ok; --k) f->procs.insert(r.s());
}

void put_io(writer &w, const io_data &d) {
  for (int k = 0; k < 2; ++k) {
    for (uint64_t v : {d.bytes[k], d.ops[k], d.ns[k], d.unbinned[k], d.offset_unknown[k]}) w.u(v);
    for (uint64_t v : d.hist[k]) w.u(v);
  }
  w.u(d.meta_ops);
  w.u(d.meta_ns);
  for (uint64_t v : {d.copies.no_file[0], d.copies.no_file[1], d.copies.unattributed_calls,
                     d.copies.unattributed_bytes})
    w.u(v);
  w.u(d.sizes.size());
  for (const auto &kv : d.sizes) {
    w.u(kv.first);
    w.u(kv.second);
  }
  w.u(d.files.size());
  for (const auto &kv : d.files) {
    w.s(kv.first);
    put_file_io(w, kv.second);
  }
  // By hash, so that the bytes do not depend on the hash table's order.
  std::map<std::string, std::string> paths(d.fh_paths.begin(), d.fh_paths.end());
  w.u(paths.size());
  for (const auto &kv : paths) {
    w.s(kv.first);
    w.s(kv.second);
  }
  w.u(d.proc_bins.size());
  for (const auto &kv : d.proc_bins) {
    w.s(kv.first);
    w.u(kv.second.width_ns);
    w.u(kv.second.bins.size());
    for (const auto &b : kv.second.bins) {
      w.u(b.first);
      w.u(b.second[0]);
      w.u(b.second[1]);
    }
  }
}
void get_io(reader &r, io_data *d) {
  for (int k = 0; k < 2; ++k) {
    for (uint64_t *v :
         {&d->bytes[k], &d->ops[k], &d->ns[k], &d->unbinned[k], &d->offset_unknown[k]})
      *v = r.u();
    for (uint64_t &v : d->hist[k]) v = r.u();
  }
  d->meta_ops = r.u();
  d->meta_ns = r.u();
  for (uint64_t *v : {&d->copies.no_file[0], &d->copies.no_file[1], &d->copies.unattributed_calls,
                      &d->copies.unattributed_bytes})
    *v = r.u();
  for (size_t k = r.n(16); k > 0 && r.ok; --k) {
    const uint64_t size = r.u();
    d->sizes[size] = r.u();
  }
  for (size_t k = r.n(); k > 0 && r.ok; --k) {
    std::string name = r.s();
    get_file_io(r, &d->files[name]);
  }
  for (size_t k = r.n(16); k > 0 && r.ok; --k) {
    std::string h = r.s();
    d->fh_paths[h] = r.s();
  }
  for (size_t k = r.n(); k > 0 && r.ok; --k) {
    time_bins &t = d->proc_bins[r.s()];
    t.width_ns = r.u();
    for (size_t b = r.n(24); b > 0 && r.ok; --b) {
      const uint64_t at = r.u();
      auto &x = t.bins[at];
      x[0] = r.u();
      x[1] = r.u();
    }
  }
}

}  // namespace

std::string encode_partial(const input_report &in, const analysis_partial &p) {
  writer w;
  w.o.append(k_tag, sizeof k_tag);
  put_inputs(w, in);
  w.u(p.procs.size());
  for (const auto &kv : p.procs) {
    w.s(kv.first);
    put_facts(w, kv.second);
  }
  w.u(p.groups.size());
  for (const group_partial &g : p.groups) put_group(w, g, p.steps);
  w.u(p.any_step_event);
  put_io(w, p.io);
  return std::move(w.o);
}

bool decode_partial(std::string_view bytes, input_report *in, analysis_partial *p,
                    std::string *why) {
  if (bytes.size() < sizeof k_tag || std::memcmp(bytes.data(), k_tag, sizeof k_tag) != 0) {
    *why = "not a partial analysis of this version";
    return false;
  }
  reader r{bytes, sizeof k_tag};
  get_inputs(r, in);
  for (size_t k = r.n(); k > 0 && r.ok; --k) {
    std::string key = r.s();
    get_facts(r, &p->procs[key]);
  }
  p->groups.resize(r.n());
  p->steps = step_store(step_rows_budget());  // a worker's steps: in the file past the budget
  for (group_partial &g : p->groups)
    if (r.ok) get_group(r, &g, &p->steps);
  p->any_step_event = r.b();
  get_io(r, &p->io);
  for (const group_partial &g : p->groups) {
    r.ok = r.ok && !g.procs.empty();
    for (const std::string &k : g.procs) r.ok = r.ok && p->procs.count(k) != 0;
  }
  if (!r.ok || r.at != bytes.size()) {
    *why = "a partial analysis is cut short or malformed";
    return false;
  }
  return true;
}

std::string encode_names(const std::map<std::string, name_summary> &names,
                         const std::vector<std::string> &unread) {
  writer w;
  w.o.append(k_names_tag, sizeof k_names_tag);
  w.u(names.size());
  for (const auto &kv : names) {
    w.s(kv.first);
    w.u(kv.second.calls);
    w.u(kv.second.total);
    w.u(kv.second.p50);
    w.u(kv.second.p99);
  }
  put_strings(w, unread);
  return std::move(w.o);
}

std::string encode_collected_names(collection &c) {
  std::vector<std::string> unread;
  std::string out = encode_names(
      summarize_names(c.names, &c.spill, &unread, durations_budget(c.spill_after)), unread);
  decltype(c.names)().swap(c.names);
  return out;
}

bool decode_names(std::string_view bytes, std::map<std::string, name_summary> *names,
                  std::vector<std::string> *unread, std::string *why) {
  if (bytes.size() < sizeof k_names_tag ||
      std::memcmp(bytes.data(), k_names_tag, sizeof k_names_tag) != 0) {
    *why = "not a run's name figures of this version";
    return false;
  }
  reader r{bytes, sizeof k_names_tag};
  for (size_t k = r.n(40); k > 0 && r.ok; --k) {
    std::string key = r.s();
    name_summary &n = (*names)[key];
    n.calls = r.u();
    n.total = r.u();
    n.p50 = r.u();
    n.p99 = r.u();
  }
  get_strings(r, unread);
  if (!r.ok || r.at != bytes.size()) {
    *why = "a run's name figures are cut short or malformed";
    return false;
  }
  return true;
}

input_report merge_inputs(std::vector<input_report> &ins) {
  input_report out;
  std::set<std::string> said;  // problems of no file (the spill file's): once
  for (input_report &in : ins) {
    out.files.insert(out.files.end(), in.files.begin(), in.files.end());
    out.damaged.insert(out.damaged.end(), in.damaged.begin(), in.damaged.end());
    for (const input_problem &w : in.warnings)
      if (!w.path.empty() || said.insert(w.what).second) out.warnings.push_back(w);
    out.counts.merge(in.counts);
  }
  std::stable_sort(out.files.begin(), out.files.end(),
                   [](const file_report &a, const file_report &b) { return a.path < b.path; });
  for (auto *v : {&out.damaged, &out.warnings})
    std::stable_sort(v->begin(), v->end(), [](const input_problem &a, const input_problem &b) {
      return a.path < b.path;
    });
  return out;
}

}  // namespace dftrace::analysis
