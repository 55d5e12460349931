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
// read for a declaration. Microseconds when there is none (DFTracer's traces,
// older dftrace traces) or the start cannot be read (the caller reports damage as it reads).
time_unit header_time_unit(const trace_file &f);

// A ts or dur value in nanoseconds: integer nanoseconds as they are, microseconds times 1000
// plus up to three fraction digits (further digits are dropped). False when the value is no
// such number or does not fit in 64 bits.
bool value_ns(const jvalue &v, time_unit u, uint64_t *ns);

// Nanoseconds in a unit (truncated) and back, saturating at the 64-bit limits.
inline uint64_t ns_to_unit(uint64_t ns, time_unit u) { return u == time_unit::ns ? ns : ns / 1000; }
inline uint64_t unit_to_ns(uint64_t v, time_unit u) {
  if (u == time_unit::ns) return v;
  return v > UINT64_MAX / 1000 ? UINT64_MAX : v * 1000;
}

}  // namespace dftrace::detail
