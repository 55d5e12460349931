/* legacy_signal_prog.c: a C program that sets SIGINT's action with one of the C library's older
 * calls (sysv_signal, __sysv_signal, bsd_signal, ssignal, sigset, __sigaction; or signal or
 * sigaction), handles a first SIGINT, then puts SIGINT's default action back with the same call
 * and waits for a second SIGINT, which ends it. test_life.py checks that it dies of SIGINT as
 * untraced, that its trace ends with an end line naming the signal, and that what it prints is
 * the same: what a call on an invalid signal returned and its errno, what each later call
 * returned ("own", "dfl", "ign", "hold", "err", "other"), and "ready" before each SIGINT is
 * awaited. With "hold" (sigset only), SIGINT is held (SIG_HOLD) before its default action is put
 * back: sigset then returns SIG_HOLD and releases it. With "pending" (sigset only), the second
 * SIGINT comes while SIGINT is held, and sigset(SIGINT, SIG_DFL) delivers it as it releases it.
 * Usage: legacy_signal_prog
 *   sysv_signal|__sysv_signal|bsd_signal|ssignal|sigset|__sigaction|signal|sigaction
 *   [hold|pending] */
#define _GNU_SOURCE
#include <dftrace/dftrace.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* (sigset: what is tested) */

typedef void (*handler_t)(int);
extern handler_t __sysv_signal(int, handler_t);
extern handler_t sigset(int, handler_t);
extern handler_t bsd_signal(int, handler_t);
extern handler_t sysv_signal(int, handler_t);
extern int __sigaction(int, const struct sigaction *, struct sigaction *);

static volatile sig_atomic_t g_seen = 0;
static void on_int(int sig) {
  (void)sig;
  g_seen = 1;
}

// sigaction's way, through one of its symbols: what it reports of the old action.
static handler_t by_sigaction(int (*set)(int, const struct sigaction *, struct sigaction *),
                              int sig, handler_t h) {
  struct sigaction act, old;
  memset(&act, 0, sizeof act);
  act.sa_handler = h;
  sigemptyset(&act.sa_mask);
  return set(sig, &act, &old) == 0 ? old.sa_handler : SIG_ERR;
}

static handler_t set_with(const char *call, int sig, handler_t h) {
  if (strcmp(call, "sigaction") == 0) return by_sigaction(sigaction, sig, h);
  if (strcmp(call, "__sigaction") == 0) return by_sigaction(__sigaction, sig, h);
  if (strcmp(call, "sysv_signal") == 0) return sysv_signal(sig, h);
  if (strcmp(call, "__sysv_signal") == 0) return __sysv_signal(sig, h);
  if (strcmp(call, "bsd_signal") == 0) return bsd_signal(sig, h);
  if (strcmp(call, "sigset") == 0) return sigset(sig, h);
  if (strcmp(call, "ssignal") == 0) return ssignal(sig, h);
  return signal(sig, h);
}

static const char *name_of(handler_t h) {
  if (h == on_int) return "own";
  if (h == SIG_DFL) return "dfl";
  if (h == SIG_IGN) return "ign";
  if (h == SIG_HOLD) return "hold";
  if (h == SIG_ERR) return "err";
  return "other";
}

static void say(const char *what) {
  printf("%s\n", what);
  fflush(stdout);
}

int main(int argc, char **argv) {
  const char *call = argc > 1 ? argv[1] : "signal";
  const int hold = argc > 2 && strcmp(argv[2], "hold") == 0;
  const int pending = argc > 2 && strcmp(argv[2], "pending") == 0;
  dftrace_node_t *n = dftrace_node_child(dftrace_category("legacy"), "tick");
  dftrace_region_end(dftrace_region_begin(n));  // (initialises dftrace: its handlers go in)
  errno = 0;
  const handler_t bad = set_with(call, 0, SIG_DFL);
  printf("invalid %s errno %d\n", name_of(bad), errno);
  set_with(call, SIGINT, SIG_IGN);  // (its return is dftrace's handler, as at initialisation)
  say(name_of(set_with(call, SIGINT, on_int)));
  say("ready");
  while (!g_seen) dftrace_region_end(dftrace_region_begin(n)), usleep(1000);
  if (hold || pending) say(name_of(set_with(call, SIGINT, SIG_HOLD)));
  if (pending) {  // (the second SIGINT comes while held: sigset's release delivers it)
    say("ready");
    sigset_t waiting;
    do {
      dftrace_region_end(dftrace_region_begin(n));
      usleep(1000);
    } while (sigpending(&waiting) != 0 || sigismember(&waiting, SIGINT) != 1);
  }
  say(name_of(set_with(call, SIGINT, SIG_DFL)));  // (sigset releases a held SIGINT)
  if (!pending) say("ready");
  for (;;) {
    dftrace_region_end(dftrace_region_begin(n));
    usleep(1000);
  }
}
