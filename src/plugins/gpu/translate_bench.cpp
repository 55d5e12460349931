// translate_bench.cpp: cost of the GPU component's two hot spots: the API-entry callback's
// ring store (on the application's thread, per CUDA call) and the translation of one
// activity record into a trace event (on the worker thread).
#include <benchmark/benchmark.h>

#include <unistd.h>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "dftrace/dftrace.h"
#include "plugins/gpu/activity_record.hpp"
#include "plugins/gpu/translate.hpp"

namespace {

using namespace dftrace::gpu;

// Tracing to a scratch file that is removed at exit: only the cost matters here.
void start_tracing() {
  static bool done = false;
  if (done) return;
  done = true;
  static std::string path = std::filesystem::temp_directory_path() /
                            ("dftrace-gpu-bench-" + std::to_string(::getpid()) + ".pfw.gz");
  dftrace_options_t o;
  dftrace_options_init(&o);
  o.enable = 1;
  o.output_file = path.c_str();
  dftrace_init(&o);
  std::atexit([] {
    dftrace_finalize();
    std::remove(path.c_str());
  });
}

// A kernel record as CUPTI hands it over (times and correlation id are set per iteration).
CUpti_ActivityKernel10 kernel_record(uint32_t grid_x, uint32_t block_x) {
  auto r = activity<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  r.name = "_Z10vector_addPKfS0_Pfi";
  r.gridX = grid_x;
  r.gridY = r.gridZ = 1;
  r.blockX = block_x;
  r.blockY = r.blockZ = 1;
  return r;
}

kinds kernels_only() {
  kinds k;
  k.kernel = true;
  return k;
}

// A translator of kernel records and its correlation ring, with tracing started first.
struct kernel_setup {
  bool started = (start_tracing(), true);
  correlation_ring ring;
  translator tr{&ring, nullptr, kernels_only()};
};

// Places the record 5 us long, 10 us after the previous one (t), and translates it.
template <typename Record>
inline void translate_next(translator &tr, Record &r, uint64_t &t) {
  r.start = t;
  r.end = t + 5000;
  t += 10000;
  benchmark::DoNotOptimize(tr.translate(reinterpret_cast<const CUpti_Activity *>(&r)));
}

void BM_ring_remember(benchmark::State &state) {
  correlation_ring ring;
  uint32_t id = 1;
  for (auto _ : state) {
    ring.remember(id++, 42);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_ring_remember);

void BM_translate_kernel(benchmark::State &state) {
  kernel_setup k;
  CUpti_ActivityKernel10 r = kernel_record(4096, 256);
  r.streamId = 7;
  uint64_t t = dftrace_now_ns();
  uint32_t id = 1;
  for (auto _ : state) {
    r.correlationId = id;
    k.ring.remember(id++, 7);
    translate_next(k.tr, r, t);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_translate_kernel);

// The same with device.kernel switched off: the translator's own cost, without the core's
// formatting and writing of the event.
void BM_translate_kernel_node_off(benchmark::State &state) {
  kernel_setup k;
  CUpti_ActivityKernel10 r = kernel_record(1, 1);
  k.tr.translate(reinterpret_cast<const CUpti_Activity *>(&r));  // creates the nodes
  dftrace_node_disable(dftrace_category("device"));
  uint64_t t = dftrace_now_ns();
  for (auto _ : state) translate_next(k.tr, r, t);
  dftrace_node_enable(dftrace_category("device"));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_translate_kernel_node_off);

void BM_translate_memcpy(benchmark::State &state) {
  start_tracing();
  kinds k;
  k.memcpy = true;
  translator tr(nullptr, nullptr, k);
  auto r = activity<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  r.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  r.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  r.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  r.bytes = 1 << 20;
  uint64_t t = dftrace_now_ns();
  for (auto _ : state) translate_next(tr, r, t);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_translate_memcpy);

}  // namespace

BENCHMARK_MAIN();
