// aggregated.hpp: what an aggregated record stands for (the calls it folds and their time).
#pragma once

#include <cstdint>

#include "reader/line_parser.hpp"
#include "reader/time_unit.hpp"

namespace dftrace::detail {

// For a counter line ("ph":"C"): whether it is DFTracer 2.0.2's form of an aggregated record,
// whose args hold dur_sum (with dur_min and dur_max; docs/format.md section 4). dftrace's own
// counters never hold a series of that name.
bool is_counter_aggregate(const parsed_line &pl);

// For an aggregated record ("ph":"A" or 3, or DFTracer 2.0.2's counter form): *calls, the calls
// it folds, and *dur_ns, the sum of their durations in nanoseconds. False when the record says
// neither (an "A" record without dft_cnt).
//  - "A": dft_cnt calls; dur_sum, or, without it, dur times dft_cnt (held at 2^64-1 when the
//    product passes it).
//  - DFTracer 2.0.2: `count` is the call count, unless a call's own argument named `count` took
//    its place (pread, read, write: then the args also hold count_sum). 2.0.2 folds only calls
//    with equal arguments, so then the count is count_sum / count, or, when count is 0,
//    k_sum / k for another argument k that is not 0; 1 when no argument tells.
//  A line without escapes (parsed_line::no_escapes) has its arguments found in one pass; any
//  other, by key as meant (aggregated_calls_general, which tests compare with it).
bool aggregated_calls(const parsed_line &pl, time_unit unit, uint64_t *calls, uint64_t *dur_ns);
bool aggregated_calls_general(const parsed_line &pl, time_unit unit, uint64_t *calls,
                              uint64_t *dur_ns);

}  // namespace dftrace::detail
