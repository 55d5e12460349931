// trace_fd_bench.cpp: what opening the trace file for each write costs (the way a traced
// process writes once the program met EMFILE) against holding its descriptor for the run (the
// default), side by side: members of about 1 MiB appended through output_file both ways,
// alternating, in rounds; the median time of one write (wall and the thread's CPU) each way.
// Usage: trace_fd_bench DIR [MEMBERS=200] [BYTES=1048576] [ROUNDS=5]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "output/output_file.hpp"

using namespace dftrace::detail;
using dftrace::bench::median;
using dftrace::bench::thread_cpu_ns;

namespace {

struct per_write {
  double wall_us, cpu_us;
};

// One file written with `members` members of `member` bytes: the mean time of a write.
bool one_file(const std::string &path, bool held, const std::string &member, int members,
              per_write *out) {
  output_file f;
  f.plan(path, "");
  if (!held) f.open_per_write();
  if (!f.open(true)) return false;
  const double c0 = thread_cpu_ns();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < members; ++i)
    if (!f.write(member.data(), member.size())) return false;
  const double wall =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = (thread_cpu_ns() - c0) / 1e3;
  f.close();
  ::unlink(path.c_str());
  *out = {wall / members, cpu / members};
  return true;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [MEMBERS] [BYTES] [ROUNDS]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const int members = argc > 2 ? std::atoi(argv[2]) : 200;
  const size_t bytes = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : (1u << 20);
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 5;
  trace_fd_guarded(true);  // as in a process with libdftrace_io: the held file keeps its descriptor
  std::string member(bytes, '\0');
  std::mt19937_64 rng(42);
  for (char &c : member) c = static_cast<char>(rng());  // (what is written does not matter)
  std::vector<double> held_wall, held_cpu, open_wall, open_cpu;
  for (int r = 0; r < rounds; ++r) {
    for (bool held : {true, false}) {  // alternating, so that drift hits both alike
      per_write w;
      const std::string path = dir + "/trace_fd_bench." + std::to_string(getpid()) + ".pfw.gz";
      if (!one_file(path, held, member, members, &w)) {
        std::fprintf(stderr, "trace_fd_bench: writing %s failed\n", path.c_str());
        return 1;
      }
      (held ? held_wall : open_wall).push_back(w.wall_us);
      (held ? held_cpu : open_cpu).push_back(w.cpu_us);
    }
  }
  const double hw = median(held_wall), ow = median(open_wall);
  const double hc = median(held_cpu), oc = median(open_cpu);
  std::printf("%d rounds of %d members of %zu bytes in %s (medians of a write)\n", rounds, members,
              bytes, dir.c_str());
  std::printf("%-28s %12s %12s\n", "", "wall us", "cpu us");
  std::printf("%-28s %12.2f %12.2f\n", "held descriptor", hw, hc);
  std::printf("%-28s %12.2f %12.2f\n", "opened for each write", ow, oc);
  std::printf("%-28s %12.2f %12.2f\n", "difference", ow - hw, oc - hc);
  return 0;
}
