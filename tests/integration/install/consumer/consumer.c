/* consumer.c: built with pkg-config only. */
#include <dftrace/dftrace.h>

int main(void) {
  dftrace_region_t r = dftrace_region_begin(dftrace_node_find("compute.backward"));
  dftrace_region_end(r);
  return dftrace_finalize();
}
