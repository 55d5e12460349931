// collectives.cpp: which events are collectives, their calls per process, and their matching
// across ranks into instances with each rank's wait for the last arrival.
#include "analysis/collectives.hpp"

#include <algorithm>
#include <map>

#include "analysis/analyze.hpp"
#include "analysis/held_sum.hpp"
#include "analysis/name_stats.hpp"
#include "reader/json_string.hpp"

namespace dftrace::analysis {

using detail::jvalue;

namespace {

// torch.distributed's and libdftrace_mpi's collectives (category comm, the name as written).
constexpr std::string_view k_comm_ops[] = {"all_reduce",
                                           "all_gather",
                                           "all_gather_into_tensor",
                                           "reduce_scatter",
                                           "reduce_scatter_tensor",
                                           "broadcast",
                                           "bcast",
                                           "reduce",
                                           "all_to_all",
                                           "all_to_all_single",
                                           "gather",
                                           "scatter",
                                           "barrier"};
// MPI's blocking collectives (category MPI, as other tracers name them).
constexpr std::string_view k_mpi_ops[] = {"MPI_Allreduce",      "MPI_Allgather",
                                          "MPI_Allgatherv",     "MPI_Alltoall",
                                          "MPI_Alltoallv",      "MPI_Alltoallw",
                                          "MPI_Barrier",        "MPI_Bcast",
                                          "MPI_Exscan",         "MPI_Gather",
                                          "MPI_Gatherv",        "MPI_Reduce",
                                          "MPI_Reduce_scatter", "MPI_Reduce_scatter_block",
                                          "MPI_Scan",           "MPI_Scatter",
                                          "MPI_Scatterv"};

// |([s, e) U [ws, we)) n [s, last)|: the call's blocked time before the last rank arrived.
uint64_t blocked_before(const coll_call &c, uint64_t last) {
  if (last <= c.start) return 0;
  const uint64_t a_end = std::min(c.end, last);
  uint64_t n = a_end > c.start ? a_end - c.start : 0;
  const uint64_t ws = std::max(c.wait_start, c.start), we = std::min(c.wait_end, last);
  if (we > ws) {
    n += we - ws;
    // the part of the wait inside the call's own event counts once
    const uint64_t os = std::max(ws, c.start), oe = std::min(we, a_end);
    if (oe > os) n -= oe - os;
  }
  return n;
}

uint64_t blocked_all(const coll_call &c) { return blocked_before(c, UINT64_MAX); }

}  // namespace

std::string_view collective_op(std::string_view cat, std::string_view name) {
  if (cat == "comm") {
    for (std::string_view op : k_comm_ops)
      if (name == op) return name;
  } else if (cat == "MPI") {
    for (std::string_view op : k_mpi_ops)
      if (name == op) return name;
  }
  return {};
}

uint32_t coll_data::key_of(std::string_view op, std::string_view size, std::string_view group) {
  std::string k(op);
  k.push_back('\x1f');
  k.append(size);
  k.push_back('\x1f');
  k.append(group);
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == k) return static_cast<uint32_t>(i);
  keys.push_back(std::move(k));
  return static_cast<uint32_t>(keys.size() - 1);
}

void scan_collective(const detail::parsed_line &pl, uint64_t ts, uint64_t end, coll_data *d) {
  const std::string_view cat = pl.cat.text, name = pl.name.text;
  if (cat == "comm" && name == "wait") {
    int64_t id = 0;
    const jvalue *v = pl.arg_value("comm_id");
    if (v && detail::value_i64(*v, &id)) d->waits.push_back({id, ts, end});
    return;
  }
  const std::string_view op = collective_op(cat, name);
  if (op.empty()) return;
  std::string size;
  uint64_t n = 0;
  if (const jvalue *v = pl.arg_value("comm_size"); v && detail::value_u64(*v, &n)) {
    size = std::to_string(n);
    // An MPI intercommunicator's call (libdftrace_mpi): "local/remote", never matched.
    if (const jvalue *r = pl.arg_value("comm_remote_size"); r && detail::value_u64(*r, &n))
      size += "/" + std::to_string(n);
  }
  std::string group;  // an opaque id: a string (unescaped) or a number as written
  if (const jvalue *v = pl.arg_value("comm_group")) {
    if (v->type == detail::jtype::string)
      detail::json_unescape_append(v->text, &group);
    else if (v->type == detail::jtype::number)
      group = v->text;
  }
  coll_call c;
  c.start = ts;
  // A DDP bucket's event runs from the bucket being ready to its reduction ending, beside the
  // backward pass: its start is the arrival, but the rank is not blocked in it.
  c.end = pl.arg_value("bucket") ? ts : end;
  if (const jvalue *v = pl.arg_value("comm_id")) c.has_id = detail::value_i64(*v, &c.comm_id);
  c.key = d->key_of(cat == "comm" ? "comm." + std::string(op) : std::string(op), size, group);
  d->calls.push_back(c);
}

bool coll_data::spill(const std::shared_ptr<spill_store> &f) {
  uint64_t at = 0;
  if (!calls.empty()) {
    if (!f->write_bytes(calls.data(), calls.size() * sizeof(coll_call), &at)) return false;
    file = f;
    spilled.push_back({at, calls.size()});
    spilled_calls += calls.size();
    std::vector<coll_call>().swap(calls);
  }
  if (!waits.empty()) {
    if (!f->write_bytes(waits.data(), waits.size() * sizeof(coll_wait), &at)) return false;
    file = f;
    spilled_waits.push_back({at, waits.size()});
    std::vector<coll_wait>().swap(waits);
  }
  return true;
}

bool coll_data::load() {
  if (spilled.empty() && spilled_waits.empty()) return true;
  std::vector<coll_call> all;
  lost = !read(0, size(), &all) || lost;
  calls = std::move(all);
  spilled.clear();
  spilled_calls = 0;
  for (const chunk &k : spilled_waits) {
    const size_t old = waits.size();
    waits.resize(old + k.count);
    if (!file->read_bytes(k.offset, waits.data() + old, k.count * sizeof(coll_wait))) {
      waits.resize(old);
      lost = true;
    }
  }
  spilled_waits.clear();
  file.reset();
  return !lost;
}

bool coll_data::read(size_t first, size_t n, std::vector<coll_call> *out) const {
  out->clear();
  const size_t end = std::min(first + n, size());
  size_t at = 0;  // index of the chunk's first call
  for (const chunk &k : spilled) {
    if (first >= end) break;
    if (first < at + k.count) {
      const size_t m = std::min(end, at + k.count) - first, old = out->size();
      out->resize(old + m);
      if (!file->read_bytes(k.offset + (first - at) * sizeof(coll_call), out->data() + old,
                            m * sizeof(coll_call))) {
        out->resize(old);
        return false;
      }
      first += m;
    }
    at += k.count;
  }
  for (; first < end; ++first) out->push_back(calls[first - spilled_calls]);
  return true;
}

void coll_data::append(coll_data &o) {
  if (keys.empty() && empty()) {  // taken whole
    const bool was_lost = lost || o.lost;
    *this = std::move(o);
    lost = was_lost;
    o = coll_data();
    return;
  }
  std::vector<uint32_t> map(o.keys.size());
  for (size_t i = 0; i < o.keys.size(); ++i) {
    const std::string_view k = o.keys[i];
    const size_t a = k.find('\x1f'), b = k.find('\x1f', a + 1);
    map[i] = key_of(k.substr(0, a), k.substr(a + 1, b - a - 1), k.substr(b + 1));
  }
  const bool same_file = !file || !o.file || file == o.file;
  bool same = same_file;
  for (size_t i = 0; i < map.size(); ++i) same = same && map[i] == i;
  if ((!o.spilled.empty() && !same) || (!o.spilled_waits.empty() && !same_file)) o.load();
  if (!o.spilled.empty()) {  // the calls' keys hold here: their chunks are taken as they are
    spilled.insert(spilled.end(), o.spilled.begin(), o.spilled.end());
    spilled_calls += o.spilled_calls;
    file = o.file;
  }
  if (!o.spilled_waits.empty()) {  // in this one's file: taken as they are
    spilled_waits.insert(spilled_waits.end(), o.spilled_waits.begin(), o.spilled_waits.end());
    file = o.file;
  }
  lost = lost || o.lost;
  for (coll_call c : o.calls) {
    c.key = map[c.key];
    calls.push_back(c);
  }
  waits.insert(waits.end(), o.waits.begin(), o.waits.end());
  o = coll_data();
}

void coll_data::resolve_waits() {
  std::sort(waits.begin(), waits.end(), [](const coll_wait &a, const coll_wait &b) {
    return a.id != b.id ? a.id < b.id : a.start != b.start ? a.start < b.start : a.end < b.end;
  });
  for (coll_call &c : calls) {
    if (!c.has_id) continue;
    const auto it = std::lower_bound(waits.begin(), waits.end(), c.comm_id,
                                     [](const coll_wait &w, int64_t id) { return w.id < id; });
    if (it == waits.end() || it->id != c.comm_id) continue;
    c.wait_start = it->start;
    c.wait_end = it->end;
  }
  std::vector<coll_wait>().swap(waits);
}

void coll_data::canonical() {
  // keys sorted by text, calls renumbered, then ordered
  std::vector<uint32_t> order(keys.size()), rank_of(keys.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
  std::vector<std::string> sorted(keys.size());
  for (size_t i = 0; i < order.size(); ++i) {
    rank_of[order[i]] = static_cast<uint32_t>(i);
    sorted[i] = std::move(keys[order[i]]);
  }
  keys = std::move(sorted);
  for (coll_call &c : calls) c.key = rank_of[c.key];
  std::sort(calls.begin(), calls.end(), [](const coll_call &a, const coll_call &b) {
    if (a.key != b.key) return a.key < b.key;
    if (a.start != b.start) return a.start < b.start;
    if (a.end != b.end) return a.end < b.end;
    return a.wait_start != b.wait_start ? a.wait_start < b.wait_start : a.wait_end < b.wait_end;
  });
}

namespace {

// One key's calls per participating group: its calls [first, first + count) of the group's
// (canonical) sequence.
struct key_calls {
  std::vector<size_t> groups;
  struct span {
    const coll_data *d = nullptr;
    size_t first = 0, count = 0;
  };
  std::vector<span> calls;
};

// One group's calls at a key, in order, a piece at a time when they are spilled.
class call_cursor {
 public:
  call_cursor(const key_calls::span &s, bool *ok) : s_(s), next_(s.first), ok_(ok) {}
  const coll_call &next() {
    if (s_.d->spilled.empty()) return s_.d->calls[next_++];
    if (at_ == buf_.size()) {
      constexpr size_t k_piece = 1024;  // calls read back at a time (48 KiB)
      const size_t k = std::min(k_piece, s_.first + s_.count - next_);
      if (!s_.d->read(next_, k, &buf_)) {
        *ok_ = false;
        buf_.assign(k, coll_call());
      }
      next_ += k;
      at_ = 0;
    }
    return buf_[at_++];
  }

 private:
  key_calls::span s_;
  size_t next_ = 0, at_ = 0;
  std::vector<coll_call> buf_;
  bool *ok_;
};

// The key's op, comm_size ("local[/remote]") and comm_group into o; *remote: the remote
// group's size of an intercommunicator's key, empty for any other.
void parse_key(const std::string &key, coll_op *o, std::string *remote) {
  const size_t a = key.find('\x1f'), b = key.find('\x1f', a + 1);
  o->op = key.substr(0, a);
  o->has_size = b > a + 1;
  if (o->has_size) o->comm_size = std::stoull(key.substr(a + 1, b - a - 1));
  const size_t slash = key.find('/', a + 1);
  if (o->has_size && slash < b) *remote = key.substr(slash + 1, b - slash - 1);
  o->group = key.substr(b + 1);
}

// How many instances are matched, of n ranks' calls (the fewest of a rank: inst, the most:
// most); o->note says why not all, or why none.
size_t matched_instances(coll_op *o, const std::string &remote, size_t n, size_t inst,
                         size_t most) {
  if (!remote.empty()) {
    // Each side sees its own group (comm_size) and the other's size: its calls are not matched,
    // since one side's alone would look like a whole collective.
    o->note = "an intercommunicator's (local group of " + std::to_string(o->comm_size) +
              ", remote group of " + remote + "): not matched";
    return 0;
  }
  if (n < 2) {
    o->note = "called by one rank only";
    return 0;
  }
  if (o->has_size && n > o->comm_size && o->group.empty()) {
    o->note = std::to_string(n) + " ranks call it with comm_size " + std::to_string(o->comm_size) +
              ": without comm_group, communicators of one size cannot be told apart";
    return 0;
  }
  if (most != inst) {
    o->note = "ranks made " + std::to_string(inst) + " to " + std::to_string(most) +
              " calls: the first " + std::to_string(inst) + " of each are matched";
  } else if (o->has_size && n < o->comm_size) {
    o->note = std::to_string(n) + " of " + std::to_string(o->comm_size) + " ranks in the trace";
  }
  return inst;
}

// The instances' spreads (last arrival minus first): held in memory up to `budget`, then in a
// temporary file of their own; p50 and p99 selected exactly (select_durations), as a name's
// durations are. False when the file cannot be read back.
class spread_list {
 public:
  explicit spread_list(size_t budget) : budget_(budget) {}
  void add(uint64_t v) {
    most_ = std::max(most_, v);
    d_.durs.push_back(v);
    if (!budget_ || d_.durs.size() < budget_) return;
    if (!file_) file_ = std::make_unique<spill_store>();
    d_.spill(*file_);  // what the file refuses stays in memory
  }
  bool summarize(coll_op *o) {
    const uint64_t n = d_.count();
    o->spread_max = most_;
    if (!n) return true;
    std::vector<uint64_t> at;  // nearest ranks, as percentile_sorted
    if (!select_durations(d_, file_.get(), {(50 * n + 99) / 100, (99 * n + 99) / 100}, &at,
                          budget_ ? budget_ : SIZE_MAX))
      return false;
    o->spread_p50 = at[0];
    o->spread_p99 = at[1];
    return true;
  }

 private:
  size_t budget_;
  uint64_t most_ = 0;
  name_durations d_;
  std::unique_ptr<spill_store> file_;
};

void match_key(const std::string &key, key_calls &kc, coll_summary *s,
               std::vector<coll_group_total> *tot, size_t budget, bool *ok) {
  coll_op o;
  std::string remote;
  parse_key(key, &o, &remote);
  const size_t n = kc.groups.size();
  size_t inst = SIZE_MAX, most = 0, total = 0;
  for (const auto &v : kc.calls) {
    inst = std::min(inst, v.count);
    most = std::max(most, v.count);
    total += v.count;
  }
  for (size_t i = 0; i < n; ++i) o.ranks.push_back({kc.groups[i], kc.calls[i].count, 0, 0, 0});
  inst = matched_instances(&o, remote, n, inst, most);
  spread_list spreads(budget);
  std::vector<call_cursor> cur;
  cur.reserve(n);
  for (size_t i = 0; i < n; ++i) cur.emplace_back(kc.calls[i], ok);
  std::vector<const coll_call *> at(n);  // instance k's calls
  for (size_t k = 0; k < inst; ++k) {
    uint64_t first = UINT64_MAX, last = 0;
    size_t last_i = 0;
    for (size_t i = 0; i < n; ++i) {
      at[i] = &cur[i].next();
      const uint64_t a = at[i]->start;
      first = std::min(first, a);
      if (a > last || i == 0) {
        last = a;
        last_i = i;
      }
    }
    spreads.add(last - first);
    uint64_t waited = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t w = blocked_before(*at[i], last);
      add_ns(&o.ranks[i].wait_ns, w);
      add_ns(&o.blocked_ns, blocked_all(*at[i]));
      add_ns(&waited, w);
    }
    add_ns(&o.wait_ns, waited);
    if (last > first) {  // somebody arrived before the last: it was late
      ++o.ranks[last_i].last;
      add_ns(&o.ranks[last_i].caused_ns, waited);
    }
  }
  o.instances = inst;
  o.unmatched_calls = total - inst * n;
  if (!spreads.summarize(&o)) *ok = false;
  for (const coll_rank &r : o.ranks) {  // most often last; the first group at a tie
    if (r.last > o.last_count) {
      o.has_last = true;
      o.last_group = r.group;
      o.last_count = r.last;
    }
    coll_group_total &t = (*tot)[r.group];
    t.calls += inst ? inst : 0;
    add_ns(&t.wait_ns, r.wait_ns);
    add_ns(&t.caused_ns, r.caused_ns);
    t.last += r.last;
  }
  s->instances += inst;
  add_ns(&s->wait_ns, o.wait_ns);
  add_ns(&s->blocked_ns, o.blocked_ns);
  s->ops.push_back(std::move(o));
}

}  // namespace

coll_summary match_collectives(const std::vector<const coll_data *> &groups, size_t budget,
                               bool *complete) {
  coll_summary s;
  bool ok = true;
  std::map<std::string, key_calls> by_key;  // ordered: ops by name, then size text
  std::vector<coll_call> piece;
  for (size_t g = 0; g < groups.size(); ++g) {
    // The group's calls per key: a pass over its sequence (ordered by key), a piece at a time.
    const coll_data &d = *groups[g];
    constexpr size_t k_piece = 4096;
    key_calls::span *open = nullptr;
    uint32_t open_key = 0;
    for (size_t i = 0; i < d.size(); i += k_piece) {
      if (!d.read(i, k_piece, &piece)) {
        ok = false;
        break;
      }
      for (size_t j = 0; j < piece.size(); ++j) {
        if (!open || piece[j].key != open_key) {
          open_key = piece[j].key;
          key_calls &kc = by_key[d.keys[open_key]];
          kc.groups.push_back(g);
          kc.calls.push_back({&d, i + j, 0});
          open = &kc.calls.back();
        }
        ++open->count;
      }
    }
  }
  std::vector<coll_call>().swap(piece);
  std::vector<coll_group_total> tot(groups.size());
  for (size_t g = 0; g < tot.size(); ++g) tot[g].group = g;
  for (auto &kv : by_key) match_key(kv.first, kv.second, &s, &tot, budget, &ok);
  if (complete) *complete = ok;
  for (const coll_group_total &t : tot)
    if (t.calls) s.groups.push_back(t);
  return s;
}

}  // namespace dftrace::analysis
