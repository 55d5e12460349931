/* dftracer_header.c: DFTracer's C macros compile as strict C99 against dftrace. */
#include <dftracer/dftracer.h>

static int work(void) {
  DFTRACER_C_FUNCTION_START();
  DFTRACER_C_FUNCTION_UPDATE_INT("n", 1);
  DFTRACER_C_REGION_START(BLOCK);
  DFTRACER_C_REGION_UPDATE_STR(BLOCK, "k", "v");
  DFTRACER_C_REGION_END(BLOCK);
  DFTRACER_C_FUNCTION_END();
  return 0;
}

int main(void) {
  DFTRACER_C_INIT(NULL, NULL, NULL);
  DFTRACER_C_METADATA(meta, "key", "value");
  work();
  DFTRACER_C_FINI();
  return 0;
}
