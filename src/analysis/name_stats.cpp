// name_stats.cpp: exact percentiles of each name's durations, in memory or over the spill file.
#include "analysis/name_stats.hpp"

#include <algorithm>

#include "analysis/held_sum.hpp"

namespace dftrace::analysis {

namespace {

constexpr unsigned k_digit_bits = 16;
constexpr size_t k_chunk = size_t{1} << 16;  // values read from the spill file at a time

// One rank being searched: the candidates are the values in [lo, hi]; `rank` (1-based) counts
// among them, `count` is how many there are.
struct search {
  uint64_t rank = 0, lo = 0, hi = 0, count = 0, value = 0;
  bool done = false;
  std::vector<uint64_t> hist;         // a pass's histogram, when the range is still wide
  std::vector<uint64_t> least, most;  // per bucket, its least and greatest value
  std::vector<uint64_t> collected;    // a pass's candidates, once they fit
  unsigned shift = 0;
};

// Calls f(values, n) for every piece of d's durations: the spilled runs, then those in memory.
template <typename F>
bool for_each_piece(const name_durations &d, const spill_store *store, std::vector<uint64_t> &buf,
                    F f) {
  for (const name_durations::run &r : d.runs) {
    for (uint64_t at = 0; at < r.count;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(k_chunk, r.count - at));
      buf.resize(n);
      if (!store ||
          !store->read_bytes(r.offset + at * sizeof(uint64_t), buf.data(), n * sizeof(uint64_t)))
        return false;
      f(buf.data(), n);
      at += n;
    }
  }
  if (!d.durs.empty()) f(d.durs.data(), d.durs.size());
  return true;
}

unsigned bit_width(uint64_t x) {
  unsigned n = 0;
  while (x) {
    ++n;
    x >>= 1;
  }
  return n;
}

// Sets up s's next pass: a histogram while the candidates exceed `collect`, else a collection.
void plan(search &s, size_t collect) {
  if (s.lo == s.hi) {
    s.value = s.lo;
    s.done = true;
    return;
  }
  if (s.count <= collect) {
    s.hist.clear();
    s.collected.clear();
    s.collected.reserve(s.count);
    return;
  }
  const unsigned w = bit_width(s.hi - s.lo);
  s.shift = w > k_digit_bits ? w - k_digit_bits : 0;
  // the buckets the range reaches (a narrow one, as a collective's spreads in ns, needs few)
  const size_t n = static_cast<size_t>(((s.hi - s.lo) >> s.shift) + 1);
  s.hist.assign(n, 0);
  s.least.assign(n, UINT64_MAX);
  s.most.assign(n, 0);
}

// After a pass: the bucket that holds the rank becomes the range, or the collected candidates
// give the value.
void conclude(search &s) {
  if (s.hist.empty()) {
    const auto at = s.collected.begin() + static_cast<std::ptrdiff_t>(s.rank - 1);
    std::nth_element(s.collected.begin(), at, s.collected.end());
    s.value = *at;
    s.done = true;
    std::vector<uint64_t>().swap(s.collected);
    return;
  }
  uint64_t below = 0;
  size_t b = 0;
  while (below + s.hist[b] < s.rank) below += s.hist[b++];
  s.rank -= below;
  s.count = s.hist[b];
  s.lo = s.least[b];  // the bucket's values, not its width: one value ends the search
  s.hi = s.most[b];
  std::vector<uint64_t>().swap(s.hist);
  std::vector<uint64_t>().swap(s.least);
  std::vector<uint64_t>().swap(s.most);
}

}  // namespace

bool select_durations(name_durations &d, const spill_store *store, const std::vector<uint64_t> &ks,
                      std::vector<uint64_t> *out, size_t collect) {
  out->assign(ks.size(), 0);
  if (d.runs.empty()) {  // all in memory: selection in place, the largest rank first
    std::vector<size_t> order(ks.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ks[a] > ks[b]; });
    auto end = d.durs.end();
    for (size_t i : order) {
      const auto at = d.durs.begin() + static_cast<std::ptrdiff_t>(ks[i] - 1);
      std::nth_element(d.durs.begin(), at, end);
      (*out)[i] = *at;
      end = at + 1;
    }
    return true;
  }
  std::vector<search> ss(ks.size());
  uint64_t lo = d.lo, hi = d.hi;
  for (uint64_t v : d.durs) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  const uint64_t n = d.count();
  for (size_t i = 0; i < ss.size(); ++i) {
    ss[i].rank = ks[i];
    ss[i].lo = lo;
    ss[i].hi = hi;
    ss[i].count = n;
    plan(ss[i], collect);
  }
  std::vector<uint64_t> buf;
  for (;;) {
    bool pending = false;
    for (const search &s : ss) pending = pending || !s.done;
    if (!pending) break;
    const bool ok = for_each_piece(d, store, buf, [&](const uint64_t *v, size_t m) {
      for (search &s : ss) {
        if (s.done) continue;
        const uint64_t slo = s.lo, span = s.hi - s.lo;
        if (!s.hist.empty()) {
          uint64_t *h = s.hist.data(), *lo = s.least.data(), *hi = s.most.data();
          const unsigned sh = s.shift;
          for (size_t i = 0; i < m; ++i) {
            if (v[i] - slo > span) continue;
            const size_t b = static_cast<size_t>((v[i] - slo) >> sh);
            ++h[b];
            lo[b] = std::min(lo[b], v[i]);
            hi[b] = std::max(hi[b], v[i]);
          }
        } else {
          for (size_t i = 0; i < m; ++i)
            if (v[i] - slo <= span) s.collected.push_back(v[i]);
        }
      }
    });
    if (!ok) return false;
    for (search &s : ss) {
      if (s.done) continue;
      conclude(s);
      if (!s.done) plan(s, collect);
    }
  }
  for (size_t i = 0; i < ss.size(); ++i) (*out)[i] = ss[i].value;
  return true;
}

namespace {

// "WHAT of a, b and c (and N more names) reach 2^64-1UNIT: ...", the names whose figure is held.
std::string held_line(const std::map<std::string, name_summary> &names,
                      uint64_t name_summary::*figure, const char *what, const char *unit,
                      const char *held_one, const char *held_many) {
  std::vector<const std::string *> v;
  for (const auto &kv : names)
    if (held(kv.second.*figure)) v.push_back(&kv.first);
  if (v.empty()) return "";
  std::string o = std::string(what) + " of " + *v[0];
  const size_t shown = std::min<size_t>(v.size(), 3);
  for (size_t i = 1; i < shown; ++i) o += (i + 1 < shown || v.size() > 3 ? ", " : " and ") + *v[i];
  if (v.size() > 3) o += " and " + std::to_string(v.size() - 3) + " more names";
  return o + " reach 2^64-1" + unit + ": " + (v.size() == 1 ? held_one : held_many) +
         " held at 2^64-1, not exact";
}

}  // namespace

std::string held_names_line(const std::map<std::string, name_summary> &names) {
  return held_line(names, &name_summary::total, "the durations", " ns", "its total is",
                   "their totals are");
}

std::string held_calls_line(const std::map<std::string, name_summary> &names) {
  return held_line(names, &name_summary::calls, "the calls", "", "its count of calls is",
                   "their counts of calls are");
}

std::map<std::string, name_summary> summarize_names(
    std::unordered_map<std::string, name_durations> &names, const spill_store *store,
    std::vector<std::string> *unread, size_t collect) {
  std::map<std::string, name_summary> out;
  std::vector<uint64_t> at;
  for (auto &kv : names) {
    std::string key = kv.first;
    const size_t sep = key.find('\x1f');
    if (sep != std::string::npos) key[sep] = '/';
    name_summary &s = out[key];
    s.calls = kv.second.calls;
    s.total = kv.second.total;
    const uint64_t n = kv.second.count();
    if (n) {  // nearest ranks: the ceil(p * n / 100)-th smallest
      if (select_durations(kv.second, store, {(50 * n + 99) / 100, (99 * n + 99) / 100}, &at,
                           collect)) {
        s.p50 = at[0];
        s.p99 = at[1];
      } else {
        unread->push_back(key);
      }
    }
    std::vector<uint64_t>().swap(kv.second.durs);
    kv.second.runs.clear();
  }
  return out;
}

}  // namespace dftrace::analysis
