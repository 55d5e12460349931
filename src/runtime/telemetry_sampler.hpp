// telemetry_sampler.hpp: the sampling thread of `telemetry.interval` (docs/telemetry.md): reads
// /proc (and NVML) every interval and writes what it read as counter lines of category `sys`.
#pragma once

#include <string>

namespace dftrace::detail {

struct config;

// Where the node's telemetry lock lives: beside the trace, one file per output prefix and host
// (the process holding it writes the node's counters).
std::string telemetry_lock_path(const config &cfg, const std::string &host);

// Starts the sampling thread (one per process; a second start is ignored). Called by the
// runtime's init once the writer exists; the thread is dftrace's own (its reads are not traced)
// and runs with the asynchronous signals blocked. Not thread-safe against telemetry_stop.
void telemetry_start(double interval_s, const std::string &lock_path);
// Wakes the thread, lets it write a last sample, and joins it; at once when it is waiting. Does
// nothing when no thread runs. Called by finalize before the trace is closed.
void telemetry_stop();
// In a forked child (from the runtime's atfork child handler): forgets the parent's thread,
// its lock and NVML, and starts a thread of its own when the parent had one.
void telemetry_fork_child();

}  // namespace dftrace::detail
