// process_exit.cpp: _exit and _Exit. A process that leaves through them skips exit()'s handlers,
// which finalize its trace: a forked child of Python's multiprocessing (a DataLoader worker)
// ends with os._exit(), and so do servers' workers and shells' children. Its buffered events
// and its end line would be lost; here the trace is finalized first (README.md, "Safety").
//
// _exit is also how a signal handler ends a process, and the handler may have interrupted the
// C library's allocator or one of dftrace's locks, which finalizing needs: it would then wait
// forever (a SIGALRM handler that calls _exit while the program allocates). So what is buffered and
// the end line are written first the signal-safe way (no allocation, bounded waits: the
// fatal-signal path), then dftrace is finalized (it has nothing left to write) under a watchdog: if
// that has not ended within k_finalize_seconds, the process leaves with its status, its trace
// complete.
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "plugins/io/interpose.hpp"

using namespace dftrace::io;

namespace {

constexpr unsigned k_finalize_seconds = 3;
std::atomic<int> g_exit_status{0};

void leave_now(int) { ::syscall(SYS_exit_group, g_exit_status.load(std::memory_order_relaxed)); }

// Not in a vfork child (it shares its parent's memory, writer and file: the parent finalizes),
// nor before this library is ready. A handler that interrupted this thread inside dftrace (an
// interposer's own event) gets only the signal-safe write: finalizing there would re-enter it.
void finalize_first(int status) {
  if (!g_ready.load(std::memory_order_acquire) || in_vfork_child()) return;
  if (t_inside) {
    dftrace_flush_from_signal(true);
    return;
  }
  inside g;
  // The watchdog first (SIGALRM's disposition and the real-time timer are the application's,
  // but the process is leaving), then the trace.
  g_exit_status.store(status, std::memory_order_relaxed);
  struct sigaction sa {};
  sa.sa_handler = leave_now;
  sa.sa_flags = SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGALRM, &sa, nullptr);
  sigset_t alarm_only;
  sigemptyset(&alarm_only);
  sigaddset(&alarm_only, SIGALRM);
  ::pthread_sigmask(SIG_UNBLOCK, &alarm_only, nullptr);
  ::alarm(k_finalize_seconds);
  dftrace_flush_from_signal(true);
  dftrace_finalize();
}

}  // namespace

void _exit(int status) {
  DFTRACE_IO_REAL(_exit);
  finalize_first(status);
  real__exit(status);
  __builtin_unreachable();
}

void _Exit(int status) {
  DFTRACE_IO_REAL(_Exit);
  finalize_first(status);
  real__Exit(status);
  __builtin_unreachable();
}

// The registry's entries of the table's EXIT_OWN rows: those written here and the exec family
// (process_exec.cpp).
#define DFTRACE_IO_SHAPE_EXIT_OWN(cat, name, ...) DFTRACE_IO_REGISTER(name);
#include "plugins/io/shapes.hpp"
#define DFTRACE_IO_CALL DFTRACE_IO_WRAPPER
#include "dftrace/io_calls.def"
