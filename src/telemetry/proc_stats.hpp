// proc_stats.hpp: what Linux's /proc says about this process and this node, as plain structs.
// Parsers of each file's text (tested on snapshots in tests/data/proc) and readers of a /proc
// root (the live "/proc" or a snapshot folder). Knows nothing of the trace or its writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dftrace::detail::telemetry {

// One process (/proc/<pid>/stat, status, io and fd). A field a file did not give stays 0 and
// its `has_*` flag false (/proc/self/io is absent on kernels without task I/O accounting).
struct process_sample {
  uint64_t user_ticks = 0, system_ticks = 0;   // CPU time, in clock ticks (sysconf(_SC_CLK_TCK))
  uint64_t rss_bytes = 0, peak_rss_bytes = 0;  // VmRSS, VmHWM
  uint64_t threads = 0;
  uint64_t voluntary_switches = 0, involuntary_switches = 0;
  bool has_io = false;
  uint64_t read_bytes = 0, write_bytes = 0;  // storage, as /proc/<pid>/io's read_bytes/write_bytes
  uint64_t rchar = 0, wchar = 0;             // bytes passed to read/write calls of any kind
  uint64_t open_fds = 0;
  bool has_stat = false, has_status = false;
};

// The node's CPU time since boot, summed over CPUs, in clock ticks (/proc/stat's "cpu" line).
struct cpu_times {
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  uint64_t total() const { return user + nice + system + idle + iowait + irq + softirq + steal; }
};

// Percentages of the CPU time that passed between two readings (all CPUs together).
struct cpu_utilisation {
  double user_pct = 0, system_pct = 0, idle_pct = 0, iowait_pct = 0, busy_pct = 0;
};
// Between `before` and `after`; false when no time passed (nothing to divide by).
bool utilisation(const cpu_times &before, const cpu_times &after, cpu_utilisation *out);

struct memory_info {
  uint64_t total_kb = 0, available_kb = 0;  // MemTotal, MemAvailable
};

// A counter pair of one named device (a network interface, a disk), cumulative since boot.
struct device_bytes {
  std::string name;
  uint64_t in = 0, out = 0;  // network: received, sent; disk: read, written
};

// Parsers: each returns false when the text is not what the file holds (nothing is set then,
// except where said).
bool parse_process_stat(std::string_view text, process_sample *out);    // /proc/<pid>/stat
bool parse_process_status(std::string_view text, process_sample *out);  // /proc/<pid>/status
bool parse_process_io(std::string_view text, process_sample *out);      // /proc/<pid>/io
bool parse_cpu_times(std::string_view text, cpu_times *out);            // /proc/stat
bool parse_meminfo(std::string_view text, memory_info *out);            // /proc/meminfo
// /proc/net/dev: every interface but the loopback.
bool parse_net_dev(std::string_view text, std::vector<device_bytes> *out);
// /proc/diskstats: whole disks only (no partition of a disk listed before it, no loop, ram or
// zram device), in bytes (the file counts 512-byte sectors whatever the device's sector size).
bool parse_diskstats(std::string_view text, std::vector<device_bytes> *out);

// Reads one file whole into `buf` (up to its capacity); false when it can not be read. No
// allocation when `buf` has the capacity already (the sampler reuses one).
bool read_text(const char *path, std::string *buf);

// Readers of a /proc root ("/proc", or a snapshot folder laid out the same way). `pid` names
// the folder (its number, or "self").
class proc_reader {
 public:
  explicit proc_reader(std::string root = "/proc") : root_(std::move(root)) {}
  bool process(std::string_view pid, process_sample *out);
  bool cpu(cpu_times *out);
  bool memory(memory_info *out);
  bool network(std::vector<device_bytes> *out);
  bool disks(std::vector<device_bytes> *out);

 private:
  bool load(std::string_view rel);  // root_/rel into text_
  std::string root_, path_, text_;
};

}  // namespace dftrace::detail::telemetry
