// bench_util.hpp: what the C++ benchmarks share: the calling thread's CPU time and the median.
#pragma once

#include <time.h>

#include <algorithm>
#include <vector>

namespace dftrace::bench {

// CPU time of the calling thread, in nanoseconds: on a shared machine, time spent descheduled
// is not the cost measured (the writer thread's compression runs elsewhere and is not counted).
inline double thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// The median of rounds (the middle one of an odd count, the upper middle of an even one).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace dftrace::bench
