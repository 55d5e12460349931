// proc_stats_test.cpp: the /proc parsers on real snapshots (tests/data/proc) and on the live /proc.
#include "telemetry/proc_stats.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <vector>

#include "telemetry/nvml.hpp"

using namespace dftrace::detail::telemetry;

namespace {

const std::string k_snapshot = std::string(DFTRACE_SOURCE_DIR) + "/tests/data/proc";

double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace

TEST(TelemetryProc, ProcessSnapshot) {
  proc_reader r(k_snapshot);
  process_sample p;
  ASSERT_TRUE(r.process("4242", &p));
  EXPECT_TRUE(p.has_stat && p.has_status && p.has_io);
  EXPECT_EQ(p.user_ticks, 8u);  // fields 14 and 15 of its stat
  EXPECT_EQ(p.system_ticks, 26u);
  EXPECT_EQ(p.rss_bytes, 37016u * 1024);
  EXPECT_EQ(p.peak_rss_bytes, 37016u * 1024);
  EXPECT_EQ(p.threads, 2u);
  EXPECT_EQ(p.voluntary_switches, 20u);
  EXPECT_EQ(p.involuntary_switches, 94u);
  EXPECT_EQ(p.rchar, 1687583u);
  EXPECT_EQ(p.wchar, 3442u);
  EXPECT_EQ(p.read_bytes, 0u);
  EXPECT_EQ(p.write_bytes, 8192u);
  EXPECT_EQ(p.open_fds, 6u);  // the snapshot's fd folder, none subtracted
}

TEST(TelemetryProc, StatWithAnAwkwardCommand) {
  // A command may hold blanks and parentheses: fields count from the last ')'.
  process_sample p;
  ASSERT_TRUE(parse_process_stat(
      "77 (a) (b c) S 1 77 77 0 -1 4194304 10 0 0 0 123 45 0 0 20 0 1 0 5 1000 20 0", &p));
  EXPECT_EQ(p.user_ticks, 123u);
  EXPECT_EQ(p.system_ticks, 45u);
  EXPECT_FALSE(parse_process_stat("77 (cut", &p));
  EXPECT_FALSE(parse_process_stat("77 (x) S 1 2", &p));
}

TEST(TelemetryProc, NodeSnapshot) {
  proc_reader r(k_snapshot);
  cpu_times c;
  ASSERT_TRUE(r.cpu(&c));
  EXPECT_EQ(c.user, 1428276u);
  EXPECT_EQ(c.nice, 31209u);
  EXPECT_EQ(c.system, 319745u);
  EXPECT_EQ(c.idle, 593493u);
  EXPECT_EQ(c.iowait, 3501u);
  EXPECT_EQ(c.softirq, 1613u);
  EXPECT_EQ(c.steal, 1126u);
  memory_info m;
  ASSERT_TRUE(r.memory(&m));
  EXPECT_EQ(m.total_kb, 24684084u);
  EXPECT_EQ(m.available_kb, 21808284u);
  std::vector<device_bytes> net;
  ASSERT_TRUE(r.network(&net));
  ASSERT_EQ(net.size(), 3u);  // lo left out
  EXPECT_EQ(net[2].name, "eth0");
  EXPECT_GT(net[2].in, 0u);
  EXPECT_GT(net[2].out, 0u);
  std::vector<device_bytes> disks;
  ASSERT_TRUE(r.disks(&disks));
  ASSERT_EQ(disks.size(), 1u);  // vda; the loop devices and zram0 left out
  EXPECT_EQ(disks[0].name, "vda");
  EXPECT_EQ(disks[0].in, 23354794ull * 512);
  EXPECT_EQ(disks[0].out, 143877752ull * 512);
}

TEST(TelemetryProc, PartitionsAreNotCountedTwice) {
  std::vector<device_bytes> d;
  ASSERT_TRUE(
      parse_diskstats("   8       0 sda 10 0 100 0 20 0 200 0 0 0 0 0 0 0 0 0 0\n"
                      "   8       1 sda1 5 0 60 0 10 0 100 0 0 0 0 0 0 0 0 0 0\n"
                      " 259       0 nvme0n1 1 0 8 0 2 0 16 0 0 0 0\n"
                      " 259       1 nvme0n1p1 1 0 8 0 2 0 16 0 0 0 0\n"
                      " 253       0 dm-0 3 0 24 0 4 0 32 0 0 0 0\n"
                      "   7       0 loop0 1 0 2 0 0 0 0 0 0 0 0\n",
                      &d));
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].name, "sda");
  EXPECT_EQ(d[0].in, 100u * 512);
  EXPECT_EQ(d[0].out, 200u * 512);
  EXPECT_EQ(d[1].name, "nvme0n1");
  EXPECT_EQ(d[2].name, "dm-0");
}

TEST(TelemetryProc, Utilisation) {
  cpu_times a, b;
  a.user = 100, a.system = 50, a.idle = 850;
  b = a;
  cpu_utilisation u;
  EXPECT_FALSE(utilisation(a, b, &u));  // no time passed
  b.user += 30, b.system += 10, b.idle += 50, b.iowait += 10;
  ASSERT_TRUE(utilisation(a, b, &u));
  EXPECT_DOUBLE_EQ(u.user_pct, 30.0);
  EXPECT_DOUBLE_EQ(u.system_pct, 10.0);
  EXPECT_DOUBLE_EQ(u.idle_pct, 50.0);
  EXPECT_DOUBLE_EQ(u.iowait_pct, 10.0);
  EXPECT_DOUBLE_EQ(u.busy_pct, 40.0);
}

TEST(TelemetryProc, NotTheFileItSaysItIs) {
  process_sample p;
  cpu_times c;
  memory_info m;
  std::vector<device_bytes> d;
  EXPECT_FALSE(parse_process_status("nothing: here\n", &p));
  EXPECT_FALSE(parse_process_io("", &p));
  EXPECT_FALSE(parse_cpu_times("intr 1 2 3\n", &c));
  EXPECT_FALSE(parse_meminfo("MemTotal: 5 kB\n", &m));  // no MemAvailable
  EXPECT_FALSE(parse_net_dev("", &d));
  EXPECT_FALSE(parse_diskstats("garbage\n", &d));
  proc_reader r(k_snapshot + "/absent");
  EXPECT_FALSE(r.process("self", &p));
  EXPECT_FALSE(r.cpu(&c));
}

TEST(TelemetryProc, LiveProcessCpuRisesWithWork) {
  proc_reader r;
  process_sample before, after;
  ASSERT_TRUE(r.process("self", &before));
  const double t0 = cpu_seconds();
  volatile double x = 0;
  while (cpu_seconds() - t0 < 0.1) x = x + 1;  // 100 ms of this process's CPU time
  ASSERT_TRUE(r.process("self", &after));
  const long hz = sysconf(_SC_CLK_TCK);
  EXPECT_GE(after.user_ticks + after.system_ticks,
            before.user_ticks + before.system_ticks + static_cast<uint64_t>(hz) / 20);
}

TEST(TelemetryProc, LiveProcessMemoryRisesAfterAllocation) {
  proc_reader r;
  process_sample before, after;
  ASSERT_TRUE(r.process("self", &before));
  const size_t n = size_t{64} << 20;
  std::vector<char> block(n);
  std::memset(block.data(), 1, n);  // touched: resident
  ASSERT_TRUE(r.process("self", &after));
  EXPECT_GE(after.rss_bytes, before.rss_bytes + n / 2);
  EXPECT_GE(after.peak_rss_bytes, after.rss_bytes);
  EXPECT_GE(after.threads, 1u);
  EXPECT_GE(after.open_fds, 1u);
  EXPECT_EQ(block[n - 1], 1);
}

TEST(TelemetryProc, LiveNode) {
  proc_reader r;
  cpu_times c;
  memory_info m;
  std::vector<device_bytes> net;
  ASSERT_TRUE(r.cpu(&c));
  ASSERT_TRUE(r.memory(&m));
  EXPECT_GT(c.total(), 0u);
  EXPECT_GT(m.total_kb, 0u);
  EXPECT_LE(m.available_kb, m.total_kb);
  EXPECT_TRUE(r.network(&net));
}

TEST(TelemetryNvml, AbsentLibraryIsSaid) {
  nvml_probe p;
  EXPECT_FALSE(p.open("libdftrace-no-such-nvml.so.1"));
  EXPECT_FALSE(p.is_open());
  EXPECT_NE(p.why().find("could not be loaded"), std::string::npos) << p.why();
  std::vector<gpu_sample> s;
  EXPECT_FALSE(p.sample(&s));
}

#ifdef DFTRACE_NVML_STUB
// A stand-in library with NVML's entry points (nvml_stub.c: two devices, fixed readings): the
// probe's loading and reading path, on a machine without NVIDIA's library.
TEST(TelemetryNvml, ReadsEveryDeviceOfALoadedLibrary) {
  nvml_probe p;
  ASSERT_TRUE(p.open(DFTRACE_NVML_STUB)) << p.why();
  EXPECT_EQ(p.devices(), 2u);
  std::vector<gpu_sample> s;
  ASSERT_TRUE(p.sample(&s));
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[1].index, 1u);
  EXPECT_EQ(s[1].util_pct, 71u);
  EXPECT_EQ(s[1].memory_util_pct, 12u);
  EXPECT_EQ(s[1].memory_total_bytes, 80ull << 30);
  EXPECT_EQ(s[1].memory_used_bytes, 3ull << 30);
  p.close();
  EXPECT_FALSE(p.is_open());
}
#endif
