// hwloc_probe.cpp: NUMA nodes, packages and GPU locality from hwloc (the body of
// libdftrace_hwloc.so; linked directly into the tools and tests).
#include "topology/hwloc_probe.hpp"

#include <dlfcn.h>
#include <hwloc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "base/format.hpp"
#include "topology/topology.hpp"

namespace dftrace::detail {
namespace {

using properties = std::vector<std::pair<std::string, std::string>>;

// Loads the topology once per process (a forked child keeps its parent's: the same machine).
// I/O objects only where GPUs may be (to place them), and never through the GL (X servers) or
// OpenCL components.
hwloc_topology_t shared_topology() {
  static hwloc_topology_t topo = [] {
    // hwloc's plugins (PCI, which places the GPUs; libxml) take hwloc's functions from the
    // global scope: where this component was opened locally, so was hwloc, and every plugin
    // would fail to load ("undefined symbol: hwloc_get_obj_by_depth"). Make hwloc global.
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void *>(&hwloc_topology_init), &info) != 0 && info.dli_fname)
      ::dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
    hwloc_topology_t t = nullptr;
    if (hwloc_topology_init(&t) != 0) return static_cast<hwloc_topology_t>(nullptr);
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
#if HWLOC_API_VERSION >= 0x00020100
    hwloc_topology_set_components(t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "gl");
    hwloc_topology_set_components(t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "opencl");
#endif
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

// GPUs: OS devices that are GPUs or compute co-processors, with the NUMA nodes of their closest
// non-I/O ancestor; a JSON array, or empty when there is none.
std::string gpu_numa(hwloc_topology_t topo) {
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
            ",\"numa_node\":" + cpu_list_json(nodeset_list(anc ? anc->nodeset : nullptr)) + "}";
  }
  return gpus.empty() ? gpus : "[" + gpus + "]";
}

bool hwloc_properties(hwloc_topology_t topo, const int *cpus, size_t n, properties *out) {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (!set) return false;
  const std::vector<int> cpu_list(cpus, cpus + n);
  for (int c : cpu_list) hwloc_bitmap_set(set, static_cast<unsigned>(c));
  const std::vector<int> numa = objects_touching(topo, HWLOC_OBJ_NUMANODE, set);
  out->emplace_back("numa_node", cpu_list_json(numa));
  out->emplace_back("package", cpu_list_json(objects_touching(topo, HWLOC_OBJ_PACKAGE, set)));
  hwloc_bitmap_free(set);
  const int pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  out->emplace_back("host_cores", std::to_string(hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE)));
  out->emplace_back("host_pus", std::to_string(pus));
  out->emplace_back("host_numa_nodes",
                    std::to_string(hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE)));
  out->emplace_back("host_packages",
                    std::to_string(hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE)));
  // Bound: allowed fewer CPUs than the machine has (as hwloc sees it).
  add_affinity_warning(cpu_list, numa, static_cast<int>(n) < pus, out);
  std::string gpus = gpu_numa(topo);
  if (!gpus.empty()) out->emplace_back("gpu_numa", std::move(gpus));
  return true;
}

}  // namespace
}  // namespace dftrace::detail

extern "C" __attribute__((visibility("default"))) char *dftrace_hwloc_probe(const int *cpus,
                                                                            size_t n, size_t *len) {
  using namespace dftrace::detail;
  try {
    hwloc_topology_t topo = shared_topology();
    properties props;
    if (!topo || !hwloc_properties(topo, cpus, n, &props)) return nullptr;
    std::string flat;
    for (const auto &[key, value] : props) {
      flat.append(key).push_back('\0');
      flat.append(value).push_back('\0');
    }
    flat.push_back('\0');
    char *out = static_cast<char *>(std::malloc(flat.size()));
    if (!out) return nullptr;
    std::memcpy(out, flat.data(), flat.size());
    *len = flat.size();
    return out;
  } catch (...) {
    return nullptr;
  }
}
