/* nvtx_prog.c: regions and instants through the C ABI, on the main thread and on a second
 * thread, with one region ended before the region inside it (out of order). With
 * nvtx.forward, test_nvtx.py checks the NVTX calls against this program's own trace. With
 * NVTX_PROG_SWITCHED in its environment, a last region `app.switched`. */
#include <dftrace/dftrace.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void step(void) {
  dftrace_region_t s = dftrace_region_begin(dftrace_node_find("compute.step"));
  dftrace_region_t f = dftrace_region_begin(dftrace_node_find("compute.forward"));
  dftrace_instant(dftrace_node_child(dftrace_category("app"), "marker"), NULL, 0);
  dftrace_region_end(f);
  dftrace_region_end(dftrace_region_begin(dftrace_node_find("compute.backward")));
  dftrace_region_end(s);
}

static void *worker(void *arg) {
  (void)arg;
  dftrace_region_t l = dftrace_region_begin(dftrace_node_find("dataloader.fetch"));
  dftrace_region_end(dftrace_region_begin(dftrace_node_find("data.preprocess")));
  dftrace_region_end(l);
  return NULL;
}

int main(int argc, char **argv) {
  dftrace_options_t o;
  pthread_t t;
  dftrace_region_t outer, inner;
  dftrace_options_init(&o);
  o.enable = 1;
  if (argc > 1) o.output_file = argv[1];
  if (dftrace_init(&o) != DFTRACE_OK) return 1;
  step();
  step();
  /* The outer region ends first: its NVTX range closes when the inner one does. */
  outer = dftrace_region_begin(dftrace_node_find("checkpoint.capture"));
  inner = dftrace_region_begin(dftrace_node_find("device.transfer"));
  dftrace_region_end(outer);
  dftrace_region_end(inner);
  /* A cancelled region leaves no event, and its NVTX range closes too. */
  dftrace_region_cancel(dftrace_region_begin(dftrace_node_find("comm.all_reduce")));
  if (pthread_create(&t, NULL, worker, NULL) != 0 || pthread_join(t, NULL) != 0) return 1;
  /* With NVTX_PROG_SWITCHED: a region the tool switches dftrace off in (as it is pushed). */
  if (getenv("NVTX_PROG_SWITCHED"))
    dftrace_region_end(
        dftrace_region_begin(dftrace_node_child(dftrace_category("app"), "switched")));
  return dftrace_finalize() == DFTRACE_OK ? 0 : 1;
}
