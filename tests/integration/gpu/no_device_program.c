/* no_device_program.c: an annotated program without CUDA, for tracing with gpu.cupti on
 * where no GPU (or no CUPTI) is present: its regions must all reach the trace. */
#include <dftrace/dftrace.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  dftrace_node_t *epoch = dftrace_node_find("pipeline.epoch");
  dftrace_node_t *forward = dftrace_node_find("compute.forward");
  if (!epoch || !forward) return 2;
  dftrace_region_t e = dftrace_region_begin(epoch);
  volatile double x = 0;
  for (int i = 0; i < 5; ++i) {
    dftrace_region_t f = dftrace_region_begin(forward);
    for (int j = 0; j < 100000; ++j) x += j * 0.5;
    dftrace_region_end(f);
  }
  dftrace_region_end(e);
  printf("done %s\n", dftrace_is_enabled() ? "traced" : "untraced");
  /* The effective gpu.* keys, for the checker: which layer set them, and to what. */
  const char *config = dftrace_config_describe();
  for (const char *p = config; p && *p;) {
    const char *e = strchr(p, '\n');
    const size_t len = e ? (size_t)(e - p) : strlen(p);
    if (strncmp(p, "gpu.", 4) == 0) printf("%.*s\n", (int)len, p);
    p = e ? e + 1 : p + len;
  }
  return 0;
}
