// mpi_wrapper_bench.cpp: the cost libdftrace_mpi adds to an MPI call, measured in one run:
// one million tiny MPI_Allreduce on MPI_COMM_SELF straight to PMPI (no wrapper), through the
// wrapper while recording, through the wrapper with comm.all_reduce switched off, and a bare
// region around PMPI (what one event costs the core, whoever records it).
// Usage: bench_mpi_wrapper [calls] [trace file]   (single process; mpirun -np 1 also works)
#include <mpi.h>

#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "dftrace/dftrace.h"

namespace {

using dftrace::bench::median;
using dftrace::bench::thread_cpu_ns;

// Nanoseconds of this thread's CPU time per call for `n` calls of `fn`.
template <typename Fn>
double per_call(long n, Fn fn) {
  const double t0 = thread_cpu_ns();
  for (long i = 0; i < n; ++i) fn();
  return (thread_cpu_ns() - t0) / static_cast<double>(n);
}

}  // namespace

int main(int argc, char **argv) {
  const long calls = argc > 1 ? std::atol(argv[1]) : 1000000;
  const std::string path =
      argc > 2 ? argv[2] : "dftrace-bench-mpi-" + std::to_string(getpid()) + ".pfw.gz";
  dftrace_options_t o;
  dftrace_options_init(&o);
  o.enable = 1;
  o.output_file = path.c_str();
  if (dftrace_init(&o) != DFTRACE_OK) {
    std::fprintf(stderr, "dftrace could not start: %s\n", dftrace_status());
    return 1;
  }
  MPI_Init(&argc, &argv);
  dftrace_node_t *node = dftrace_node_find("comm.all_reduce");
  int in = 1, out = 0;
  auto direct = [&] { PMPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF); };
  auto wrapped = [&] { MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF); };
  // What one event costs the core by itself: a bare region (no arguments) around PMPI.
  dftrace_node_t *bare_node = dftrace_node_child(dftrace_category("bench"), "bare");
  auto bare = [&] {
    const dftrace_region_t r = dftrace_region_begin(bare_node);
    PMPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
    dftrace_region_end(r);
  };

  // Rounds interleave the three variants so that drift of the machine hits them alike.
  const int rounds = 5;
  const long per_round = std::max(1L, calls / rounds);
  std::vector<double> t_direct, t_traced, t_off, t_bare;
  per_call(per_round / 10 + 1, direct);  // warm-up
  per_call(per_round / 10 + 1, wrapped);
  for (int r = 0; r < rounds; ++r) {
    t_direct.push_back(per_call(per_round, direct));
    dftrace_node_enable(node);
    t_traced.push_back(per_call(per_round, wrapped));
    dftrace_node_disable(node);
    t_off.push_back(per_call(per_round, wrapped));
    t_bare.push_back(per_call(per_round, bare));
  }
  dftrace_node_enable(node);
  MPI_Finalize();
  const uint64_t written = dftrace_events_written(), dropped = dftrace_events_dropped();
  dftrace_finalize();
  const double d = median(t_direct), t = median(t_traced), f = median(t_off), b = median(t_bare);
  std::printf(
      "MPI_Allreduce(1 int, MPI_COMM_SELF), %ld calls per variant, median of %d rounds, thread CPU "
      "time\n",
      per_round * rounds, rounds);
  std::printf("  PMPI (no wrapper)            %8.1f ns/call\n", d);
  std::printf("  wrapper, recording           %8.1f ns/call   overhead %+.1f ns\n", t, t - d);
  std::printf("  wrapper, comm.all_reduce off %8.1f ns/call   overhead %+.1f ns\n", f, f - d);
  std::printf(
      "  bare region around PMPI      %8.1f ns/call   overhead %+.1f ns (the core's cost of one "
      "event)\n",
      b, b - d);
  std::printf("  wrapper's own share          %8.1f ns/call   (recording minus bare region)\n",
              t - b);
  std::printf("  events written %llu, dropped %llu (trace %s)\n",
              static_cast<unsigned long long>(written), static_cast<unsigned long long>(dropped),
              path.c_str());
  if (argc <= 2) std::remove(path.c_str());
  return 0;
}
