// hwloc_direct.cpp: the hwloc probe linked in (the tools and tests, which link the core
// statically); libdftrace opens it as a component instead (hwloc_component.cpp).
#include "topology/hwloc_probe.hpp"

extern "C" char *dftrace_hwloc_probe(const int *cpus, size_t n, size_t *len);

namespace dftrace::detail {

dftrace_hwloc_probe_fn hwloc_probe(std::string *) { return &dftrace_hwloc_probe; }

}  // namespace dftrace::detail
