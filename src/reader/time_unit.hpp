// time_unit.hpp: the unit of a trace's `ts` and `dur` values, and those values in nanoseconds.
#pragma once

#include <cstdint>

#include "reader/line_parser.hpp"
#include "reader/trace_reader.hpp"

namespace dftrace::detail {

// A trace writes `ts` and `dur` as integers of one unit, declared by its `time_metric`
// (docs/format.md section 2.2): microseconds unless it says "ns". Older dftrace traces at ns
// precision wrote microseconds with a three-digit fraction; they are microseconds too.
enum class time_unit : uint8_t { us, ns };

// True when the line declares the unit (a PR line {"name":"time_metric","value":..}, or the
// start event's args.time_metric; "ns"/"NS" and "us"/"US"); sets *u then.
bool declares_time_unit(const parsed_line &pl, time_unit *u);

// The unit a file's header declares: its first lines (up to 512 lines or 1 MiB of text) are
// read for a declaration; a compressed start is inflated only as far as those lines reach.
// Microseconds when there is none (DFTracer's traces, older dftrace traces) or the start
// cannot be read (the caller reports damage as it reads). *scanned_bytes (tests): the bytes
// of text looked at.
time_unit header_time_unit(const trace_file &f, size_t *scanned_bytes = nullptr);

// A ts or dur value in nanoseconds: integer nanoseconds as they are, microseconds times 1000
// plus up to three fraction digits (further digits are dropped). False when the value is no
// such number or does not fit in 64 bits.
[[gnu::always_inline]] inline bool value_ns(const jvalue &v, time_unit u, uint64_t *ns) {
  if (v.type != jtype::number && v.type != jtype::string) return false;
  std::string_view t = v.text;
  uint64_t whole = 0;
  size_t i = leading_digits(t, &whole);
  if (i == 0 || i == std::string_view::npos) return false;
  uint64_t frac = 0;
  if (i < t.size()) {
    if (t[i] != '.') return false;
    int digits = 0;
    for (++i; i < t.size(); ++i) {
      if (t[i] < '0' || t[i] > '9') return false;
      if (digits < 3) frac = frac * 10 + static_cast<uint64_t>(t[i] - '0');
      ++digits;
    }
    for (; digits < 3; ++digits) frac *= 10;
  }
  if (u == time_unit::ns) {
    *ns = whole;  // a fraction of a nanosecond is dropped
    return true;
  }
  return !__builtin_mul_overflow(whole, uint64_t{1000}, ns) &&
         !__builtin_add_overflow(*ns, frac, ns);
}

// Nanoseconds in a unit (truncated) and back, saturating at the 64-bit limits.
inline uint64_t ns_to_unit(uint64_t ns, time_unit u) { return u == time_unit::ns ? ns : ns / 1000; }
inline uint64_t unit_to_ns(uint64_t v, time_unit u) {
  if (u == time_unit::ns) return v;
  return v > UINT64_MAX / 1000 ? UINT64_MAX : v * 1000;
}

}  // namespace dftrace::detail
