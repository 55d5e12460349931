// clock_ab.cpp: the event path's cost with timer.source tsc and monotonic, measured in
// alternating rounds of one process (the VM's speed drifts, so only same-run comparisons
// mean much). Per round: init with the source, 300,000 warm-up regions, then each case; thread
// CPU time per region. Where the TSC can not be used, the library says so and "tsc" runs on
// CLOCK_MONOTONIC. Usage: clock_ab [ROUNDS] [N]
#include <dftrace/dftrace.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <dftrace/dftrace.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench_util.hpp"

namespace {

using dftrace::bench::median;
using dftrace::bench::thread_cpu_ns;

struct bench_case {
  const char *name;
  std::function<void(int)> run;  // n regions (events)
};

}  // namespace

int main(int argc, char **argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 6;
  const int n = argc > 2 ? std::atoi(argv[2]) : 400000;
  setenv("DFTRACE_OUTPUT_ON_FULL", "drop", 1);  // the calling thread's own cost
  const std::string path = "/tmp/dftrace-clock-ab-" + std::to_string(getpid()) + ".pfw.gz";
  dftrace_node_t *plain = dftrace_node_find("compute.forward");
  std::vector<bench_case> cases = {
      {"region, no arguments",
       [&](int k) {
         for (int i = 0; i < k; ++i) dftrace_region_end(dftrace_region_begin(plain));
       }},
      {"region, two per-use arguments",
       [&](int k) {
         for (int i = 0; i < k; ++i) {
           const dftrace_arg_t a[] = {DFTRACE_ARG_I("x", i), DFTRACE_ARG_I("y", 7)};
           dftrace_region_end(dftrace_region_begin_ex(plain, DFTRACE_USE_NODE_STATE, a, 2));
         }
       }},
      {"node region, inherited epoch/step",
       [&](int k) {
         dftrace::ai.update("epoch", 3).update("step", 1200);
         for (int i = 0; i < k; ++i) {
           auto s = dftrace::ai.compute.forward.scope();
         }
         dftrace::ai.remove("epoch").remove("step");
       }},
      {"iter item (2 events), per event",
       [&](int k) {
         dftrace_iter_t it;
         dftrace_iter_begin(&it, dftrace_node_find("dataloader.fetch"), 0, nullptr, nullptr,
                            DFTRACE_USE_NODE_STATE);
         for (int i = 0; i < k / 2; ++i) {
           dftrace_iter_fetch(&it);
           dftrace_iter_body(&it);
         }
         dftrace_iter_end(&it);
       }},
  };
  const char *sources[] = {"tsc", "monotonic"};
  std::vector<std::vector<double>> ns(cases.size() * 2);
  for (int r = 0; r < rounds; ++r) {
    for (int s = 0; s < 2; ++s) {
      setenv("DFTRACE_TIMER_SOURCE", sources[s], 1);
      dftrace_options_t o;
      dftrace_options_init(&o);
      o.enable = 1;
      o.output_file = path.c_str();
      if (dftrace_init(&o) != DFTRACE_OK) return 1;
      cases[0].run(300000);  // warm-up
      for (size_t c = 0; c < cases.size(); ++c) {
        const double t0 = thread_cpu_ns();
        cases[c].run(n);
        ns[c * 2 + s].push_back((thread_cpu_ns() - t0) / n);
      }
      dftrace_finalize();
      unlink(path.c_str());
    }
  }
  std::printf("%d rounds x %d events, alternating; thread CPU ns per event (median, min)\n", rounds,
              n);
  std::printf("%-36s %18s %18s %8s\n", "case", sources[0], sources[1], "ratio");
  for (size_t c = 0; c < cases.size(); ++c) {
    const double a = median(ns[c * 2]), b = median(ns[c * 2 + 1]);
    const double amin = *std::min_element(ns[c * 2].begin(), ns[c * 2].end());
    const double bmin = *std::min_element(ns[c * 2 + 1].begin(), ns[c * 2 + 1].end());
    std::printf("%-36s %8.1f (%6.1f) %8.1f (%6.1f) %8.2f\n", cases[c].name, a, amin, b, bmin,
                a / b);
  }
  return 0;
}
