/* attach_prog.c: a C program for dftrace attach's tests (test_attach.py), run with
 * DFTRACE_ENABLE=0 DFTRACE_ATTACH=1: it is not traced, and waits for an attach. Each step is a
 * region `work` with the argument `step`, then dftrace_step(). It says on stdout "ready" once
 * dftrace waits (after its first region), "on STEP" and "off STEP" when it sees tracing switch
 * on and off (dftrace_is_enabled before the step's region), and ends three steps after "off"
 * (or after MAXSTEPS steps).
 * Usage: attach_prog MAXSTEPS */
#include <dftrace/dftrace.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  const long max = atol(argv[1]);
  dftrace_node_t *work = dftrace_node_child(dftrace_category("attach"), "work");
  int seen_on = 0;
  long off_at = -1;
  for (long i = 0; i < max; ++i) {
    const int on = dftrace_is_enabled();
    if (on && !seen_on) {
      seen_on = 1;
      printf("on %ld\n", i);
    } else if (!on && seen_on && off_at < 0) {
      off_at = i;
      printf("off %ld\n", i);
    }
    dftrace_region_t r = dftrace_region_begin(work);
    dftrace_region_arg_int(r, "step", i);
    dftrace_region_end(r);
    if (i == 0) printf("ready\n");
    fflush(stdout);
    struct timespec t = {0, 5 * 1000000L};
    nanosleep(&t, NULL);
    dftrace_step();
    if (off_at >= 0 && i >= off_at + 3) break;
  }
  printf("done\n");
  return 0;
}
