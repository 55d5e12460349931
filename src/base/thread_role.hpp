// thread_role.hpp: whether the calling thread is one of dftrace's own (the writer and its
// compressors), so that I/O interposers (src/plugins/io) leave the I/O of those threads untraced.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <initializer_list>

namespace dftrace::detail {

// Nonzero while the calling thread is dftrace's: set once by each internal thread when it
// starts, and counted up and down by internal_scope around dftrace's own work on an application
// thread; read through dftrace_thread_is_internal() on every interposed I/O call
// (initial-exec: no __tls_get_addr call, as for the event path's thread state). A count, not a
// saved flag: one increment and one decrement of the thread-local byte, nothing kept in a
// register across the work (the C ABI marks every call so).
inline thread_local unsigned char t_internal_thread __attribute__((tls_model("initial-exec"))) = 0;

// A request to end the process (SIGTERM, SIGINT) that arrived while this thread was in one of
// dftrace's lifecycle calls (lifecycle_scope: init, flush, finalize, a new rank), where the
// handler could not write the trace (it would wait on a lock the interrupted work holds): the
// runtime's handler leaves it here, and it is raised as the call returns
// (t_deferred_signal_raise, set by the runtime: writes the end line, then the signal's default
// action ends the process as it would have untraced). The event path is not such a call: it
// holds no lock a handler waits on for long, and it stays a bare counter.
inline thread_local unsigned char t_lifecycle __attribute__((tls_model("initial-exec"))) = 0;
inline thread_local int t_deferred_signal __attribute__((tls_model("initial-exec"))) = 0;
inline void (*t_deferred_signal_raise)(int sig) = nullptr;

// Marks the calling (application) thread as dftrace's own while dftrace does its own work on it:
// initialisation reads the configuration, /proc and the topology, finalisation and a new rank
// write or rename the trace, and every C ABI call (a signal handler's traced I/O must not
// re-enter the thread's record buffer or wait on a lock the interrupted call holds). A
// preloaded interposer must neither trace that I/O nor call back into dftrace from it. Nests.
class internal_scope {
 public:
  internal_scope() { ++t_internal_thread; }
  ~internal_scope() { --t_internal_thread; }
  internal_scope(const internal_scope &) = delete;
  internal_scope &operator=(const internal_scope &) = delete;
};

// internal_scope for the lifecycle calls (t_lifecycle): a request to end the process that
// arrives meanwhile takes effect as the call returns. Nests.
class lifecycle_scope {
 public:
  lifecycle_scope() { ++t_lifecycle; }
  ~lifecycle_scope() {
    if (--t_lifecycle == 0 && t_deferred_signal != 0) {
      const int sig = t_deferred_signal;
      t_deferred_signal = 0;
      if (t_deferred_signal_raise) t_deferred_signal_raise(sig);
    }
  }
  lifecycle_scope(const lifecycle_scope &) = delete;
  lifecycle_scope &operator=(const lifecycle_scope &) = delete;

 private:
  internal_scope own_;
};

// Blocks the asynchronous signals in the calling thread while it lives, so that a thread started
// meanwhile (one of dftrace's own) starts with them blocked: the application's handlers run on
// its own threads, never on dftrace's, whose locks a handler's traced I/O would wait on (a
// compressor thread waiting in a handler for the writer, which waits for it, is a deadlock).
// The synchronous ones (a fault, an abort) stay, so that the fatal-signal path still sees a
// crash in dftrace's threads.
class async_signals_blocked {
 public:
  async_signals_blocked() {
    sigset_t async;
    sigfillset(&async);
    for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS}) sigdelset(&async, s);
    pthread_sigmask(SIG_BLOCK, &async, &saved_);
  }
  ~async_signals_blocked() { pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }
  async_signals_blocked(const async_signals_blocked &) = delete;
  async_signals_blocked &operator=(const async_signals_blocked &) = delete;

 private:
  sigset_t saved_;
};

// Starts fn(arg) on a detached thread of dftrace's own that takes none of the application's
// asynchronous signals (async_signals_blocked), named `name` (at most 15 characters) before
// this returns, so that /proc shows the name from then on; false when it could not start.
inline bool start_detached_thread(void *(*fn)(void *), void *arg, const char *name = nullptr) {
  async_signals_blocked quiet;
  pthread_t t;
  if (pthread_create(&t, nullptr, fn, arg) != 0) return false;
  if (name) pthread_setname_np(t, name);
  pthread_detach(t);
  return true;
}

}  // namespace dftrace::detail
