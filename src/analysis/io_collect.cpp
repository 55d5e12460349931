// io_collect.cpp: I/O calls read by the workers, then folded in the order each process wrote
// them: descriptors' offsets, per-file figures, access sizes and bytes over time.
#include "analysis/io_collect.hpp"

#include <algorithm>

#include "analysis/io_class.hpp"

namespace dftrace::analysis {

using detail::jvalue;
using detail::parsed_line;

const char *const k_size_bucket_names[k_size_buckets] = {"0-100",   "100-1K", "1K-10K", "10K-100K",
                                                         "100K-1M", "1M-4M",  "4M-10M", "10M-100M",
                                                         "100M-1G", "1G+"};

size_t size_bucket(uint64_t b) {
  constexpr uint64_t K = 1024, M = K * K, G = M * K;
  const uint64_t upper[k_size_buckets - 1] = {100,   K,      10 * K,  100 * K, M,
                                              4 * M, 10 * M, 100 * M, G};
  for (size_t i = 0; i < k_size_buckets - 1; ++i)
    if (b <= upper[i]) return i;
  return k_size_buckets - 1;
}

namespace {

// What a POSIX call does with its descriptor's offset, from the shape of its wrapper in the
// table of interposed calls (dftrace/io_calls.def), by the function's name.
io_op::kind_t kind_of_shape(std::string_view shape) {
  if (shape.substr(0, 4) == "OPEN" || shape == "CREAT") return io_op::open;
  if (shape == "SEEK") return io_op::seek;
  if (shape == "TRANSFER" || shape == "VECTOR") return io_op::transfer;
  if (shape == "TRANSFER_AT" || shape == "PREAD_CHK" || shape.substr(0, 9) == "VECTOR_AT")
    return io_op::transfer_at;
  return io_op::other;
}

io_op::kind_t posix_kind(std::string_view name) {
  if (name == "close") return io_op::close;
  struct row {
    std::string_view cat, symbol, shape;
  };
  static constexpr row k_rows[] = {
#define DFTRACE_IO_CALL(cat, symbol, event, shape, cls, bytes, types) {#cat, #symbol, #shape},
#include "dftrace/io_calls.def"
  };
  for (const row &r : k_rows)
    if (r.symbol == name && r.cat == "POSIX") return kind_of_shape(r.shape);
  return io_op::other;
}

bool arg_i64(const parsed_line &pl, const char *key, int64_t *out) {
  const jvalue *v = pl.arg_value(key);
  return v && detail::value_i64(*v, out);
}

}  // namespace

io_kind io_classify(std::string_view cat, std::string_view name) {
  io_kind k;
  k.io = io_call_category(cat);
  if (!k.io) return k;
  k.dir = static_cast<int8_t>(io_direction(cat, name, &k.how));
  k.posix = cat == "POSIX";
  if (k.posix) k.kind = posix_kind(name);
  k.creat = k.posix && name.substr(0, 5) == "creat";
  return k;
}

namespace {

// The index in b->files of a hash text (the scan's last one looked up first).
uint32_t file_index(const jvalue &fh, io_block *b, io_scan_state *st) {
  if (st->file == UINT32_MAX || fh.text != st->fhash) {
    st->fhash.assign(fh.text);
    const auto it = b->file_index.find(st->fhash);
    if (it != b->file_index.end()) {
      st->file = it->second;
    } else {
      st->file = static_cast<uint32_t>(b->files.size());
      b->files.push_back(st->fhash);
      b->file_index.emplace(st->fhash, st->file);
    }
  }
  return st->file;
}

std::vector<io_op> &ops_of(const parsed_line &pl, io_block *b, io_scan_state *st) {
  if (!st->ops || pl.pid.text != st->pid) {
    st->pid.assign(pl.pid.text);
    st->ops = &b->by_pid[st->pid];
  }
  return *st->ops;
}

// An in-kernel copy (op: its time, calls and bytes): a read of its source's file and a write of
// its target's, each where that end is a traced file; each at its offset, or at (and moving) its
// descriptor's (-1). The time is the job's once, in the first of them.
void scan_copy(const parsed_line &pl, io_op op, bool aggregated, io_block *b, io_scan_state *st) {
  static constexpr const char *k_keys[2][3] = {{"from_hash", "fd", "offset"},
                                               {"to_hash", "to_fd", "to_offset"}};
  const jvalue *ends[2] = {pl.arg_value(k_keys[0][0]), pl.arg_value(k_keys[1][0])};
  op.copy = ends[0] && ends[1] ? io_op::copy_between_files : io_op::copy_with_no_file;
  bool first = true;
  for (int d = 0; d < 2; ++d) {
    const jvalue *fh = ends[d];
    if (!fh) continue;
    io_op side = op;
    side.dir = static_cast<int8_t>(d);
    side.file = file_index(*fh, b, st);
    side.job_time = first;
    first = false;
    if (!aggregated) {
      side.fd = -1;
      arg_i64(pl, k_keys[d][1], &side.fd);
      side.kind = arg_i64(pl, k_keys[d][2], &side.offset) && side.offset >= 0 ? io_op::transfer_at
                                                                              : io_op::transfer;
    }
    ops_of(pl, b, st).push_back(side);
  }
}

}  // namespace

bool scan_io(const parsed_line &pl, char ph, uint64_t ts, uint64_t dur, detail::time_unit unit,
             const io_kind &k, io_block *b, io_scan_state *st) {
  if (!k.io) return true;
  io_op op;
  const io_bytes how = k.how;
  op.dir = k.dir;
  op.ts = ts;
  op.dur = dur;
  const bool aggregated = ph == 'A';
  uint64_t n = 1;
  if (aggregated) {
    const jvalue *c = pl.arg_value("dft_cnt");
    const jvalue *d = pl.arg_value("dur_sum");
    if (!c || !detail::value_u64(*c, &n)) n = 0;
    op.dur = 0;
    if (d && !detail::value_ns(*d, unit, &op.dur)) op.dur = 0;
    op.single = false;
  }
  if (op.dir >= 0 && how == io_bytes::folded) {  // its span is not time in the calls
    const jvalue *c = pl.arg_value(aggregated ? "calls_sum" : "calls");
    if (!c || !detail::value_u64(*c, &n)) n = 0;
    op.dur = 0;
    op.single = false;
  }
  op.calls = n;
  if (op.dir >= 0) {
    if (!io_event_bytes(pl, how, aggregated, &op.bytes)) return false;
    // a call whose size is not written (no `ret`, `bytes` or `size`) has no place in the sizes
    const char *key = how == io_bytes::ret || how == io_bytes::items ? "ret"
                      : how == io_bytes::size_arg                    ? "size"
                                                                     : "bytes";
    if (!pl.arg_value(key)) op.single = false;
  }
  if (k.posix && !aggregated && arg_i64(pl, "ret", &op.ret) && op.ret < 0) op.failed = true;
  if (op.dir == k_io_copy) {
    if (pl.arg_value("from_hash") || pl.arg_value("to_hash")) {
      scan_copy(pl, op, aggregated, b, st);
      return true;
    }
    // Which end its fhash is is not written (a trace before from_hash and to_hash, or an
    // aggregated record that folded them): neither read nor write, and said so (its bytes).
    op.dir = -1;
    op.copy = io_op::copy_ends_unknown;
  }
  if (k.posix && !aggregated) {
    op.kind = k.kind;
    arg_i64(pl, "fd", &op.fd);
    // (preadv2 and pwritev2 at offset -1 use and move the descriptor's offset)
    if (op.kind == io_op::transfer_at && (!arg_i64(pl, "offset", &op.offset) || op.offset < 0))
      op.kind = io_op::transfer;  // no offset written: treated as the descriptor's
    if (op.kind == io_op::open) {
      if (!k.creat) arg_i64(pl, "flags", &op.flags);
      op.fd = op.ret;
    }
  }
  if (const jvalue *fh = pl.arg_value("fhash")) op.file = file_index(*fh, b, st);
  ops_of(pl, b, st).push_back(op);
  return true;
}

void time_bins::widen(uint64_t w) {
  while (width_ns < w) {
    std::map<uint64_t, std::array<uint64_t, 2>> next;
    for (const auto &kv : bins) {
      auto &x = next[kv.first / 2];
      add_bytes(&x[0], kv.second[0]);
      add_bytes(&x[1], kv.second[1]);
    }
    bins.swap(next);
    width_ns *= 2;
  }
}

void time_bins::add(uint64_t ts, int dir, uint64_t bytes) {
  const uint64_t k = ts / width_ns;
  if (!bins.empty() && bins.rbegin()->first == k) {  // calls come mostly in time order
    add_bytes(&bins.rbegin()->second[dir], bytes);
    return;
  }
  add_bytes(&bins[k][dir], bytes);
  while (bins.size() > k_max_bins) widen(width_ns * 2);
}

void time_bins::merge(const time_bins &o) {
  time_bins other = o;
  other.widen(width_ns);
  widen(other.width_ns);
  for (const auto &kv : other.bins) {
    auto &x = bins[kv.first];
    add_bytes(&x[0], kv.second[0]);
    add_bytes(&x[1], kv.second[1]);
  }
  while (bins.size() > k_max_bins) widen(width_ns * 2);
}

void io_data::merge(io_data &o) {
  bytes_overflow = bytes_overflow || o.bytes_overflow || !add_bytes(&all_bytes, o.all_bytes);
  for (int d = 0; d < 2; ++d) {
    add_bytes(&bytes[d], o.bytes[d]);
    add_count(&ops[d], o.ops[d]);
    add_ns(&ns[d], o.ns[d]);
    add_count(&unbinned[d], o.unbinned[d]);
    offset_unknown[d] += o.offset_unknown[d];
    for (size_t b = 0; b < k_size_buckets; ++b) hist[d][b] += o.hist[d][b];
  }
  add_count(&meta_ops, o.meta_ops);
  add_ns(&meta_ns, o.meta_ns);
  copies.merge(o.copies);
  for (const auto &kv : o.sizes) sizes[kv.first] += kv.second;
  for (auto &kv : o.files) files[kv.first].merge(kv.second);
  for (auto &kv : o.fh_paths) name_file(kv.first, kv.second);
  for (auto &kv : o.proc_bins) proc_bins[kv.first].merge(kv.second);
  o = io_data();
}

void file_io::merge(const file_io &o) {
  for (int k = 0; k < 2; ++k) {
    add_bytes(&bytes[k], o.bytes[k]);
    add_count(&ops[k], o.ops[k]);
    add_ns(&ns[k], o.ns[k]);
    seq[k] += o.seq[k];
    consec[k] += o.consec[k];
    ordered[k] += o.ordered[k];
  }
  add_count(&meta_ops, o.meta_ops);
  add_ns(&meta_ns, o.meta_ns);
  procs.insert(o.procs.begin(), o.procs.end());
}

void io_folder::apply(std::unordered_map<int64_t, fd_state> &fds, time_bins &bins, const io_op &op,
                      file_io *f, io_data *job) {
  if (!add_bytes(&job->all_bytes, op.bytes)) job->bytes_overflow = true;
  if (op.dir < 0) {
    add_count(&job->meta_ops, op.calls);
    add_ns(&job->meta_ns, op.dur);
    if (op.copy == io_op::copy_ends_unknown) {
      add_count(&job->copies.unattributed_calls, op.calls);
      add_bytes(&job->copies.unattributed_bytes, op.bytes);
    }
    if (f) {
      add_count(&f->meta_ops, op.calls);
      add_ns(&f->meta_ns, op.dur);
    }
    if (op.failed) return;
    if (op.kind == io_op::open && op.fd >= 0) {
      fd_state s;
      s.known = !(op.flags & 02000);  // O_APPEND: the offset is the file's end, unknown here
      fds[op.fd] = s;
    } else if (op.kind == io_op::seek && op.fd >= 0) {
      fd_state &s = fds[op.fd];
      s.known = true;
      s.offset = op.ret;  // lseek returns the offset it set
    } else if (op.kind == io_op::close) {
      fds.erase(op.fd);
    }
    return;
  }
  const int d = op.dir;
  add_bytes(&job->bytes[d], op.bytes);
  add_count(&job->ops[d], op.calls);
  if (op.copy == io_op::copy_with_no_file) add_bytes(&job->copies.no_file[1 - d], op.bytes);
  if (op.job_time) add_ns(&job->ns[d], op.dur);
  if (f) {
    add_bytes(&f->bytes[d], op.bytes);
    add_count(&f->ops[d], op.calls);
    add_ns(&f->ns[d], op.dur);
  }
  if (op.bytes) bins.add(op.ts, d, op.bytes);
  if (op.failed) return;
  if (!op.single) {
    add_count(&job->unbinned[d], op.calls);
    return;
  }
  ++job->hist[d][size_bucket(op.bytes)];
  ++job->sizes[op.bytes];
  if (op.kind != io_op::transfer && op.kind != io_op::transfer_at) return;
  int64_t at = op.offset;
  if (op.kind == io_op::transfer) {
    const auto it = fds.find(op.fd);
    if (it == fds.end() || !it->second.known) {
      ++job->offset_unknown[d];
      return;
    }
    at = it->second.offset;
    it->second.offset += static_cast<int64_t>(op.bytes);
  }
  if (!op.bytes) return;  // nothing moved: no access to order
  fd_state &s = fds[op.fd];
  if (f && s.last_end[d] >= 0) {
    ++f->ordered[d];
    if (at >= s.last_end[d]) ++f->seq[d];
    if (at == s.last_end[d]) ++f->consec[d];
  }
  s.last_end[d] = at + static_cast<int64_t>(op.bytes);
}

void io_data::name_file(const std::string &fhash, std::string &path) {
  const auto it = fh_paths.find(fhash);
  if (it == fh_paths.end())
    fh_paths.emplace(fhash, std::move(path));
  else if (path < it->second)
    it->second = std::move(path);
}

void io_folder::add(io_block &b, io_data *job) {
  for (auto &kv : b.fh_paths) job->name_file(kv.first, kv.second);
  std::vector<file_io *> files(b.files.size());
  for (auto &kv : b.by_pid) {
    auto &fds = fds_[kv.first];
    time_bins &bins = bins_[kv.first];
    std::fill(files.begin(), files.end(), nullptr);
    for (const io_op &op : kv.second) {
      file_io *f = nullptr;
      if (op.file != UINT32_MAX) {
        if (!files[op.file]) {
          files[op.file] = &files_[b.files[op.file]];
          files[op.file]->procs.insert(kv.first);
        }
        f = files[op.file];
      }
      apply(fds, bins, op, f, job);
    }
  }
  b = io_block();
}

void io_folder::finish(const std::function<std::string(const std::string &)> &proc_key,
                       io_data *job) {
  for (auto &kv : files_) {
    file_io &f = kv.second;
    std::set<std::string> keys;
    for (const std::string &p : f.procs) keys.insert(proc_key(p));
    f.procs.swap(keys);
    job->files[kv.first].merge(f);
  }
  for (auto &kv : bins_) job->proc_bins[proc_key(kv.first)].merge(kv.second);
  *this = io_folder();
}

namespace {

std::vector<std::pair<uint64_t, uint64_t>> most_common(const std::map<uint64_t, uint64_t> &sizes) {
  std::vector<std::pair<uint64_t, uint64_t>> v(sizes.begin(), sizes.end());
  std::stable_sort(v.begin(), v.end(), [](const auto &a, const auto &b) {
    return a.second > b.second;  // ties: the smaller size first (map order)
  });
  if (v.size() > 4) v.resize(4);
  return v;
}

void group_bandwidth(io_data &d, const std::function<long(const std::string &)> &group_of,
                     io_summary *s) {
  std::map<size_t, time_bins> per_group;
  for (auto &kv : d.proc_bins) {
    const long g = group_of(kv.first);
    if (g >= 0) per_group[static_cast<size_t>(g)].merge(kv.second);
  }
  uint64_t w = 0;
  for (auto &kv : per_group) w = std::max(w, kv.second.width_ns);
  for (;;) {
    uint64_t lo = UINT64_MAX, hi = 0;
    for (auto &kv : per_group) {
      kv.second.widen(w);
      if (kv.second.bins.empty()) continue;
      lo = std::min(lo, kv.second.bins.begin()->first);
      hi = std::max(hi, kv.second.bins.rbegin()->first);
    }
    if (lo == UINT64_MAX) return;
    if (hi - lo + 1 > time_bins::k_max_bins) {
      w *= 2;
      continue;
    }
    s->bin_ns = w;
    s->bin_start_ns = lo * w;
    for (auto &kv : per_group) {
      io_group_bins b;
      b.group = kv.first;
      for (auto &v : b.bytes) v.assign(hi - lo + 1, 0);
      for (const auto &x : kv.second.bins)
        for (int k = 0; k < 2; ++k) b.bytes[k][x.first - lo] = x.second[k];
      s->bandwidth.push_back(std::move(b));
    }
    return;
  }
}

}  // namespace

io_summary summarize_io(io_data &d, const std::function<long(const std::string &)> &group_of) {
  io_summary s;
  for (int k = 0; k < 2; ++k) {
    s.bytes[k] = d.bytes[k];
    s.ops[k] = d.ops[k];
    s.ns[k] = d.ns[k];
    s.unbinned[k] = d.unbinned[k];
    s.offset_unknown[k] = d.offset_unknown[k];
    for (size_t i = 0; i < k_size_buckets; ++i) s.hist[k][i] = d.hist[k][i];
  }
  s.meta_ops = d.meta_ops;
  s.meta_ns = d.meta_ns;
  s.data_ns = s.ns[0];
  add_ns(&s.data_ns, s.ns[1]);
  s.ns_held = held(s.data_ns) || held(s.meta_ns);  // data_ns: ns[0] and ns[1] are parts of it
  s.copies = d.copies;
  for (uint64_t v :
       {s.ops[0], s.ops[1], s.meta_ops, s.unbinned[0], s.unbinned[1], s.copies.unattributed_calls})
    s.calls_held = s.calls_held || held(v);
  s.bytes_overflow = d.bytes_overflow;
  s.common_sizes = most_common(d.sizes);
  for (auto &kv : d.files) {
    io_file_summary f;
    const auto p = d.fh_paths.find(kv.first);
    f.path_known = p != d.fh_paths.end();
    f.name = f.path_known ? p->second : kv.first;
    f.fig = std::move(kv.second);
    for (uint64_t v : {f.fig.ns[0], f.fig.ns[1], f.fig.meta_ns}) s.ns_held = s.ns_held || held(v);
    for (uint64_t v : {f.fig.ops[0], f.fig.ops[1], f.fig.meta_ops})
      s.calls_held = s.calls_held || held(v);
    std::set<size_t> gs;
    for (const std::string &k : f.fig.procs) {
      const long g = group_of(k);
      if (g >= 0) gs.insert(static_cast<size_t>(g));
    }
    f.groups.assign(gs.begin(), gs.end());
    s.files.push_back(std::move(f));
  }
  std::sort(s.files.begin(), s.files.end(), [](const io_file_summary &a, const io_file_summary &b) {
    uint64_t x = a.fig.bytes[0], y = b.fig.bytes[0];
    add_bytes(&x, a.fig.bytes[1]);
    add_bytes(&y, b.fig.bytes[1]);
    return x != y ? x > y : a.name < b.name;
  });
  group_bandwidth(d, group_of, &s);
  return s;
}

}  // namespace dftrace::analysis
