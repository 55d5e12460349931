// hwloc_probe.hpp: hwloc's view of the machine, kept out of libdftrace's own links. Linking
// hwloc loads it and libudev in every traced process, although only hosts with GPUs (or a
// described machine) use it; so the probe is a component, libdftrace_hwloc.so, opened beside
// libdftrace the first time it is needed. The tools and tests, which link the core statically,
// link the probe directly.
#pragma once

#include <cstddef>
#include <string>

extern "C" {
// The PR properties hwloc gives for a process allowed the `n` CPUs `cpus` (numa_node, package,
// host_cores, host_pus, host_numa_nodes, host_packages, affinity_warning, gpu_numa): a malloc'd
// buffer of "key\0value\0" pairs that ends with an empty key, its length in *len; null when
// hwloc can not load the topology. The caller frees it with free(). Loads the topology once per
// process (a forked child keeps its parent's). Never throws.
typedef char *(*dftrace_hwloc_probe_fn)(const int *cpus, size_t n, size_t *len);
}

namespace dftrace::detail {

// The probe, or null: the build has no hwloc (*why empty), or its component can not be loaded
// (*why says why). Loaded at most once per process.
dftrace_hwloc_probe_fn hwloc_probe(std::string *why);

}  // namespace dftrace::detail
