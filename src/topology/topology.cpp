// topology.cpp: CPU sets from the kernel, NUMA nodes and packages from sysfs, and from hwloc (a
// component, hwloc_probe.hpp) where GPUs may be.
#include "topology/topology.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>

#include "base/format.hpp"
#include "base/log.hpp"

#include "topology/hwloc_probe.hpp"

namespace dftrace::detail {

namespace {

// The CPUs a thread may run on (pid 0: the calling thread).
bool affinity_of(pid_t tid, std::vector<int> *cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(tid, sizeof set, &set) != 0) return false;
  cpus->clear();
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus->push_back(c);
  return true;
}

// Number of online CPUs, read once: a thread allowed fewer than these is "bound".
int online_cpus() {
  static const int n = [] {
    long v = ::sysconf(_SC_NPROCESSORS_ONLN);
    return v > 0 ? static_cast<int>(v) : 1;
  }();
  return n;
}

std::string json_int_list(const std::vector<int> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s + "]";
}

// CPU (and node) lists as sysfs writes them ("0-3,8,10-11").
std::vector<int> parse_cpu_list(const std::string &text) {
  std::vector<int> out;
  const char *p = text.c_str();
  while (*p) {
    char *end = nullptr;
    const long a = std::strtol(p, &end, 10);
    if (end == p || a < 0 || a >= CPU_SETSIZE) break;
    long b = a;
    p = end;
    if (*p == '-') {
      b = std::strtol(p + 1, &end, 10);
      if (end == p + 1 || b < a || b >= CPU_SETSIZE) break;
      p = end;
    }
    for (long c = a; c <= b; ++c) out.push_back(static_cast<int>(c));
    if (*p != ',') break;
    ++p;
  }
  return out;
}

// The first line of a small sysfs file, or empty (plain system calls: tens of them per process).
std::string read_line(const std::string &path) {
  std::string line;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return line;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) line.append(buf, static_cast<size_t>(n));
  ::close(fd);
  const size_t nl = line.find('\n');
  if (nl != std::string::npos) line.resize(nl);
  return line;
}

// The machine as sysfs describes it: the NUMA node and package of each online CPU, and how many
// cores, packages and nodes there are. One file per core and per package (a core's and a
// package's CPU lists mark all their CPUs at once), one per NUMA node: tens of opens on a large
// host, no library loaded.
struct sys_topology {
  std::vector<int> online;
  std::vector<int> node_of, package_of;  // by CPU index; -1 when not known
  int cores = 0, packages = 0, nodes = 0;
};

sys_topology read_sys_topology() {
  sys_topology t;
  t.online = parse_cpu_list(read_line("/sys/devices/system/cpu/online"));
  if (t.online.empty())
    for (int c = 0; c < online_cpus(); ++c) t.online.push_back(c);
  const int n = t.online.back() + 1;
  t.node_of.assign(n, -1);
  t.package_of.assign(n, -1);
  std::vector<char> in_core(n, 0);
  const std::string cpu_dir = "/sys/devices/system/cpu/cpu";
  for (int c : t.online) {
    const std::string topo = cpu_dir + std::to_string(c) + "/topology/";
    if (!in_core[c]) {
      ++t.cores;
      std::vector<int> siblings = parse_cpu_list(read_line(topo + "core_cpus_list"));
      if (siblings.empty()) siblings = parse_cpu_list(read_line(topo + "thread_siblings_list"));
      in_core[c] = 1;
      for (int s : siblings)
        if (s < n) in_core[s] = 1;
    }
    if (t.package_of[c] < 0) {
      ++t.packages;
      char *end = nullptr;
      const std::string id_text = read_line(topo + "physical_package_id");
      long id = std::strtol(id_text.c_str(), &end, 10);
      if (id_text.empty() || id < 0) id = t.packages - 1;
      std::vector<int> mates = parse_cpu_list(read_line(topo + "package_cpus_list"));
      if (mates.empty()) mates = parse_cpu_list(read_line(topo + "core_siblings_list"));
      t.package_of[c] = static_cast<int>(id);
      for (int m : mates)
        if (m < n) t.package_of[m] = static_cast<int>(id);
    }
  }
  // NUMA nodes: those the kernel lists online (a machine without them has one, node 0).
  for (int node : parse_cpu_list(read_line("/sys/devices/system/node/online"))) {
    ++t.nodes;
    const std::string list =
        read_line("/sys/devices/system/node/node" + std::to_string(node) + "/cpulist");
    for (int c : parse_cpu_list(list))
      if (c < n) t.node_of[c] = node;
  }
  if (t.nodes == 0) {
    t.nodes = 1;
    for (int c : t.online) t.node_of[c] = 0;
  }
  return t;
}

// Sorted distinct values of `of` over `cpus` (unknown ones skipped).
std::vector<int> values_over(const std::vector<int> &of, const std::vector<int> &cpus) {
  std::vector<int> out;
  for (int c : cpus)
    if (c < static_cast<int>(of.size()) && of[c] >= 0) out.push_back(of[c]);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

void add_affinity_warning(const std::vector<int> &cpus, const std::vector<int> &numa, bool bound,
                          std::vector<std::pair<std::string, std::string>> *out) {
  if (!bound || numa.size() <= 1) return;
  std::string numa_text;
  for (size_t i = 0; i < numa.size(); ++i) numa_text += (i ? "," : "") + std::to_string(numa[i]);
  out->emplace_back("affinity_warning",
                    json_quote("the process is bound to CPUs " + json_int_list(cpus) +
                               " that span NUMA nodes " + numa_text));
}

namespace {

void add_sys_properties(const std::vector<int> &cpus,
                        std::vector<std::pair<std::string, std::string>> *out) {
  const sys_topology t = read_sys_topology();
  const std::vector<int> numa = values_over(t.node_of, cpus);
  out->emplace_back("numa_node", json_int_list(numa));
  out->emplace_back("package", json_int_list(values_over(t.package_of, cpus)));
  out->emplace_back("host_cores", std::to_string(t.cores));
  out->emplace_back("host_pus", std::to_string(t.online.size()));
  out->emplace_back("host_numa_nodes", std::to_string(t.nodes));
  out->emplace_back("host_packages", std::to_string(t.packages));
  add_affinity_warning(cpus, numa, cpus.size() < t.online.size(), out);
}

// Whether hwloc is needed: to find GPUs (a GPU driver is loaded: NVIDIA's, or AMD's compute
// device), or because hwloc is told to read a described machine (HWLOC_XMLFILE, HWLOC_SYNTHETIC).
// Otherwise sysfs gives the same answers without loading hwloc (its library, libudev, and its
// plugins: their X11, OpenCL and PCI libraries, and the X servers the GL plugin tries to reach:
// tens of milliseconds in every traced process).
bool hwloc_needed() {
  if (std::getenv("HWLOC_XMLFILE") || std::getenv("HWLOC_SYNTHETIC")) return true;
  if (::access("/dev/kfd", F_OK) == 0) return true;
  if (DIR *d = ::opendir("/proc/driver/nvidia/gpus")) {
    bool any = false;
    while (dirent *e = ::readdir(d))
      if (e->d_name[0] != '.') any = true;
    ::closedir(d);
    return any;
  }
  return false;
}

// hwloc's answers through the probe (hwloc_probe.hpp); false when there is no probe or hwloc
// could not load the topology (then sysfs answers).
bool add_hwloc_properties(const std::vector<int> &cpus,
                          std::vector<std::pair<std::string, std::string>> *out) {
  std::string why;
  const dftrace_hwloc_probe_fn probe = hwloc_probe(&why);
  if (!probe) {
    if (!why.empty())
      log_once(log_level::warn, "hwloc probe",
               "hwloc is needed here (GPUs, or a described machine) but %s; the header's "
               "topology comes from sysfs, without gpu_numa",
               why.c_str());
    return false;
  }
  size_t len = 0;
  std::unique_ptr<char, void (*)(void *)> text(probe(cpus.data(), cpus.size(), &len), std::free);
  if (!text) return false;
  // key\0value\0 ... up to an empty key
  for (size_t at = 0; at < len && text.get()[at];) {
    const std::string key = text.get() + at;
    at += key.size() + 1;
    if (at >= len) break;
    const std::string value = text.get() + at;
    at += value.size() + 1;
    out->emplace_back(key, value);
  }
  return true;
}

}  // namespace

std::string cpu_list_json(const std::vector<int> &cpus) { return json_int_list(cpus); }

std::vector<std::pair<std::string, std::string>> topology_properties(pid_t pid) {
  std::vector<std::pair<std::string, std::string>> out;
  try {
    std::vector<int> cpus;
    if (!affinity_of(pid, &cpus)) return out;
    out.emplace_back("core_affinity", json_int_list(cpus));
    if (hwloc_needed() && add_hwloc_properties(cpus, &out)) return out;
    add_sys_properties(cpus, &out);
  } catch (...) {
    // A header without topology is better than no trace.
  }
  return out;
}

std::string thread_affinity_json() {
  std::vector<int> cpus;
  if (!affinity_of(0, &cpus) || static_cast<int>(cpus.size()) >= online_cpus())
    return std::string();
  return json_int_list(cpus);
}

}  // namespace dftrace::detail
