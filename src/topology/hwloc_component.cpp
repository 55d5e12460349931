// hwloc_component.cpp: libdftrace's hwloc probe: libdftrace_hwloc.so, opened beside libdftrace
// the first time it is needed (so a process that never needs hwloc never loads it).
#include <mutex>

#include "base/component.hpp"
#include "topology/hwloc_probe.hpp"

namespace dftrace::detail {

dftrace_hwloc_probe_fn hwloc_probe(std::string *why) {
#ifdef DFTRACE_HAVE_HWLOC
  static std::once_flag once;
  static dftrace_hwloc_probe_fn probe = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    if (void *lib = open_component("libdftrace_hwloc.so", &failure))
      probe = reinterpret_cast<dftrace_hwloc_probe_fn>(
          component_symbol(lib, "dftrace_hwloc_probe", &failure));
  });
  if (!probe) *why = failure;
  return probe;
#else
  (void)why;
  return nullptr;
#endif
}

}  // namespace dftrace::detail
