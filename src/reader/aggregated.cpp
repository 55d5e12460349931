// aggregated.cpp: the calls behind an aggregated record, in dftrace's and DFTracer's forms.
#include "reader/aggregated.hpp"

#include <cstring>
#include <string>

namespace dftrace::detail {

bool is_counter_aggregate(const parsed_line &pl) { return pl.arg_value("dur_sum") != nullptr; }

namespace {

// k_sum / k for a plain integer argument k that is not 0 and divides k_sum exactly; 0 if none.
uint64_t calls_from_sums_general(const parsed_line &pl) {
  std::string sum_key;
  for (int i = 0; i < pl.nargs; ++i) {
    const parsed_line::arg &a = pl.args_kv[i];
    int64_t v = 0, sum = 0;
    if (!value_is_integer(a.value) || !value_i64(a.value, &v) || v == 0) continue;
    sum_key.assign(a.key).append("_sum");
    const jvalue *s = pl.arg_value(sum_key);
    if (!s || !value_is_integer(*s) || !value_i64(*s, &sum)) continue;
    if (sum % v == 0 && sum / v > 0) return static_cast<uint64_t>(sum / v);
  }
  return 0;
}

// The arguments a record's calls are read from, the first of each key, found in one pass over
// a line whose keys hold no escapes (so a key as written is the key as meant), and the
// arguments whose keys end in "_sum", in order.
struct agg_args {
  const jvalue *dur_sum = nullptr, *dft_cnt = nullptr, *dur = nullptr, *count = nullptr,
               *count_sum = nullptr;
  int sums[parsed_line::k_max_args];
  int nsums = 0;
  uint64_t sum_sizes = 0;  // bit k: a "_sum" key of k bytes (k < 64)
};

inline bool key_is(std::string_view k, const char *want, size_t n) {
  return k.size() == n && std::memcmp(k.data(), want, n) == 0;
}

void find_agg_args(const parsed_line &pl, agg_args &a) {
  auto first = [](const jvalue *&slot, const jvalue &v) {
    if (!slot) slot = &v;
  };
  for (int i = 0; i < pl.nargs; ++i) {
    const std::string_view k = pl.args_kv[i].key;
    const jvalue &v = pl.args_kv[i].value;
    switch (k.size()) {
      case 3:
        if (key_is(k, "dur", 3)) first(a.dur, v);
        break;
      case 5:
        if (key_is(k, "count", 5)) first(a.count, v);
        break;
      case 7:
        if (key_is(k, "dur_sum", 7)) first(a.dur_sum, v);
        if (key_is(k, "dft_cnt", 7)) first(a.dft_cnt, v);
        break;
      case 9:
        if (key_is(k, "count_sum", 9)) first(a.count_sum, v);
        break;
      default: break;
    }
    if (k.size() >= 4 && std::memcmp(k.data() + k.size() - 4, "_sum", 4) == 0) {
      a.sums[a.nsums++] = i;
      if (k.size() < 64) a.sum_sizes |= uint64_t{1} << k.size();
    }
  }
}

// calls_from_sums_general for a line without escapes: the "_sum" arguments come from a's list
// (the first of a key first, as arg_value finds it), without building each key, and an
// argument's value is read only when its "_sum" is there.
uint64_t calls_from_sums(const parsed_line &pl, const agg_args &a) {
  for (int i = 0; i < pl.nargs; ++i) {
    const parsed_line::arg &k = pl.args_kv[i];
    const size_t n = k.key.size();
    if (n + 4 < 64 && !(a.sum_sizes >> (n + 4) & 1)) continue;  // no "_sum" key that long
    const jvalue *s = nullptr;
    for (int j = 0; j < a.nsums && !s; ++j) {
      const std::string_view sk = pl.args_kv[a.sums[j]].key;
      if (sk.size() == n + 4 && std::memcmp(sk.data(), k.key.data(), n) == 0)
        s = &pl.args_kv[a.sums[j]].value;
    }
    int64_t v = 0, sum = 0;
    if (!s || !value_is_integer(k.value) || !value_i64(k.value, &v) || v == 0) continue;
    if (!value_is_integer(*s) || !value_i64(*s, &sum)) continue;
    if (sum % v == 0 && sum / v > 0) return static_cast<uint64_t>(sum / v);
  }
  return 0;
}

// The rule of aggregated_calls (aggregated.hpp) over the arguments it reads.
template <typename FromSums>
bool calls_of(const jvalue *d, const jvalue *cnt, const jvalue *one, const jvalue *count,
              bool has_count_sum, FromSums &&from_sums, time_unit unit, uint64_t *calls,
              uint64_t *dur_ns) {
  uint64_t n = 0, sum = 0;
  if (cnt) {
    if (!value_u64(*cnt, &n)) return false;
    if (!d) {  // one duration for all of them
      // held at 2^64-1 ns when it passes it, as the analysis holds sums of durations
      if (one && value_ns(*one, unit, &sum) && __builtin_mul_overflow(sum, n, &sum))
        sum = UINT64_MAX;
    }
  } else if (d) {
    int64_t c = 0;
    if (has_count_sum || !count || !value_i64(*count, &c) || c <= 0) {
      n = from_sums();
      if (!n) n = 1;
    } else {
      n = static_cast<uint64_t>(c);
    }
  } else {
    return false;
  }
  if (d && !value_ns(*d, unit, &sum)) sum = 0;
  *calls = n;
  *dur_ns = sum;
  return true;
}

}  // namespace

bool aggregated_calls_general(const parsed_line &pl, time_unit unit, uint64_t *calls,
                              uint64_t *dur_ns) {
  return calls_of(
      pl.arg_value("dur_sum"), pl.arg_value("dft_cnt"), pl.arg_value("dur"), pl.arg_value("count"),
      pl.arg_value("count_sum") != nullptr, [&pl] { return calls_from_sums_general(pl); }, unit,
      calls, dur_ns);
}

bool aggregated_calls(const parsed_line &pl, time_unit unit, uint64_t *calls, uint64_t *dur_ns) {
  if (!pl.no_escapes) return aggregated_calls_general(pl, unit, calls, dur_ns);
  agg_args a;
  find_agg_args(pl, a);
  return calls_of(
      a.dur_sum, a.dft_cnt, a.dur, a.count, a.count_sum != nullptr,
      [&pl, &a] { return calls_from_sums(pl, a); }, unit, calls, dur_ns);
}

}  // namespace dftrace::detail
