// aggregator.cpp: aggregation mode's folding and its lines (aggregator.hpp).
#include "writer/aggregator.hpp"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "base/clock.hpp"
#include "dftrace/dftrace.h"

namespace dftrace::detail {

namespace {

constexpr size_t k_number = 40;  // room for one number (write_double needs 32)

// The per-use arguments that identify a record (aggregator::key): the file an I/O call is on,
// and the two ends of an in-kernel copy, which the analysis reads as the full event's. In the
// order they are written, as the I/O events write them.
constexpr std::string_view k_ident_keys[] = {"fhash", "from_hash", "to_hash"};

// The index in k_ident_keys of a per-use argument's key, or -1.
int ident_of(std::string_view key) {
  switch (key.size()) {
    case 5: return key == k_ident_keys[0] ? 0 : -1;
    case 9: return key == k_ident_keys[1] ? 1 : -1;
    case 7: return key == k_ident_keys[2] ? 2 : -1;
    default: return -1;
  }
}

char *put(char *p, std::string_view text) {
  std::memcpy(p, text.data(), text.size());
  return p + text.size();
}

// ,"<key><suffix>":<value>
char *put_num(char *p, std::string_view key, const char *suffix, bool is_double, int64_t i,
              double d) {
  p = put(p, ",\"");
  p = put(p, key);
  p = put(p, suffix);
  p = put(p, "\":");
  return is_double ? write_double(p, d) : write_i64(p, i);
}

}  // namespace

void aggregator::fold(group *g, std::string_view key, bool dbl, const char *value) {
  int64_t iv = 0;
  double dv = 0;
  if (dbl) {
    std::memcpy(&dv, value, 8);
  } else {
    std::memcpy(&iv, value, 8);
  }
  num *n = nullptr;
  for (auto &a : g->args)  // each key once
    if (a.key == key) {
      n = &a.n;
      break;
    }
  if (!n) {
    std::string esc(6 * key.size() + 8, '\0');
    esc.resize(static_cast<size_t>(escape_json(esc.data(), key.data(), key.size()) - esc.data()));
    g->args.push_back({std::string(key), std::move(esc), num{}});
    n = &g->args.back().n;
  }
  if (!n->set) {
    *n = num{};
    n->set = true;
    n->is_double = dbl;
    n->imin = n->imax = iv;
    n->dmin = n->dmax = dv;
  }
  if (n->is_double || dbl) {
    if (!n->is_double) {  // an integer key that became a double: doubles from now on
      n->is_double = true;
      n->dmin = static_cast<double>(n->imin);
      n->dmax = static_cast<double>(n->imax);
      n->dsum = static_cast<double>(n->isum);
    }
    const double v = dbl ? dv : static_cast<double>(iv);
    n->dmin = std::min(n->dmin, v);
    n->dmax = std::max(n->dmax, v);
    n->dsum += v;
  } else {
    n->imin = std::min(n->imin, iv);
    n->imax = std::max(n->imax, iv);
    n->isum += iv;
  }
}

void aggregator::add(const line_format &f, const rec &r) {
  uint64_t start = r.start, end = r.end;
  if (r.ticked && f.ticks) {
    start = f.ticks->to_ns(start);
    end = r.end == r.start ? start : f.ticks->to_ns(end);
  }
  const uint64_t s_ns = start + f.epoch_offset_ns, e_ns = end + f.epoch_offset_ns;
  // The duration as the event's own line would say it, so that sums equal the full trace's.
  const uint64_t dur = f.ns_precision ? e_ns - s_ns : e_ns / 1000 - s_ns / 1000;
  newest_ns_ = std::max(newest_ns_, s_ns);
  key k{r.name_cat, r.tid, s_ns / f.aggregate_interval_ns, {0, 0, 0}, 0};
  // One pass over the per-use arguments (raw entries or a prepared layout's; JSON text has
  // none): the file hashes go to the key, the other numeric ones wait in pending_ until the
  // record is found.
  pending_.clear();
  for_each_use_arg(r, [this, &k](uint8_t type, std::string_view key, std::string_view value) {
    if (value.size() != 8) return;
    if (type == DFTRACE_ARG_INT || type == DFTRACE_ARG_UINT) {
      const int i = ident_of(key);
      if (i >= 0) {  // a key given twice: the last wins, as in a line
        std::memcpy(&k.ident[i], value.data(), 8);
        k.ident_set = static_cast<uint8_t>(k.ident_set | 1u << i);
        if (type == DFTRACE_ARG_INT)
          k.ident_set = static_cast<uint8_t>(k.ident_set | 1u << (k_idents + i));
        else
          k.ident_set = static_cast<uint8_t>(k.ident_set & ~(1u << (k_idents + i)));
        return;
      }
    } else if (type != DFTRACE_ARG_DOUBLE) {
      return;
    }
    if (!is_reserved_arg_key(key))
      pending_.push_back({key, value.data(), type == DFTRACE_ARG_DOUBLE});
  });
  group &g = groups_[k];
  if (g.count == 0) {  // new, or written by the signal path: its arguments start again too
    g.k = k;
    g.dmin = g.dmax = dur;
    g.dsum = 0;
    for (auto &a : g.args) a.n.set = false;
  }
  ++g.count;
  g.dmin = std::min(g.dmin, dur);
  g.dmax = std::max(g.dmax, dur);
  g.dsum += dur;
  for (const arg_value &a : pending_) fold(&g, a.key, a.dbl, a.value);
}

size_t aggregator::line_bound(const line_format &f, const group &g) {
  size_t n = 128 + g.k.name_cat->size() + f.hhash_field.size() + (4 + k_idents) * k_number;
  for (const auto &a : g.args) n += 3 * (a.esc.size() + 8 + k_number);
  return n;
}

char *aggregator::write_line(const line_format &f, const group &g, char *p) {
  const uint64_t t_ns = g.k.interval * f.aggregate_interval_ns;
  *p++ = '{';
  p = put(p, std::string_view(*g.k.name_cat).substr(1));  // without its leading ','
  p = put(p, ",\"pid\":");
  p = write_i64(p, f.pid);
  p = put(p, ",\"tid\":");
  p = write_i64(p, g.k.tid);
  p = put(p, ",\"ts\":");
  p = write_u64(p, f.ns_precision ? t_ns : t_ns / 1000);
  p = put(p, ",\"ph\":\"A\",\"args\":{");
  if (!f.hhash_field.empty()) {
    p = put(p, f.hhash_field);
    *p++ = ',';
  }
  for (int i = 0; i < k_idents; ++i) {  // as the full event writes them: "fhash":N,
    if (!(g.k.ident_set >> i & 1)) continue;
    *p++ = '"';
    p = put(p, k_ident_keys[i]);
    p = put(p, "\":");
    p = g.k.ident_set >> (k_idents + i) & 1 ? write_i64(p, static_cast<int64_t>(g.k.ident[i]))
                                            : write_u64(p, g.k.ident[i]);
    *p++ = ',';
  }
  p = put(p, "\"dft_cnt\":");
  p = write_u64(p, g.count);
  p = put_num(p, "dur", "_min", false, static_cast<int64_t>(g.dmin), 0);
  p = put_num(p, "dur", "_max", false, static_cast<int64_t>(g.dmax), 0);
  p = put_num(p, "dur", "_sum", false, static_cast<int64_t>(g.dsum), 0);
  for (const auto &a : g.args) {
    const num &n = a.n;
    if (!n.set) continue;
    p = put_num(p, a.esc, "_min", n.is_double, n.imin, n.dmin);
    p = put_num(p, a.esc, "_max", n.is_double, n.imax, n.dmax);
    p = put_num(p, a.esc, "_sum", n.is_double, n.isum, n.dsum);
  }
  return put(p, "}}\n");
}

uint64_t aggregator::take(const line_format &f, uint64_t lag_ns, bool all, std::string *out,
                          member_stats *st) {
  if (groups_.empty()) return 0;
  const uint64_t width = f.aggregate_interval_ns;
  std::vector<const group *> ready;
  for (const auto &kv : groups_) {
    const group &g = kv.second;
    if (all || g.count == 0 || (g.k.interval + 1) * width + lag_ns <= newest_ns_)
      ready.push_back(&g);
  }
  // In time order, then by name: a stable file whatever the hash map's order.
  std::sort(ready.begin(), ready.end(), [](const group *a, const group *b) {
    const key &x = a->k, &y = b->k;
    if (x.interval != y.interval) return x.interval < y.interval;
    if (*x.name_cat != *y.name_cat) return *x.name_cat < *y.name_cat;
    if (x.tid != y.tid) return x.tid < y.tid;
    return std::tie(x.ident_set, x.ident[0], x.ident[1], x.ident[2]) <
           std::tie(y.ident_set, y.ident[0], y.ident[1], y.ident[2]);
  });
  uint64_t events = 0;
  bool any = false;
  for (const group *g : ready) {
    if (g->count == 0) continue;  // the signal path wrote it
    const size_t at = out->size();
    out->resize(at + line_bound(f, *g));
    out->resize(static_cast<size_t>(write_line(f, *g, &(*out)[at]) - out->data()));
    ++st->lines;
    st->add_ts(g->k.interval * width / 1000, any);
    events += g->count;
  }
  for (const group *g : ready) groups_.erase(key(g->k));  // a copy: erase frees g
  return events;
}

char *aggregator::take_one(const line_format &f, char *out, size_t cap, uint64_t *ts_us,
                           uint64_t *events) {
  for (auto &kv : groups_) {
    group &g = kv.second;
    if (g.count == 0) continue;
    if (line_bound(f, g) > cap) return nullptr;
    char *end = write_line(f, g, out);
    *ts_us = g.k.interval * f.aggregate_interval_ns / 1000;
    *events = g.count;
    g.count = 0;
    return end;
  }
  return nullptr;
}

}  // namespace dftrace::detail
