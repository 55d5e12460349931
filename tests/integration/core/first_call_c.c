/* first_call_c.c: one C entry point as the process's first dftrace call (tracing enabled by
 * the environment, no dftrace_init), then a few more of the same; finalized at exit.
 * Modes: region, instant, counter, mark, explicit, iter. */
#include <dftrace/dftrace.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  dftrace_node_t *fwd = dftrace_node_find("compute.forward");
  int i;
  if (strcmp(mode, "region") == 0) {
    for (i = 0; i < 3; ++i) dftrace_region_end(dftrace_region_begin(fwd));
  } else if (strcmp(mode, "instant") == 0) {
    for (i = 0; i < 3; ++i) dftrace_instant(dftrace_node_find("checkpoint.capture"), NULL, 0);
  } else if (strcmp(mode, "counter") == 0) {
    for (i = 0; i < 3; ++i) dftrace_counter_int(dftrace_category("memory"), "bytes", i);
  } else if (strcmp(mode, "mark") == 0) {
    dftrace_node_t *epoch = dftrace_node_find("pipeline.epoch");
    for (i = 0; i < 3; ++i) {
      dftrace_node_mark_start(epoch);
      dftrace_region_end(dftrace_region_begin(fwd));
      dftrace_node_mark_end(epoch);
    }
  } else if (strcmp(mode, "explicit") == 0) {
    for (i = 0; i < 3; ++i) {
      const uint64_t a = dftrace_now_ns();
      const uint64_t b = dftrace_now_ns();
      dftrace_event_complete(fwd, a, b, 7, NULL, 0);
    }
  } else if (strcmp(mode, "iter") == 0) {
    dftrace_iter_t it;
    dftrace_iter_begin(&it, dftrace_node_find("pipeline.epoch"), 0, NULL, NULL,
                       DFTRACE_USE_NODE_STATE);
    for (i = 0;; ++i) {
      dftrace_iter_fetch(&it);
      if (i == 3) break;
      dftrace_iter_body(&it);
    }
    dftrace_iter_end(&it);
  } else {
    fprintf(stderr, "unknown mode '%s'\n", mode);
    return 2;
  }
  return 0;
}
