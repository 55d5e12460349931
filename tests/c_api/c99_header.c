/* c99_header.c: includes only dftrace.h, compiles as strict C99 and uses every kind of call. */
#include <dftrace/dftrace.h>

int main(void) {
  dftrace_options_t o;
  dftrace_node_t *n;
  dftrace_region_t r;
  dftrace_iter_t it;
  dftrace_arg_t args[4] = {DFTRACE_ARG_I("i", 1), DFTRACE_ARG_D("d", 0.5), DFTRACE_ARG_S("s", "x"),
                           DFTRACE_ARG_B("b", true)};
  dftrace_options_init(&o);
  o.enable = 0; /* tracing off: every call below must be a harmless no-op */
  if (dftrace_init(&o) != DFTRACE_ERR_DISABLED) return 1;
  n = dftrace_node_find("compute.forward");
  if (n == NULL || dftrace_node_active_fast(n)) return 2;
  if (DFTRACE_REGION_BEGIN(n) != 0) return 6;
  r = dftrace_region_begin_ex(n, DFTRACE_USE_NODE_STATE, args, 4);
  if (r != 0) return 3;
  dftrace_region_arg_int(r, "k", 1);
  dftrace_region_end(r);
  dftrace_iter_begin(&it, n, 0, NULL, NULL, DFTRACE_USE_NODE_STATE);
  dftrace_iter_fetch(&it);
  dftrace_iter_body(&it);
  dftrace_iter_end(&it);
  dftrace_counter_int(n, "c", 1);
  dftrace_instant(n, args, 4);
  dftrace_node_update_int(dftrace_node_root(), "epoch", 1);
  dftrace_metadata("k", "v");
  if (dftrace_version()[0] == '\0') return 4;
  return dftrace_finalize() == DFTRACE_OK ? 0 : 5;
}
