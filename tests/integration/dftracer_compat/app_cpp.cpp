// app_cpp.cpp: a C++ application annotated for DFTracer 1.0.8, unchanged.
#include <dftracer/dftracer.h>
#include <unistd.h>

#include <cstring>

void bar() {
  DFTRACER_CPP_FUNCTION();
  DFTRACER_CPP_FUNCTION_UPDATE("depth", 2);
  usleep(100);
}

void foo() {
  DFTRACER_CPP_FUNCTION();
  DFTRACER_CPP_FUNCTION_UPDATE("key", 7);
  DFTRACER_CPP_FUNCTION_UPDATE("name", "value");
  usleep(100);
  {
    DFTRACER_CPP_REGION(CUSTOM);
    DFTRACER_CPP_REGION_UPDATE(CUSTOM, "size", 4096);
    bar();
    DFTRACER_CPP_REGION_START(CUSTOM_BLOCK);
    DFTRACER_CPP_REGION_DYN_UPDATE(CUSTOM_BLOCK, "op", "write");
    usleep(100);
    DFTRACER_CPP_REGION_END(CUSTOM_BLOCK);
  }
}

int main(int argc, char *argv[]) {
  if (argc > 1 && std::strcmp(argv[1], "1") == 0) {
    DFTRACER_CPP_INIT(nullptr, nullptr, nullptr);
  }
  DFTRACER_CPP_METADATA(meta, "key", "value");
  foo();
  DFTRACER_CPP_FINI();
  return 0;
}
