// schedule.hpp: the step schedule (schedule.* keys, dftrace_step): which steps are recorded.
// As torch.profiler's schedule: the first skip_first steps are skipped, then cycles of `wait`
// steps, `warmup` steps and `active` steps follow, `repeat` cycles (0: no end); only active
// steps are recorded. Warm-up steps are not recorded either: dftrace has nothing to warm up,
// the phase is kept so that schedules written for torch.profiler mean the same steps.
#pragma once

#include <cstdint>

namespace dftrace::detail {

enum class step_phase : int { none = 0, skip = 1, wait = 2, warmup = 3, active = 4, done = 5 };

struct schedule {
  uint64_t skip_first = 0, wait = 0, warmup = 0, active = 0, repeat = 0;

  bool on() const { return active > 0; }
  // The phase of step `i` (0-based).
  step_phase phase(uint64_t i) const {
    if (!on()) return step_phase::none;
    if (i < skip_first) return step_phase::skip;
    const uint64_t j = i - skip_first, cycle = wait + warmup + active;
    if (repeat && j / cycle >= repeat) return step_phase::done;
    const uint64_t k = j % cycle;
    return k < wait            ? step_phase::wait
           : k < wait + warmup ? step_phase::warmup
                               : step_phase::active;
  }
  // Whether step i is recorded.
  bool records(uint64_t i) const {
    const step_phase p = phase(i);
    return p == step_phase::none || p == step_phase::active;
  }
  // Whether the end of step i closes an active window (its last active step).
  bool window_ends_after(uint64_t i) const {
    if (phase(i) != step_phase::active) return false;
    const uint64_t cycle = wait + warmup + active;
    return (i - skip_first) % cycle == cycle - 1;
  }
  // The window (cycle) that step i belongs to.
  uint64_t window(uint64_t i) const {
    return on() && i >= skip_first ? (i - skip_first) / (wait + warmup + active) : 0;
  }
};

}  // namespace dftrace::detail
