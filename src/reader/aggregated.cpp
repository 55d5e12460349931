// aggregated.cpp: the calls behind an aggregated record, in dftrace's and DFTracer's forms.
#include "reader/aggregated.hpp"

#include <string>

namespace dftrace::detail {

bool is_counter_aggregate(const parsed_line &pl) { return pl.arg_value("dur_sum") != nullptr; }

namespace {

// k_sum / k for a plain integer argument k that is not 0 and divides k_sum exactly; 0 if none.
uint64_t calls_from_sums(const parsed_line &pl) {
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

}  // namespace

bool aggregated_calls(const parsed_line &pl, time_unit unit, uint64_t *calls, uint64_t *dur_ns) {
  uint64_t n = 0, sum = 0;
  const jvalue *d = pl.arg_value("dur_sum");
  if (const jvalue *c = pl.arg_value("dft_cnt")) {
    if (!value_u64(*c, &n)) return false;
    if (!d) {  // one duration for all of them
      const jvalue *one = pl.arg_value("dur");
      if (one && value_ns(*one, unit, &sum)) sum *= n;
    }
  } else if (d) {
    const jvalue *count = pl.arg_value("count");
    int64_t c = 0;
    if (pl.arg_value("count_sum") || !count || !value_i64(*count, &c) || c <= 0) {
      n = calls_from_sums(pl);
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

}  // namespace dftrace::detail
