// nested_ns.cpp: a real dftrace program for the exact-time tests: THREADS threads,
// each N parents of about 10 us (compute.step), each with a sub-microsecond child
// (compute.forward) that begins with it. Usage: nested_ns N [THREADS]; tracing is enabled by
// the environment (DFTRACE_ENABLE=1, DFTRACE_TIMER_PRECISION=ns).
#include <dftrace/dftrace.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <thread>
#include <vector>

namespace {

uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

int main(int argc, char **argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 500;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  dftrace_node_t *parent = dftrace_node_find("compute.step");
  dftrace_node_t *child = dftrace_node_find("compute.forward");
  if (!parent || !child) return 3;
  std::atomic<int> ready{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      ++ready;
      while (ready.load() < threads) {
      }
      for (int i = 0; i < n; ++i) {
        const uint64_t until = mono_ns() + 10000;
        dftrace_region_t p = dftrace_region_begin(parent);
        dftrace_region_t c = dftrace_region_begin(child);
        dftrace_region_end(c);
        while (mono_ns() < until) {
        }
        dftrace_region_end(p);
      }
    });
  }
  for (auto &t : pool) t.join();
  return 0;
}
