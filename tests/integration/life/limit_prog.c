/* limit_prog.c: a program that lives within the address space it is given (test_life.py runs it
 * under a sweep of RLIMIT_AS): its own 4 MiB first, then regions in a loop, many events with
 * arguments, on the main thread and one more (so that the writer has a backlog and makes
 * compressor helpers). Exits 0 when its own work succeeded, whatever tracing did.
 * Usage: limit_prog EVENTS */
#include <dftrace/dftrace.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long g_events = 100000;

static void *work(void *arg) {
  dftrace_node_t *cat = dftrace_category("limit");
  dftrace_node_t *step = dftrace_node_child(cat, (const char *)arg);
  for (long i = 0; i < g_events; ++i) {
    dftrace_region_t r = dftrace_region_begin(step);
    dftrace_region_arg_int(r, "i", i);
    dftrace_region_arg_string(r, "what", "a string argument that makes the line longer");
    dftrace_region_end(r);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) g_events = atol(argv[1]);
  char *p = malloc(4u << 20);
  if (!p) return 3;
  memset(p, 1, 4u << 20);
  pthread_t t;
  int threaded = pthread_create(&t, NULL, work, "worker") == 0;
  work("main");
  if (threaded) pthread_join(t, NULL);
  printf("limit_prog: %ld events each, %s\n", g_events, threaded ? "2 threads" : "1 thread");
  free(p);
  return 0;
}
