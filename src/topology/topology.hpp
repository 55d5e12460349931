// topology.hpp: where this process and its threads run (CPU sets, NUMA, packages, GPUs), as
// PR header lines and thread_name arguments; hwloc when the build has it.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace dftrace::detail {

// The PR lines for the trace header, as (key, JSON value): core_affinity of thread `pid` (the
// main thread), and with hwloc numa_node, package, host_* counts, gpu_numa and
// affinity_warning. Never throws; an empty list when nothing can be read.
std::vector<std::pair<std::string, std::string>> topology_properties(pid_t pid);

// The calling thread's CPUs as a JSON array ("[2,3]") when it is bound to fewer than all online
// CPUs; empty otherwise.
std::string thread_affinity_json();

// Adds the affinity_warning line when a bound process's CPUs span several NUMA nodes.
void add_affinity_warning(const std::vector<int> &cpus, const std::vector<int> &numa, bool bound,
                          std::vector<std::pair<std::string, std::string>> *out);

// Formats a sorted list of CPU indices as a JSON array.
std::string cpu_list_json(const std::vector<int> &cpus);

}  // namespace dftrace::detail
