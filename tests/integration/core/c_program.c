/* c_program.c: a C99 application using the C ABI directly (init options, nodes, iter). */
#include <dftrace/dftrace.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  dftrace_options_t o;
  dftrace_iter_t it;
  int epoch;
  dftrace_node_t *fwd, *solver;
  dftrace_options_init(&o);
  o.enable = 1;
  if (argc > 1) o.output_file = argv[1];
  if (dftrace_init(&o) != DFTRACE_OK) return 1;
  fwd = dftrace_node_find("compute.forward");
  solver = dftrace_node_child(dftrace_category("solver"), "iterate");
  dftrace_iter_begin(&it, dftrace_node_find("pipeline.epoch"), 0, NULL, NULL,
                     DFTRACE_USE_NODE_STATE);
  for (epoch = 0;; ++epoch) {
    dftrace_region_t r, s;
    dftrace_arg_t args[2] = {DFTRACE_ARG_S("phase", "train"), DFTRACE_ARG_D("lr", 0.01)};
    dftrace_iter_fetch(&it);
    if (epoch == 3) break;
    dftrace_iter_body(&it);
    dftrace_node_update_int(dftrace_node_root(), "epoch", epoch);
    r = dftrace_region_begin_ex(fwd, DFTRACE_USE_NODE_STATE, args, 2);
    dftrace_region_end(r);
    s = dftrace_region_begin(solver);
    dftrace_region_arg_int(s, "iterations", 42 + epoch);
    dftrace_region_end(s);
  }
  dftrace_iter_end(&it);
  return dftrace_finalize() == DFTRACE_OK ? 0 : 1;
}
