// topology.cpp: CPU sets from the kernel, NUMA nodes, packages and GPU locality from hwloc.
#include "topology/topology.hpp"

#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>

#include "base/format.hpp"

#ifdef DFTRACE_HAVE_HWLOC
#include <hwloc.h>
#endif

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

#ifdef DFTRACE_HAVE_HWLOC
// Loads the topology once per process (with I/O devices, to find GPUs). Kept for the process's
// life: fork children share the same machine.
hwloc_topology_t shared_topology() {
  static hwloc_topology_t topo = [] {
    hwloc_topology_t t = nullptr;
    if (hwloc_topology_init(&t) != 0) return static_cast<hwloc_topology_t>(nullptr);
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(t) != 0) {
      hwloc_topology_destroy(t);
      return static_cast<hwloc_topology_t>(nullptr);
    }
    return t;
  }();
  return topo;
}

// OS indices of the objects of `type` whose CPUs intersect `set`.
std::vector<int> objects_touching(hwloc_topology_t topo, hwloc_obj_type_t type,
                                  hwloc_const_cpuset_t set) {
  std::vector<int> out;
  const int n = hwloc_get_nbobjs_by_type(topo, type);
  for (int i = 0; i < n; ++i) {
    hwloc_obj_t o = hwloc_get_obj_by_type(topo, type, static_cast<unsigned>(i));
    if (o && o->cpuset && hwloc_bitmap_intersects(o->cpuset, set))
      out.push_back(o->os_index == HWLOC_UNKNOWN_INDEX ? static_cast<int>(o->logical_index)
                                                       : static_cast<int>(o->os_index));
  }
  return out;
}

std::vector<int> nodeset_list(hwloc_const_nodeset_t ns) {
  std::vector<int> out;
  if (!ns) return out;
  for (int i = hwloc_bitmap_first(ns); i >= 0; i = hwloc_bitmap_next(ns, i)) out.push_back(i);
  return out;
}

void add_hwloc_properties(const std::vector<int> &cpus,
                          std::vector<std::pair<std::string, std::string>> *out) {
  hwloc_topology_t topo = shared_topology();
  if (!topo) return;
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (!set) return;
  for (int c : cpus) hwloc_bitmap_set(set, static_cast<unsigned>(c));
  const std::vector<int> numa = objects_touching(topo, HWLOC_OBJ_NUMANODE, set);
  out->emplace_back("numa_node", json_int_list(numa));
  out->emplace_back("package", json_int_list(objects_touching(topo, HWLOC_OBJ_PACKAGE, set)));
  out->emplace_back("host_cores", std::to_string(hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE)));
  out->emplace_back("host_pus", std::to_string(hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU)));
  out->emplace_back("host_numa_nodes",
                    std::to_string(hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE)));
  out->emplace_back("host_packages",
                    std::to_string(hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE)));
  // Bound: allowed fewer CPUs than the machine has (as hwloc sees it).
  const bool bound = static_cast<int>(cpus.size()) < hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  if (bound && numa.size() > 1) {
    std::string numa_text;
    for (size_t i = 0; i < numa.size(); ++i) numa_text += (i ? "," : "") + std::to_string(numa[i]);
    out->emplace_back("affinity_warning",
                      json_quote("the process is bound to CPUs " + json_int_list(cpus) +
                                 " that span NUMA nodes " + numa_text));
  }
  // GPUs: OS devices that are GPUs or compute co-processors, with the NUMA nodes of their
  // closest non-I/O ancestor.
  std::string gpus;
  for (hwloc_obj_t o = hwloc_get_next_osdev(topo, nullptr); o; o = hwloc_get_next_osdev(topo, o)) {
    if (!o->attr) continue;
    const auto kind = o->attr->osdev.type;
    if (kind != HWLOC_OBJ_OSDEV_GPU && kind != HWLOC_OBJ_OSDEV_COPROC) continue;
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, o);
    std::string pci;
    for (hwloc_obj_t p = o->parent; p; p = p->parent) {
      if (p->type == HWLOC_OBJ_PCI_DEVICE) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%01x", p->attr->pcidev.domain,
                      p->attr->pcidev.bus, p->attr->pcidev.dev, p->attr->pcidev.func);
        pci = buf;
        break;
      }
    }
    if (!gpus.empty()) gpus += ',';
    gpus += "{\"name\":" + json_quote(o->name ? o->name : "") + ",\"pci\":" + json_quote(pci) +
            ",\"numa_node\":" + json_int_list(nodeset_list(anc ? anc->nodeset : nullptr)) + "}";
  }
  if (!gpus.empty()) out->emplace_back("gpu_numa", "[" + gpus + "]");
  hwloc_bitmap_free(set);
}
#endif

}  // namespace

std::string cpu_list_json(const std::vector<int> &cpus) { return json_int_list(cpus); }

std::vector<std::pair<std::string, std::string>> topology_properties(pid_t pid) {
  std::vector<std::pair<std::string, std::string>> out;
  try {
    std::vector<int> cpus;
    if (!affinity_of(pid, &cpus)) return out;
    out.emplace_back("core_affinity", json_int_list(cpus));
#ifdef DFTRACE_HAVE_HWLOC
    add_hwloc_properties(cpus, &out);
#endif
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
