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

// Whether a time total reached 2^64-1 ns: held there (add_ns), so not exact. A total of
// exactly 2^64-1 is indistinguishable from one held, and is listed with them.
inline bool held(uint64_t total) { return total == UINT64_MAX; }

}  // namespace dftrace::analysis
