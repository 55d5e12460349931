// process_exit.cpp: _exit, _Exit, and kill of the process itself. A process that leaves through
// them skips exit()'s handlers, which finalize its trace: a forked child of Python's
// multiprocessing (a DataLoader worker) ends with os._exit(), and so do servers' workers and
// shells' children. Its buffered events and its end line would be lost; here the trace is finalized
// first (README.md, "Safety").
//
// _exit is also how a signal handler ends a process, and the handler may have interrupted the
// C library's allocator or one of dftrace's locks, which finalizing needs (a SIGALRM handler that
// calls _exit while the program allocates): finalize_before_image_ends (image_end.hpp) writes the
// end line the signal-safe way first and finalizes under a watchdog.
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "dftrace/plugin.h"
#include "plugins/io/image_end.hpp"
#include "plugins/io/interpose.hpp"

using namespace dftrace::io;

void _exit(int status) {
  DFTRACE_IO_REAL(_exit);
  finalize_before_image_ends();
  real__exit(status);
  __builtin_unreachable();
}

void _Exit(int status) {
  DFTRACE_IO_REAL(_Exit);
  finalize_before_image_ends();
  real__Exit(status);
  __builtin_unreachable();
}

namespace {

// Whether `sig`'s default action ends the process (terminate or core; not ignore, stop or
// continue).
bool ends_by_default(int sig) {
  switch (sig) {
    case SIGCHLD:
    case SIGCONT:
    case SIGURG:
    case SIGWINCH:
    case SIGSTOP:
    case SIGTSTP:
    case SIGTTIN:
    case SIGTTOU: return false;
    default: return sig > 0 && sig < NSIG;
  }
}

// A signal sent to this process (or its group) whose default action, in place, ends it, not blocked
// in the calling thread (so delivered to it before kill or raise returns, POSIX says).
bool signal_ends_this_process(int sig) {
  if (!ends_by_default(sig)) return false;
  if (sig == SIGKILL) return true;
  struct sigaction sa {};
  if (::sigaction(sig, nullptr, &sa) != 0) return false;
  // (dftrace's fatal-signal handler in front of the default action ends it too, after a
  // signal-safe flush only: finalized here instead, as with the default action alone)
  const bool by_default = !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_DFL;
  if (!by_default && !dftrace_default_action_behind(sig)) return false;
  sigset_t blocked;
  if (::pthread_sigmask(SIG_BLOCK, nullptr, &blocked) != 0) return false;
  return sigismember(&blocked, sig) == 0;
}

// kill's targets that include this process: itself, its process group (0 or -pgrp).
bool kill_reaches_this_process(pid_t pid) {
  return pid == ::getpid() || pid == 0 || (pid < -1 && -pid == ::getpgrp());
}

}  // namespace

// A process that kills itself leaves without exit()'s handlers too: Python, after an uncaught
// KeyboardInterrupt, puts SIGINT's default action back and sends itself SIGINT (so that its
// parent sees the death by the signal); signal.raise_signal() calls raise. The trace is
// finalized first, as for _exit; the signal then ends the process as it would have untraced.
int kill(pid_t pid, int sig) {
  DFTRACE_IO_REAL(kill);
  if (kill_reaches_this_process(pid) && signal_ends_this_process(sig)) {
    finalize_before_image_ends(sig);
  }
  return real_kill(pid, sig);
}

int raise(int sig) {
  DFTRACE_IO_REAL(raise);
  if (signal_ends_this_process(sig)) finalize_before_image_ends(sig);
  return real_raise(sig);
}

// A signal's default action put back by the application (Python puts SIGINT's back as it
// finalizes after an uncaught KeyboardInterrupt, before it kills itself with it): where the
// signal is a request to end, the runtime puts its fatal-signal handler in front of that default
// action again, as at initialisation, so that the signal ends the process as it would untraced,
// with its trace written.
namespace {

void default_action_set(int sig) {
  if (!g_ready.load(std::memory_order_acquire) || t_inside || in_vfork_child()) return;
  const int saved_errno = errno;
  dftrace_default_action_restored(sig);
  errno = saved_errno;
}

// `rc`, what a sigaction of `act` for `sig` returned.
int action_set(int sig, const struct sigaction *act, int rc) {
  if (rc == 0 && act && !(act->sa_flags & SA_SIGINFO) && act->sa_handler == SIG_DFL)
    default_action_set(sig);
  return rc;
}

// `previous`, what a call that set `handler` as the action of `sig` returned.
sighandler_t handler_set(int sig, sighandler_t handler, sighandler_t previous) {
  if (previous != SIG_ERR && handler == SIG_DFL) default_action_set(sig);
  return previous;
}

}  // namespace

int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  DFTRACE_IO_REAL(sigaction);
  return action_set(sig, act, real_sigaction(sig, act, old));
}

// glibc's sigaction under its other exported symbol (declared by no header).
extern "C" int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

int __sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  DFTRACE_IO_REAL(__sigaction);
  return action_set(sig, act, real___sigaction(sig, act, old));
}

// signal() sets the action inside the C library, without the sigaction symbol: a C program's
// signal(SIGINT, SIG_DFL) after a handler of its own.
sighandler_t signal(int sig, sighandler_t handler) {
  DFTRACE_IO_REAL(signal);
  return handler_set(sig, handler, real_signal(sig, handler));
}

// The C library's older calls set the action inside it too, past both symbols: System V's (the
// handler reset to the default as it runs), BSD's and ssignal (glibc's signal under other
// symbols), and sigset, whose SIG_HOLD blocks the signal instead and which returns SIG_HOLD where
// the signal was blocked (the default action is set then too, and the signal released: below).
// Each returns the C library's result, errno untouched.
sighandler_t sysv_signal(int sig, sighandler_t handler) {
  DFTRACE_IO_REAL(sysv_signal);
  return handler_set(sig, handler, real_sysv_signal(sig, handler));
}

sighandler_t __sysv_signal(int sig, sighandler_t handler) {
  DFTRACE_IO_REAL(__sysv_signal);
  return handler_set(sig, handler, real___sysv_signal(sig, handler));
}

// (declared for X/Open before 2008 only)
extern "C" sighandler_t bsd_signal(int sig, sighandler_t handler);

sighandler_t bsd_signal(int sig, sighandler_t handler) {
  DFTRACE_IO_REAL(bsd_signal);
  return handler_set(sig, handler, real_bsd_signal(sig, handler));
}

sighandler_t ssignal(int sig, sighandler_t handler) {
  DFTRACE_IO_REAL(ssignal);
  return handler_set(sig, handler, real_ssignal(sig, handler));
}

namespace {

// Whether `sig` is blocked in the calling thread.
bool held_here(int sig) {
  sigset_t mask;
  if (sig <= 0 || sig >= NSIG || ::pthread_sigmask(SIG_BLOCK, nullptr, &mask) != 0) return false;
  return sigismember(&mask, sig) == 1;
}

// sigset's SIG_DFL for a held signal, in glibc's steps (the action set, then the signal released;
// SIG_HOLD returned) with the handler put in front between them: a signal that came while held
// is delivered as the call releases it, and would otherwise find the default action alone.
sighandler_t default_of_held(int sig) {
  DFTRACE_IO_REAL(sigaction);
  struct sigaction act {};
  act.sa_handler = SIG_DFL;
  sigemptyset(&act.sa_mask);
  if (real_sigaction(sig, &act, nullptr) != 0) return SIG_ERR;
  default_action_set(sig);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  if (::sigprocmask(SIG_UNBLOCK, &one, nullptr) != 0) return SIG_ERR;
  return SIG_HOLD;
}

}  // namespace

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // (sigset: the application's call)
sighandler_t sigset(int sig, sighandler_t disposition) {
  DFTRACE_IO_REAL(sigset);
  if (disposition == SIG_DFL && held_here(sig)) return default_of_held(sig);
  return handler_set(sig, disposition, real_sigset(sig, disposition));
}
#pragma GCC diagnostic pop

// The registry's entries of the table's EXIT_OWN rows: those written here and the exec family
// (process_exec.cpp).
#define DFTRACE_IO_SHAPE_EXIT_OWN(cat, name, ...) DFTRACE_IO_REGISTER(name);
#include "plugins/io/shapes.hpp"
#define DFTRACE_IO_CALL DFTRACE_IO_WRAPPER
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // (sigset's entry)
#include "dftrace/io_calls.def"
#pragma GCC diagnostic pop
