// triggers.cpp: slow steps and the trigger signal (triggers.hpp).
#include "runtime/triggers.hpp"

#include <errno.h>
#include <signal.h>
#include <string.h>

#include <algorithm>
#include <cstdio>

#include "base/clock.hpp"
#include "base/log.hpp"
#include "writer/writer.hpp"

namespace dftrace::detail {

bool step_watch::ended(uint64_t now_ns, uint64_t index, double factor, uint64_t abs_ns,
                       std::string *why) {
  const uint64_t d = now_ns > last_ ? now_ns - last_ : 0;
  last_ = now_ns;
  uint64_t median = 0;
  if (n_ >= k_least) {
    uint64_t s[k_window];
    std::copy(d_, d_ + n_, s);
    std::nth_element(s, s + n_ / 2, s + n_);
    median = s[n_ / 2];
  }
  d_[next_] = d;
  next_ = (next_ + 1) % k_window;
  if (n_ < k_window) ++n_;
  char buf[256];
  if (abs_ns && d > abs_ns) {
    std::snprintf(buf, sizeof buf, "step %llu lasted %.3f ms, over trigger.step_ns (%.3f ms)",
                  static_cast<unsigned long long>(index), d / 1e6, abs_ns / 1e6);
  } else if (factor > 0 && median > 0 && static_cast<double>(d) > factor * median) {
    std::snprintf(buf, sizeof buf, "step %llu lasted %.3f ms, %.1fx the median step (%.3f ms)",
                  static_cast<unsigned long long>(index), d / 1e6, static_cast<double>(d) / median,
                  median / 1e6);
  } else {
    return false;
  }
  *why = buf;
  return true;
}

namespace {
void trigger_handler(int sig) {
  const int saved = errno;
  signal_trigger(sig, mono_ns());  // atomics and a futex wake; clock_gettime is async-signal-safe
  errno = saved;
}
}  // namespace

bool install_trigger_signal(int sig, bool python_starting) {
  struct sigaction old {};
  if (sig <= 0 || ::sigaction(sig, nullptr, &old) != 0) return false;
  const bool default_action = !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL;
  if (old.sa_handler == trigger_handler) return true;  // a forked child, a second init
  if (!default_action || python_starting) {
    log(python_starting ? log_level::info : log_level::warn,
        "trigger.signal: signal %d is %s; no trigger by signal (choose another with "
        "DFTRACE_TRIGGER_SIGNAL)",
        sig,
        python_starting ? "not taken while the Python interpreter starts"
                        : "handled or ignored by the program");
    return false;
  }
  struct sigaction sa {};
  sa.sa_handler = trigger_handler;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  return ::sigaction(sig, &sa, nullptr) == 0;
}

}  // namespace dftrace::detail
