// aggregator.cpp: aggregation mode's folding and its lines (aggregator.hpp).
#include "writer/aggregator.hpp"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "base/clock.hpp"
#include "dftrace/dftrace.h"

namespace dftrace::detail {

namespace {

void put_num(std::string *o, const char *key_suffix, const std::string &key, bool is_double,
             int64_t i, double d) {
  *o += ",\"";
  *o += key;
  *o += key_suffix;
  *o += "\":";
  char b[40];
  *o += std::string(b, is_double ? write_double(b, d) : write_i64(b, i));
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
  for (auto &a : g->args)
    if (a.first == key) n = &a.second;
  if (!n) {
    std::string esc(6 * key.size() + 8, '\0');
    esc.resize(static_cast<size_t>(escape_json(esc.data(), key.data(), key.size()) - esc.data()));
    g->args.emplace_back(std::move(esc), num{});
    n = &g->args.back().second;
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
  const uint64_t interval = s_ns / f.aggregate_interval_ns;
  newest_ns_ = std::max(newest_ns_, s_ns);
  group &g = groups_[{r.name_cat, r.tid, interval}];
  if (g.count == 0) {
    g.name_cat = r.name_cat;
    g.tid = r.tid;
    g.interval = interval;
    g.dmin = g.dmax = dur;
  }
  ++g.count;
  g.dmin = std::min(g.dmin, dur);
  g.dmax = std::max(g.dmax, dur);
  g.dsum += dur;
  if (r.use_args_json) return;  // JSON text (counters, marks): not events of this kind
  // Numeric per-use arguments (raw entries: raw_arg, key, 8-byte value).
  for_each_raw(
      std::string_view(r.use_args(), r.use_args_len),
      [&g](uint8_t type, std::string_view key, std::string_view value) {
        if (value.size() != 8 || is_reserved_arg_key(key) ||
            (type != DFTRACE_ARG_INT && type != DFTRACE_ARG_UINT && type != DFTRACE_ARG_DOUBLE))
          return;
        fold(&g, key, type == DFTRACE_ARG_DOUBLE, value.data());
      });
}

uint64_t aggregator::take(const line_format &f, uint64_t lag_ns, bool all, std::string *out,
                          member_stats *st) {
  if (groups_.empty()) return 0;
  const uint64_t width = f.aggregate_interval_ns;
  std::vector<const group *> ready;
  for (const auto &kv : groups_) {
    const group &g = kv.second;
    if (all || (g.interval + 1) * width + lag_ns <= newest_ns_) ready.push_back(&g);
  }
  // In time order, then by name: a stable file whatever the hash map's order.
  std::sort(ready.begin(), ready.end(), [](const group *a, const group *b) {
    if (a->interval != b->interval) return a->interval < b->interval;
    if (*a->name_cat != *b->name_cat) return *a->name_cat < *b->name_cat;
    return a->tid < b->tid;
  });
  uint64_t events = 0;
  bool any = false;
  char b[40];
  for (const group *g : ready) {
    const uint64_t t_ns = g->interval * width;
    const uint64_t ts = f.ns_precision ? t_ns : t_ns / 1000;
    *out += '{';
    out->append(*g->name_cat, 1, std::string::npos);  // without its leading ','
    *out += ",\"pid\":";
    *out += std::string(b, write_i64(b, f.pid));
    *out += ",\"tid\":";
    *out += std::string(b, write_i64(b, g->tid));
    *out += ",\"ts\":";
    *out += std::string(b, write_u64(b, ts));
    *out += ",\"ph\":\"A\",\"args\":{";
    if (!f.hhash_field.empty()) *out += f.hhash_field + ",";
    *out += "\"dft_cnt\":";
    *out += std::string(b, write_u64(b, g->count));
    put_num(out, "_min", "dur", false, static_cast<int64_t>(g->dmin), 0);
    put_num(out, "_max", "dur", false, static_cast<int64_t>(g->dmax), 0);
    put_num(out, "_sum", "dur", false, static_cast<int64_t>(g->dsum), 0);
    for (const auto &a : g->args) {
      const num &n = a.second;
      put_num(out, "_min", a.first, n.is_double, n.imin, n.dmin);
      put_num(out, "_max", a.first, n.is_double, n.imax, n.dmax);
      put_num(out, "_sum", a.first, n.is_double, n.isum, n.dsum);
    }
    *out += "}}\n";
    ++st->lines;
    st->add_ts(t_ns / 1000, any);
    events += g->count;
  }
  for (const group *g : ready) groups_.erase({g->name_cat, g->tid, g->interval});
  return events;
}

}  // namespace dftrace::detail
