// held_sum.hpp: sums of byte counts and of durations that are held at 2^64-1 instead of
// wrapping past it, and the test of a figure held there.
#pragma once

#include <cstdint>

namespace dftrace::analysis {

// a + b into *sum, held at UINT64_MAX when it would pass it; false then.
inline bool add_bytes(uint64_t *sum, uint64_t b) {
  if (*sum > UINT64_MAX - b) {
    *sum = UINT64_MAX;
    return false;
  }
  *sum += b;
  return true;
}

// A sum of durations in ns: held as add_bytes holds bytes.
inline bool add_ns(uint64_t *sum, uint64_t ns) { return add_bytes(sum, ns); }

// A count of calls or events (an aggregated record's dft_cnt may be any uint64): held as
// add_bytes holds bytes.
inline bool add_count(uint64_t *sum, uint64_t n) { return add_bytes(sum, n); }

// One more call or event: a count held at 2^64-1 by add_count stays there (never wraps to 0).
inline void count_one(uint64_t *n) { *n += *n != UINT64_MAX; }

// Whether a total (time, bytes or calls) reached 2^64-1: held there (add_ns, add_bytes,
// add_count), so not exact. A total of
// exactly 2^64-1 is indistinguishable from one held, and is listed with them.
inline bool held(uint64_t total) { return total == UINT64_MAX; }

}  // namespace dftrace::analysis
