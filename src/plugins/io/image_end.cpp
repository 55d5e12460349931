// image_end.cpp: finalize_before_image_ends, shared by _exit, _Exit and the exec family.
#include "plugins/io/image_end.hpp"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "dftrace/plugin.h"
#include "plugins/io/interpose.hpp"

namespace dftrace::io {

namespace {

// The thread under the watchdog (0: none) and where SIGALRM takes it back to. One at a time: a
// second thread ending the image meanwhile finalizes without a watchdog of its own (the first
// one's ends the wait of both when it leaves).
std::atomic<pid_t> g_watched{0};
sigjmp_buf g_back;

pid_t this_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// SIGALRM: on the watched thread, out of the finalizing; on another (the process-wide signal may
// land on any thread that has it unblocked), sent on to the watched one.
void watchdog_fired(int) {
  const pid_t watched = g_watched.load(std::memory_order_acquire);
  if (watched == 0) return;
  if (this_tid() != watched) {
    ::syscall(SYS_tgkill, ::getpid(), watched, SIGALRM);
    return;
  }
  siglongjmp(g_back, 1);
}

// What the watchdog changes, to be put back (an exec keeps an ignored disposition, the signal
// mask and a pending alarm).
struct saved_alarm {
  struct sigaction action {};
  sigset_t mask;
  unsigned pending = 0;  // seconds of the application's alarm() that were left
};

void arm(saved_alarm &s) {
  struct sigaction sa {};
  sa.sa_handler = watchdog_fired;
  sa.sa_flags = SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGALRM, &sa, &s.action);
  sigset_t alarm_only;
  sigemptyset(&alarm_only);
  sigaddset(&alarm_only, SIGALRM);
  ::pthread_sigmask(SIG_UNBLOCK, &alarm_only, &s.mask);
  s.pending = ::alarm(k_finalize_seconds);
}

void disarm(const saved_alarm &s) {
  ::alarm(0);
  ::sigaction(SIGALRM, &s.action, nullptr);
  ::pthread_sigmask(SIG_SETMASK, &s.mask, nullptr);
  if (s.pending) ::alarm(s.pending);  // (its time spent finalizing is not taken off)
}

}  // namespace

image_end finalize_before_image_ends(int sig) {
  if (!g_ready.load(std::memory_order_acquire) || in_vfork_child()) return image_end::untouched;
  const int saved_errno = errno;
  if (sig) dftrace_note_ending_signal(sig);
  if (t_inside) {
    dftrace_flush_from_signal(true);
    errno = saved_errno;
    return image_end::untouched;
  }
  inside g;
  const bool was_on = dftrace_is_enabled();
  // The end line first, the signal-safe way: the trace is whole whatever finalizing does.
  dftrace_flush_from_signal(true);
  pid_t none = 0;
  const bool watched = g_watched.compare_exchange_strong(none, this_tid());
  saved_alarm s;
  volatile bool abandoned = false;
  if (watched) {
    if (sigsetjmp(g_back, 1) == 0)
      arm(s);
    else
      abandoned = true;  // (back from watchdog_fired: the mask sigsetjmp saved is restored)
  }
  if (!abandoned) dftrace_finalize();  // (nothing to do where it never initialised)
  if (watched) {
    disarm(s);
    g_watched.store(0, std::memory_order_release);
  }
  errno = saved_errno;
  if (abandoned) return image_end::abandoned;
  return was_on ? image_end::finalized : image_end::untouched;
}

}  // namespace dftrace::io
