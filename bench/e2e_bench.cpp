// e2e_bench.cpp: the whole pipeline, end to end: application threads emit a typical
// training-loop mix, the writer compresses and writes it, finalize closes the file.
// Usage: e2e_bench EVENTS [THREADS] [OUTPUT_DIR]. Deflate implementation and level come from
// the configuration (DFTRACE_OUTPUT_COMPRESSOR, DFTRACE_OUTPUT_LEVEL). Prints one line.
#include <dftrace/dftrace.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dftrace/dftrace.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

using dftrace::ai;
using clk = std::chrono::steady_clock;

namespace {

// One training step: 2 iter events, 7 body events, ~ the mix a real loop writes.
void produce(long events) {
  long written = 0;
  long step = 0;
  const auto collate = ai.data.preprocess.derive("collate");
  while (written < events) {
    dftrace_iter_t it;
    dftrace_iter_begin(&it, ai.dataloader.fetch.handle(), 0, nullptr, nullptr,
                       DFTRACE_USE_NODE_STATE);
    for (int k = 0; k < 64 && written < events; ++k) {
      dftrace_iter_fetch(&it);
      dftrace_iter_body(&it);
      ai.update({{"step", step++}});
      { auto s = ai.data.item.scope({{"index", k}}); }
      { auto s = collate.scope(); }
      { auto s = ai.device.transfer.scope({{"bytes", 4194304}}); }
      { auto s = ai.compute.forward.scope(); }
      { auto s = ai.compute.backward.scope(); }
      { auto s = ai.comm.all_reduce.scope({{"bytes", 16777216}}); }
      { auto s = ai.compute.step.scope(); }
      written += 9;
    }
    dftrace_iter_end(&it);
  }
}

}  // namespace

int main(int argc, char **argv) {
  const long events = argc > 1 ? std::atol(argv[1]) : 1000000;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  const std::string dir = argc > 3 ? argv[3] : "/tmp";
  const std::string path = dir + "/e2e-" + std::to_string(getpid()) + ".pfw.gz";
  dftrace_options_t o;
  dftrace_options_init(&o);
  o.enable = 1;
  o.output_file = path.c_str();
  dftrace_init(&o);
  ai.update("epoch", 7);
  const auto t0 = clk::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) ts.emplace_back(produce, events / threads);
  for (auto &t : ts) t.join();
  const auto t1 = clk::now();
  const std::string status = dftrace_status();
  dftrace_finalize();
  const auto t2 = clk::now();
  struct stat st {};
  stat(path.c_str(), &st);
  const double produce_s = std::chrono::duration<double>(t1 - t0).count();
  const double fin_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
  const double total_s = std::chrono::duration<double>(t2 - t0).count();
  const unsigned long long n = dftrace_events_written();
  std::printf(
      "events=%llu dropped=%llu threads=%d produce=%.3fs finalize=%.1fms total=%.3fs "
      "rate=%.2fM/s bytes=%lld bytes/event=%.2f (%s)\n",
      n, static_cast<unsigned long long>(dftrace_events_dropped()), threads, produce_s, fin_ms,
      total_s, n / total_s / 1e6, static_cast<long long>(st.st_size),
      double(st.st_size) / double(n), status.substr(status.rfind("; ") + 2).c_str());
  if (!getenv("KEEP")) unlink(path.c_str());
  return 0;
}
