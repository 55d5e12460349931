// aggregation_size_bench.cpp: what a long aggregated run writes. EVENTS complete events of NAMES
// names (per-use "size" argument on every event), spread evenly over SECONDS seconds (batches
// of 1,000 at their scheduled times), every node aggregated in 1 s intervals (the defaults of
// DFTRACE_AGGREGATION=1 unless the environment says otherwise). Prints the events written, the
// time taken, the file's size and the produce rate within the batches.
// Usage: aggregation_size_bench [EVENTS] [NAMES] [SECONDS] [OUTPUT_DIR]; KEEP=1 keeps the file.
#include <dftrace/dftrace.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

using clk = std::chrono::steady_clock;

int main(int argc, char **argv) {
  const long events = argc > 1 ? std::atol(argv[1]) : 10000000;
  const int names = argc > 2 ? std::atoi(argv[2]) : 20;
  const double seconds = argc > 3 ? std::atof(argv[3]) : 60;
  const std::string dir = argc > 4 ? argv[4] : "/tmp";
  if (events <= 0 || names <= 0 || seconds <= 0) return 2;
  const std::string path = dir + "/aggsize-" + std::to_string(getpid()) + ".pfw.gz";
  setenv("DFTRACE_AGGREGATION", "1", 0);  // the environment may choose otherwise
  dftrace_options_t o;
  dftrace_options_init(&o);
  o.enable = 1;
  o.output_file = path.c_str();
  if (dftrace_init(&o) != 0) return 1;
  std::vector<dftrace_node_t *> nodes;
  for (int i = 0; i < names; ++i)
    nodes.push_back(
        dftrace_node_child(dftrace_node_find("compute"), ("name" + std::to_string(i)).c_str()));
  const long batch = 1000, batches = (events + batch - 1) / batch;
  const auto t0 = clk::now();
  double busy = 0;  // seconds spent producing (not sleeping)
  long done = 0;
  for (long b = 0; b < batches; ++b) {
    std::this_thread::sleep_until(
        t0 + std::chrono::duration_cast<clk::duration>(
                 std::chrono::duration<double>(seconds * double(b) / double(batches))));
    const auto s = clk::now();
    for (long k = 0; k < batch && done < events; ++k, ++done) {
      dftrace_arg_t a = DFTRACE_ARG_I("size", 4096 + done % 5);
      dftrace_region_t r = dftrace_region_begin_ex(nodes[done % names], -1, &a, 1);
      dftrace_region_end(r);
    }
    busy += std::chrono::duration<double>(clk::now() - s).count();
  }
  const auto t1 = clk::now();
  dftrace_finalize();
  struct stat st {};
  stat(path.c_str(), &st);
  std::printf(
      "events=%llu dropped=%llu names=%d span=%.1fs produce=%.1f ns/event bytes=%lld "
      "bytes/event=%.5f\n",
      static_cast<unsigned long long>(dftrace_events_written()),
      static_cast<unsigned long long>(dftrace_events_dropped()), names,
      std::chrono::duration<double>(t1 - t0).count(), busy * 1e9 / double(done),
      static_cast<long long>(st.st_size), double(st.st_size) / double(events));
  if (!getenv("KEEP")) unlink(path.c_str());
  return 0;
}
