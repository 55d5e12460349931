// triggers.hpp: what starts the flight recorder's triggers (output.mode: ring;
// docs/flight-recorder.md) on the runtime's side: slow steps, and trigger.signal's handler.
// The writer keeps the ring and writes it (src/writer/member_ring.hpp, writer_ring.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dftrace::detail {

// The durations of the last steps (the time between two dftrace_step calls; the first step
// from the start of tracing) and whether a step is slow. Used under the runtime's lock.
class step_watch {
 public:
  static constexpr size_t k_window = 15;  // the median is that of the last 15 steps
  static constexpr size_t k_least = 3;    // a factor needs at least 3 steps before the one seen

  void start(uint64_t now_ns) {
    last_ = now_ns;
    n_ = next_ = 0;
  }
  // The step `index` (0-based) ended at now_ns: true, with what the trigger line says in *why,
  // when it lasted more than factor times the median of the steps before it (factor 0: off)
  // or more than abs_ns (0: off). The step joins the window either way.
  bool ended(uint64_t now_ns, uint64_t index, double factor, uint64_t abs_ns, std::string *why);

 private:
  uint64_t last_ = 0;
  uint64_t d_[k_window] = {};
  size_t n_ = 0, next_ = 0;
};

// trigger.signal's handler (it stores the signal and the time for the writer: nothing else,
// async-signal-safe), installed only where the signal has its default action: a handler of the
// application's, or an ignored signal, is left alone (false, said once). Not while a Python
// interpreter is starting (`python_starting`): it reads the dispositions when it starts, and
// would report ours as an unknown handler.
bool install_trigger_signal(int sig, bool python_starting);

}  // namespace dftrace::detail
