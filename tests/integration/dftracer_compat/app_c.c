/* app_c.c: an application annotated for DFTracer 1.0.8, unchanged (only the build differs). */
#include <dftracer/dftracer.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int bar(void) {
  DFTRACER_C_FUNCTION_START();
  usleep(100);
  DFTRACER_C_FUNCTION_END();
  return 0;
}

void foo(void) {
  DFTRACER_C_FUNCTION_START();
  DFTRACER_C_FUNCTION_UPDATE_INT("key", 0);
  DFTRACER_C_FUNCTION_UPDATE_STR("key2", "0");
  usleep(100);
  DFTRACER_C_REGION_START(CUSTOM);
  DFTRACER_C_REGION_UPDATE_INT(CUSTOM, "size", 1024);
  DFTRACER_C_REGION_UPDATE_STR(CUSTOM, "op", "read");
  bar();
  DFTRACER_C_REGION_START(CUSTOM_BLOCK);
  usleep(100);
  DFTRACER_C_REGION_END(CUSTOM_BLOCK);
  DFTRACER_C_REGION_END(CUSTOM);
  DFTRACER_C_FUNCTION_END();
}

int main(int argc, char *argv[]) {
  int init = 0;
  if (argc > 1 && strcmp(argv[1], "1") == 0) {
    DFTRACER_C_INIT(NULL, NULL, NULL);
    init = 1;
  }
  DFTRACER_C_METADATA(meta, "key", "value");
  foo();
  if (init) {
    DFTRACER_C_FINI();
  }
  return 0;
}
