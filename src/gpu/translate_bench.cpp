// translate_bench.cpp: cost of the GPU component's two hot spots: the API-entry callback's
// ring store (on the application's thread, per CUDA call) and the translation of one
// activity record into a trace event (on the worker thread).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <cstring>
#include <string>
#include <unistd.h>

#include "dftrace/dftrace.h"
#include "gpu/translate.hpp"

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
  start_tracing();
  correlation_ring ring;
  kinds k;
  k.kernel = true;
  translator tr(&ring, nullptr, k);
  CUpti_ActivityKernel10 r;
  std::memset(&r, 0, sizeof r);
  r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  r.name = "_Z10vector_addPKfS0_Pfi";
  r.gridX = 4096;
  r.gridY = r.gridZ = 1;
  r.blockX = 256;
  r.blockY = r.blockZ = 1;
  r.streamId = 7;
  uint64_t t = dftrace_now_ns();
  uint32_t id = 1;
  for (auto _ : state) {
    r.start = t;
    r.end = t + 5000;
    r.correlationId = id;
    ring.remember(id++, 7);
    t += 10000;
    benchmark::DoNotOptimize(tr.translate(reinterpret_cast<const CUpti_Activity *>(&r)));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_translate_kernel);

// The same with device.kernel switched off: the translator's own cost, without the core's
// formatting and writing of the event.
void BM_translate_kernel_node_off(benchmark::State &state) {
  start_tracing();
  dftrace_node_t *node = dftrace_node_find("device.kernel");
  correlation_ring ring;
  kinds k;
  k.kernel = true;
  translator tr(&ring, nullptr, k);
  CUpti_ActivityKernel10 r;
  std::memset(&r, 0, sizeof r);
  r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  r.name = "_Z10vector_addPKfS0_Pfi";
  r.gridX = r.gridY = r.gridZ = r.blockX = r.blockY = r.blockZ = 1;
  tr.translate(reinterpret_cast<const CUpti_Activity *>(&r));  // creates the nodes
  dftrace_node_disable(dftrace_category("device"));
  uint64_t t = dftrace_now_ns();
  for (auto _ : state) {
    r.start = t;
    r.end = t + 5000;
    t += 10000;
    benchmark::DoNotOptimize(tr.translate(reinterpret_cast<const CUpti_Activity *>(&r)));
  }
  dftrace_node_enable(dftrace_category("device"));
  (void)node;
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_translate_kernel_node_off);

void BM_translate_memcpy(benchmark::State &state) {
  start_tracing();
  kinds k;
  k.memcpy = true;
  translator tr(nullptr, nullptr, k);
  CUpti_ActivityMemcpy6 r;
  std::memset(&r, 0, sizeof r);
  r.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  r.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  r.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  r.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  r.bytes = 1 << 20;
  uint64_t t = dftrace_now_ns();
  for (auto _ : state) {
    r.start = t;
    r.end = t + 5000;
    t += 10000;
    benchmark::DoNotOptimize(tr.translate(reinterpret_cast<const CUpti_Activity *>(&r)));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_translate_memcpy);

}  // namespace

BENCHMARK_MAIN();
