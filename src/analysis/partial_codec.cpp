// partial_codec.cpp: the partial's bytes: a tag and version, then each field in a fixed order,
// integers as LEB128 varints (signed ones zigzagged), strings and vectors with their length
// first. The steps' and collective calls' times are written as differences from the previous
// one (or from their own start), so that most take 1 to 3 bytes rather than 8: the partials are
// what a distributed run ships to its client, and what the client decodes.
#include "analysis/partial_codec.hpp"

#include <algorithm>
#include <cstring>
#include <set>

namespace dftrace::analysis {

namespace {

constexpr char k_tag[8] = {'d', 'f', 't', 'p', 'a', 'r', 't', '6'};
constexpr char k_names_tag[8] = {'d', 'f', 't', 'n', 'a', 'm', 'e', '1'};

uint64_t zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
int64_t unzigzag(uint64_t v) { return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1)); }
// The difference a - b, wrapping: b + delta(a, b) == a for every pair, so nothing is lost.
int64_t delta(uint64_t a, uint64_t b) { return static_cast<int64_t>(a - b); }

struct writer {
  std::string o;
  void u(uint64_t v) {
    char b[10];
    int n = 0;
    while (v >= 0x80) {
      b[n++] = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    b[n++] = static_cast<char>(v);
    o.append(b, static_cast<size_t>(n));
  }
  void i(int64_t v) { u(zigzag(v)); }
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
    const auto *p = reinterpret_cast<const unsigned char *>(in.data());
    uint64_t v = 0;
    for (int shift = 0; at < in.size() && shift < 64; shift += 7) {
      const unsigned char c = p[at++];
      v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80)) return v;
    }
    ok = false;  // cut short, or more than 10 bytes
    at = in.size();
    return 0;
  }
  int64_t i() { return unzigzag(u()); }
  bool b() { return u() != 0; }
  // A count of items of at least `least` bytes each: never more than the bytes left allow.
  size_t n(size_t least = 1) {
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
  v->resize(r.n(2));
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
  in->files.resize(r.n(7));
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

void put_strings(writer &w, const std::vector<std::string> &v) {
  w.u(v.size());
  for (const auto &x : v) w.s(x);
}
void get_strings(reader &r, std::vector<std::string> *v) {
  v->resize(r.n());
  for (auto &x : *v) x = r.s();
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
                     uint64_t(f.dftrace_writer), uint64_t(f.shared_file), f.starts})
    w.u(v);
  put_strings(w, f.start_files);
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
  f->starts = r.u();
  get_strings(r, &f->start_files);
}

void put_pairs(writer &w, const std::vector<std::pair<std::string, uint64_t>> &v) {
  w.u(v.size());
  for (const auto &p : v) {
    w.s(p.first);
    w.u(p.second);
  }
}
void get_pairs(reader &r, std::vector<std::pair<std::string, uint64_t>> *v) {
  v->resize(r.n(2));
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

// Each call's start from the previous call's, its other times from its own start. False when
// spilled calls could not be read back: they are written as zeros (so that the bytes stay whole)
// and the group says it is incomplete.
bool put_colls(writer &w, const coll_data &d) {
  put_strings(w, d.keys);
  w.u(d.size());
  uint64_t prev = 0;
  bool ok = !d.lost;
  std::vector<coll_call> piece;  // the calls, read back a piece at a time when spilled
  for (size_t i = 0; i < d.size(); i += piece.size()) {
    if (!d.read(i, 4096, &piece)) {
      ok = false;
      piece.assign(std::min<size_t>(4096, d.size() - i), {});
    }
    for (const coll_call &c : piece) {
      w.i(delta(c.start, prev));
      for (uint64_t v : {c.end, c.wait_start, c.wait_end}) w.i(delta(v, c.start));
      w.i(c.comm_id);
      w.u(c.key);
      w.u(c.has_id);
      prev = c.start;
    }
  }
  return ok;
}

// Spills d's calls in memory (kept there when the file refuses them).
bool spill_decoded(decoded_calls *sink, coll_data *d) {
  if (!sink->file) sink->file = std::make_shared<spill_store>();
  return d->spill(sink->file);
}

void get_colls(reader &r, coll_data *d, decoded_calls *sink) {
  get_strings(r, &d->keys);
  const size_t n = r.n(7);
  uint64_t prev = 0;
  for (size_t i = 0; i < n && r.ok; ++i) {
    coll_call c;
    c.start = prev + static_cast<uint64_t>(r.i());
    for (uint64_t *v : {&c.end, &c.wait_start, &c.wait_end})
      *v = c.start + static_cast<uint64_t>(r.i());
    c.comm_id = r.i();
    c.key = static_cast<uint32_t>(r.u());
    c.has_id = r.b();
    r.ok = r.ok && c.key < d->keys.size();
    prev = c.start;
    d->calls.push_back(c);
    if (sink->budget && d->calls.size() >= sink->budget) spill_decoded(sink, d);
  }
  if (sink->budget && sink->held + d->calls.size() > sink->budget && spill_decoded(sink, d)) return;
  d->calls.shrink_to_fit();
  sink->held += d->calls.size();
}

// The group's steps from the previous one's: its start, step, epoch, group and index (the next
// one's). False when the steps could not be read back: the rest are written as zeros.
bool put_steps(writer &w, const group_partial &g, const step_store &steps) {
  step_result prev;
  prev.start = g.fig.start;
  size_t written = 0;
  auto put = [&](const step_result &s) {
    w.i(delta(s.start, prev.start));
    w.u(s.dur);
    w.i(delta(static_cast<uint64_t>(s.step), static_cast<uint64_t>(prev.step)));
    w.i(delta(static_cast<uint64_t>(s.epoch), static_cast<uint64_t>(prev.epoch)));
    for (uint64_t p : s.parts) w.u(p);
    w.i(static_cast<int64_t>(s.group) - prev.group);
    w.i(static_cast<int64_t>(s.index) - prev.index);
    w.u(uint64_t(s.has_step) | uint64_t(s.has_epoch) << 1);
    prev = s;
    ++prev.index;
    ++written;
  };
  const bool ok =
      steps.for_each(g.first_step, g.nsteps, [&](const step_result &s, size_t) { put(s); });
  for (step_result blank; written < g.nsteps;) put(blank);
  return ok;
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
  w.u(g.nsteps);
  const bool steps_read = put_steps(w, g, steps);
  const bool colls_read = put_colls(w, g.colls);
  // Last, once the temporary files were read: whether the group is whole.
  w.u(g.readback_failed || !steps_read || !colls_read);
}
void get_group(reader &r, group_partial *g, step_store *steps, decoded_calls *sink) {
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
  g->nsteps = r.n(k_nbound + 8);
  g->first_step = steps->size();
  step_result prev;
  prev.start = f.start;
  for (size_t i = 0; i < g->nsteps && r.ok; ++i) {
    step_result s;
    s.start = prev.start + static_cast<uint64_t>(r.i());
    s.dur = r.u();
    s.step = static_cast<int64_t>(static_cast<uint64_t>(prev.step) + static_cast<uint64_t>(r.i()));
    s.epoch =
        static_cast<int64_t>(static_cast<uint64_t>(prev.epoch) + static_cast<uint64_t>(r.i()));
    for (uint64_t &p : s.parts) p = r.u();
    s.group = static_cast<uint32_t>(prev.group + r.i());
    s.index = static_cast<uint32_t>(prev.index + r.i());
    const uint64_t flags = r.u();
    s.has_step = (flags & 1) != 0;
    s.has_epoch = (flags & 2) != 0;
    steps->append(&s, 1);
    prev = s;
    ++prev.index;
  }
  get_colls(r, &g->colls, sink);
  g->readback_failed = r.b();
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
  w.u(d.bytes_overflow);
  w.u(d.all_bytes);
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
  d->bytes_overflow = r.b();
  d->all_bytes = r.u();
  for (uint64_t *v : {&d->copies.no_file[0], &d->copies.no_file[1], &d->copies.unattributed_calls,
                      &d->copies.unattributed_bytes})
    *v = r.u();
  for (size_t k = r.n(2); k > 0 && r.ok; --k) {
    const uint64_t size = r.u();
    d->sizes[size] = r.u();
  }
  for (size_t k = r.n(); k > 0 && r.ok; --k) {
    std::string name = r.s();
    get_file_io(r, &d->files[name]);
  }
  for (size_t k = r.n(2); k > 0 && r.ok; --k) {
    std::string h = r.s();
    d->fh_paths[h] = r.s();
  }
  for (size_t k = r.n(); k > 0 && r.ok; --k) {
    time_bins &t = d->proc_bins[r.s()];
    t.width_ns = r.u();
    for (size_t b = r.n(3); b > 0 && r.ok; --b) {
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

size_t shared_step_rows(size_t n) {
  const size_t budget = step_rows_budget();
  if (!budget) return 0;  // never to the file, as on one machine
  return std::max<size_t>(std::min<size_t>(budget, 512), budget / std::max<size_t>(n, 1));
}

bool decode_partial(std::string_view bytes, input_report *in, analysis_partial *p, std::string *why,
                    decoded_calls *calls, size_t step_rows) {
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
  // a worker's steps: in the file past the budget
  p->steps = step_store(step_rows ? step_rows : step_rows_budget());
  decoded_calls own;  // and its collective calls, past the budget
  decoded_calls *sink = calls ? calls : &own;
  for (group_partial &g : p->groups)
    if (r.ok) get_group(r, &g, &p->steps, sink);
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
  for (size_t k = r.n(5); k > 0 && r.ok; --k) {
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
