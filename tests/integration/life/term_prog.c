/* term_prog.c: a C program that records regions until it is killed: prints "ready" once its
 * first events are recorded, then loops. test_life.py sends it SIGTERM (or SIGINT) and checks
 * that it dies of the signal, as untraced, and that its trace ends with an end line naming it.
 * Usage: term_prog */
#include <dftrace/dftrace.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
  dftrace_node_t *n = dftrace_node_child(dftrace_category("term"), "tick");
  for (long i = 0;; ++i) {
    dftrace_region_t r = dftrace_region_begin(n);
    dftrace_region_end(r);
    if (i == 100) {
      printf("ready\n");
      fflush(stdout);
    }
    if (i > 100) usleep(1000);
  }
}
