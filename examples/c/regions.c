/* regions.c: the C ABI by hand: init, nodes by path, typed arguments, iter, counters. */
#include <dftrace/dftrace.h>
#include <stdio.h>

static double work(int n) {
  double x = 0;
  for (int i = 0; i < n; ++i) x += (double)i * 0.5;
  return x;
}

int main(void) {
  dftrace_options_t opts;
  dftrace_options_init(&opts);
  opts.enable = 1; /* the environment and YAML still decide everything else */
  int rc = dftrace_init(&opts);
  if (rc != DFTRACE_OK) fprintf(stderr, "dftrace: %s\n", dftrace_status_string(rc));

  dftrace_node_t *fwd = dftrace_node_find("compute.forward");
  dftrace_node_t *solver = dftrace_node_child(dftrace_category("solver"), "iterate");
  dftrace_iter_t it;
  dftrace_iter_begin(&it, dftrace_node_find("pipeline.epoch"), 0, NULL, NULL,
                     DFTRACE_USE_NODE_STATE);
  for (int epoch = 0;; ++epoch) {
    dftrace_iter_fetch(&it);
    if (epoch == 3) break;
    dftrace_iter_body(&it);
    dftrace_node_update_int(dftrace_node_root(), "epoch", epoch);
    dftrace_arg_t args[] = {DFTRACE_ARG_S("phase", "train"), DFTRACE_ARG_D("lr", 0.01)};
    dftrace_region_t r = dftrace_region_begin_ex(fwd, DFTRACE_USE_NODE_STATE, args, 2);
    work(100000);
    dftrace_region_end(r);
    dftrace_region_t s = dftrace_region_begin(solver);
    dftrace_region_arg_int(s, "iterations", 42);
    work(50000);
    dftrace_region_end(s);
    dftrace_counter_int(dftrace_category("memory"), "resident_bytes", 1048576 * (epoch + 1));
  }
  dftrace_iter_end(&it);
  printf("%s\n", dftrace_status());
  return dftrace_finalize();
}
