// signals.cpp: the fatal-signal handlers: what is buffered is written, then the previous
// handler or the default action runs (src/runtime/README.md, "Fatal signals").
#include "runtime/signals.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>

#include <cerrno>

#include "base/thread_role.hpp"
#include "runtime/runtime.hpp"

namespace dftrace::detail {

namespace {

struct sigaction g_old_actions[65];
bool g_installed[65];
// Set once a fatal signal puts its default action back to end the process: from then on a
// default action set (die_of's own) is never taken over again.
volatile sig_atomic_t g_dying = 0;
// Py_IsInitialized and Py_IsFinalizing (_Py_IsFinalizing before 3.13) where the process is a
// Python interpreter, found at installation (dlsym is not signal-safe, and the default action
// may be put back in a signal handler). Py_IsInitialized is false again as it finalizes.
int (*g_py_is_initialized)() = nullptr;
int (*g_py_is_finalizing)() = nullptr;

// An interpreter that has not started yet: it still reads the dispositions (signals.hpp).
bool python_not_started() {
  if (!g_py_is_initialized || g_py_is_initialized()) return false;
  return !(g_py_is_finalizing && g_py_is_finalizing());
}
const int k_fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT,
                               SIGTERM, SIGINT, SIGHUP, SIGPIPE};

// A request to end the process (rather than a fault): the application or its environment may
// handle it; dftrace's flush takes it only where its default action is in place.
bool is_request(int sig) {
  return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGPIPE;
}

// The default action of `sig` put back, and the signal raised: the process ends as it would
// have untraced.
void die_of(int sig) {
  g_dying = 1;
  ::sigaction(sig, &g_old_actions[sig], nullptr);
  g_installed[sig] = false;
  ::raise(sig);
}

// A request deferred while the thread was inside dftrace (thread_role.hpp), now that it left.
void raise_deferred_signal(int sig) {
  runtime::get().on_fatal_signal(sig, true);
  die_of(sig);
}

void fatal_signal(int sig, siginfo_t *info, void *uctx) {
  const int saved_errno = errno;
  const struct sigaction &old = g_old_actions[sig];
  // With no handler of the application's (or Python's) to run, the default action ends the
  // process right after this: the trace gets its end line, marked with the signal.
  const bool dies =
      (old.sa_flags & SA_SIGINFO) ? old.sa_sigaction == nullptr : old.sa_handler == SIG_DFL;
  if (is_request(sig) && dies && detail::t_lifecycle != 0) {
    // The thread was in a lifecycle call (a flush, the finish at exit), maybe holding a lock
    // the trace's writing needs: the signal takes effect as the call returns.
    detail::t_deferred_signal_raise = raise_deferred_signal;
    detail::t_deferred_signal = sig;
    errno = saved_errno;
    return;
  }
  runtime::get().on_fatal_signal(sig, dies);
  if (old.sa_flags & SA_SIGINFO) {
    if (old.sa_sigaction) {
      old.sa_sigaction(sig, info, uctx);
      errno = saved_errno;
      return;
    }
  } else if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN) {
    old.sa_handler(sig);
    errno = saved_errno;
    return;
  }
  // The default action: put it back and let the signal kill the process as it would have.
  die_of(sig);
  errno = saved_errno;
}

// The fatal-signal flush for a request to end (SIGINT, SIGTERM, SIGHUP, SIGPIPE: a reader of
// the process's pipe that left, as in `cmd | head`) only where nobody else handles it: the
// default action in place, never SIGINT under Python (its KeyboardInterrupt), and the others
// under Python only once it has started (it then reports what it found: SIG_DFL; it ignores
// SIGPIPE itself). The faults (SIGSEGV, ...) are always chained.
bool takes_over_request(int sig, const struct sigaction &old, python host) {
  if (!is_request(sig)) return true;
  if (host != python::none && (sig == SIGINT || host == python::starting)) return false;
  return !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL;
}

}  // namespace

bool default_action_behind(int sig) {
  if (sig <= 0 || sig >= 65 || !g_installed[sig]) return false;
  struct sigaction now {};
  if (::sigaction(sig, nullptr, &now) != 0) return false;
  if (!(now.sa_flags & SA_SIGINFO) || now.sa_sigaction != fatal_signal) return false;
  const struct sigaction &old = g_old_actions[sig];
  return !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL;
}

python python_host() {
  void *f = ::dlsym(RTLD_DEFAULT, "Py_IsInitialized");
  if (!f) return python::none;
  g_py_is_initialized = reinterpret_cast<int (*)()>(f);
  void *fin = ::dlsym(RTLD_DEFAULT, "Py_IsFinalizing");
  if (!fin) fin = ::dlsym(RTLD_DEFAULT, "_Py_IsFinalizing");
  g_py_is_finalizing = reinterpret_cast<int (*)()>(fin);
  return g_py_is_initialized() ? python::started : python::starting;
}

void signals_in_fork_child() {
  runtime &r = runtime::get();
  if (r.initialized() && r.cfg_.signals) r.install_signal_handlers();
}

void runtime::install_signal_handlers() {
  const python interpreter = python_host();
  // A forked child of an interpreter that was starting here (preloaded) takes what it could
  // not (its Pool workers' SIGTERM: Pool.terminate()).
  static bool again_in_children = false;
  if (interpreter == python::starting && !again_in_children) {
    again_in_children = true;
    pthread_atfork(nullptr, nullptr, signals_in_fork_child);
  }
  for (int sig : k_fatal_signals) {
    if (g_installed[sig]) continue;
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0) continue;
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) continue;  // leave ignored ones
    if (!takes_over_request(sig, old, interpreter)) continue;
    struct sigaction sa {};
    sa.sa_sigaction = fatal_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (::sigaction(sig, &sa, &g_old_actions[sig]) == 0) g_installed[sig] = true;
  }
}

void runtime::on_default_action_restored(int sig) {
  if (sig <= 0 || sig >= 65 || !is_request(sig) || g_dying) return;
  if (!initialized() || !cfg_.signals) return;
  if (python_not_started()) return;
  struct sigaction now {};
  if (::sigaction(sig, nullptr, &now) != 0) return;
  if ((now.sa_flags & SA_SIGINFO) || now.sa_handler != SIG_DFL) return;
  struct sigaction sa {};
  sa.sa_sigaction = fatal_signal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  // Its old action is the default just put back: fatal_signal ends the process by it.
  if (::sigaction(sig, &sa, &g_old_actions[sig]) == 0) g_installed[sig] = true;
}

void runtime::on_signal_flush(bool ending) {
  // A request to end the process that lands on this thread meanwhile (a fork Pool's worker
  // leaving by os._exit when Pool.terminate's SIGTERM comes) waits until this flush is done:
  // its handler could not take the writer's lock this flush holds, and the process would die
  // with its file half made. It then takes effect (the end line is written: nothing more).
  lifecycle_scope own_work;
  end_fields end;  // no allocation here
  if (ending) {
    end.id = alloc_global_id();
    end.signal = last_signal_.load(std::memory_order_relaxed);
  }
  if (writer_) writer_->crash_flush(ending ? &end : nullptr);
}

void runtime::on_fatal_signal(int sig, bool dies) {
  last_signal_.store(sig, std::memory_order_relaxed);
  end_fields end;  // no allocation here
  end.id = alloc_global_id();
  end.signal = sig;
  if (writer_) writer_->crash_flush(dies ? &end : nullptr, sig);
}

}  // namespace dftrace::detail
