// core_bench.cpp: calling-thread cost of the event path (Google Benchmark).
// The writer is configured to drop rather than block when it falls behind, so that these
// figures are the application thread's own cost; bench/e2e_bench measures the whole pipeline.
#include <benchmark/benchmark.h>
#include <dftrace/dftrace.h>
#include <stdlib.h>
#include <unistd.h>
#include <dftrace/dftrace.hpp>

#include <string>

namespace {

struct tracing {
  tracing() {
    setenv("DFTRACE_OUTPUT_ON_FULL", "drop", 1);
    dftrace_options_t o;
    dftrace_options_init(&o);
    o.enable = 1;
    static std::string path = "/tmp/dftrace-core-bench-" + std::to_string(getpid()) + ".pfw.gz";
    o.output_file = path.c_str();
    dftrace_init(&o);
  }
  ~tracing() {
    dftrace_finalize();
    if (const char *p = dftrace_output_path()) unlink(p);
  }
};
tracing g_tracing;

void BM_region_disabled_node(benchmark::State &state) {
  // The scope stays local, as in real code (so the compiler sees the disabled path end the
  // region with nothing to do); ClobberMemory keeps the flag read in every iteration.
  static const dftrace::node n{"bench.disabled"};
  n.disable();
  for (auto _ : state) {
    auto s = n.scope();
    benchmark::ClobberMemory();
  }
  n.enable();
}
BENCHMARK(BM_region_disabled_node);

void BM_region_disabled_handle(benchmark::State &state) {
  // The C face on a node handle held by the caller: DFTRACE_REGION_BEGIN's inline check.
  dftrace_node_t *h = dftrace_node_find("compute.step");
  dftrace_node_disable(h);
  for (auto _ : state) {
    dftrace_region_t r = DFTRACE_REGION_BEGIN(h);
    benchmark::ClobberMemory();
    if (r) dftrace_region_end(r);
  }
  dftrace_node_enable(h);
}
BENCHMARK(BM_region_disabled_handle);

void BM_loop_yardstick(benchmark::State &state) {
  // The same loop without tracing: what the loop and ClobberMemory cost by themselves.
  for (auto _ : state) benchmark::ClobberMemory();
}
BENCHMARK(BM_loop_yardstick);

void BM_region_enabled_no_args(benchmark::State &state) {
  static const dftrace::node n{"bench.plain"};
  for (auto _ : state) {
    auto s = n.scope();
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_region_enabled_no_args)->Threads(1)->Threads(2)->UseRealTime();

void BM_region_enabled_two_args(benchmark::State &state) {
  static const dftrace::node n{"bench.args"};
  int64_t i = 0;
  for (auto _ : state) {
    auto s = n.scope({{"bytes", i++}, {"layer", 3}});
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_region_enabled_two_args);

void BM_node_region_inherited_args(benchmark::State &state) {
  // A tree node carrying epoch and step from update() on the root.
  dftrace::ai.update("epoch", 3).update("step", 1200);
  for (auto _ : state) {
    auto s = dftrace::ai.compute.forward.scope();
    benchmark::DoNotOptimize(s);
  }
  dftrace::ai.remove("epoch").remove("step");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_node_region_inherited_args);

void BM_iter_item(benchmark::State &state) {
  // One item of an iter loop: a ".iter" and a ".block" event.
  dftrace_iter_t it;
  dftrace_iter_begin(&it, dftrace_node_find("dataloader.fetch"), 0, nullptr, nullptr,
                     DFTRACE_USE_NODE_STATE);
  for (auto _ : state) {
    dftrace_iter_fetch(&it);
    dftrace_iter_body(&it);
  }
  dftrace_iter_end(&it);
  state.SetItemsProcessed(state.iterations() * 2);
}
BENCHMARK(BM_iter_item);

void BM_update_two_args_10_descendants(benchmark::State &state) {
  // A node with 10 descendants (its own subtree), updated with two arguments.
  static dftrace_node_t *n = [] {
    dftrace_node_t *root = dftrace_category("bench_update");
    for (int i = 0; i < 10; ++i) dftrace_node_child(root, ("child" + std::to_string(i)).c_str());
    return root;
  }();
  int64_t step = 0;
  for (auto _ : state) {
    const dftrace_arg_t args[] = {DFTRACE_ARG_I("epoch", step / 100), DFTRACE_ARG_I("step", step)};
    dftrace_node_update_args(n, args, 2);
    ++step;
  }
}
BENCHMARK(BM_update_two_args_10_descendants);

void BM_clock_read(benchmark::State &state) {
  for (auto _ : state) benchmark::DoNotOptimize(dftrace_now_ns());
}
BENCHMARK(BM_clock_read);

}  // namespace

BENCHMARK_MAIN();
