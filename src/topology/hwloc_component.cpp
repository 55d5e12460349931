// hwloc_component.cpp: libdftrace's hwloc probe: libdftrace_hwloc.so, opened beside libdftrace
// the first time it is needed (so a process that never needs hwloc never loads it).
#include "base/component.hpp"
#include "topology/hwloc_probe.hpp"

namespace dftrace::detail {

dftrace_hwloc_probe_fn hwloc_probe(std::string *why) {
#ifdef DFTRACE_HAVE_HWLOC
  static component_entry probe("libdftrace_hwloc.so", "dftrace_hwloc_probe");
  return reinterpret_cast<dftrace_hwloc_probe_fn>(probe.get(why));
#else
  (void)why;
  return nullptr;
#endif
}

}  // namespace dftrace::detail
