/* term_prog.c: a C program that records regions until it is killed: prints "ready" once its
 * first events are recorded, then loops. test_life.py sends it SIGTERM (or SIGINT) and checks
 * that it dies of the signal, as untraced, and that its trace ends with an end line naming it.
 * With "handled", it installs its own SIGTERM and SIGINT handlers before its first event (which
 * initialises dftrace), then prints "own" for each that is still its own after initialisation:
 * dftrace leaves a request to end that the application handles to the application.
 * With "back", it installs the same handlers, and once dftrace has initialised puts their
 * default actions back (SIGINT's with signal, SIGTERM's with sigaction) before "ready".
 * Usage: term_prog [handled|back] */
#include <dftrace/dftrace.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void on_request(int sig) { (void)sig; }

static void still_own(int sig, const char *name) {
  struct sigaction now;
  if (sigaction(sig, NULL, &now) == 0 && !(now.sa_flags & SA_SIGINFO) &&
      now.sa_handler == on_request)
    printf("own %s\n", name);
}

int main(int argc, char **argv) {
  const int handled = argc > 1 && strcmp(argv[1], "handled") == 0;
  const int back = argc > 1 && strcmp(argv[1], "back") == 0;
  if (handled || back) {
    signal(SIGTERM, on_request);
    signal(SIGINT, on_request);
  }
  dftrace_node_t *n = dftrace_node_child(dftrace_category("term"), "tick");
  for (long i = 0;; ++i) {
    dftrace_region_t r = dftrace_region_begin(n);
    dftrace_region_end(r);
    if (handled) {
      still_own(SIGTERM, "SIGTERM");
      still_own(SIGINT, "SIGINT");
      return 0;
    }
    if (i == 100 && back) {
      struct sigaction dfl;
      memset(&dfl, 0, sizeof dfl);
      dfl.sa_handler = SIG_DFL;
      sigemptyset(&dfl.sa_mask);
      signal(SIGINT, SIG_DFL);
      sigaction(SIGTERM, &dfl, NULL);
    }
    if (i == 100) {
      printf("ready\n");
      fflush(stdout);
    }
    if (i > 100) usleep(1000);
  }
}
