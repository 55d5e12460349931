// first_call.cpp: one C++ entry point as the process's first dftrace call (tracing enabled by
// the environment, no init), then a few more; finalized at exit. Modes: scope, iter, update,
// mark (as the README's examples begin).
#include <dftrace/dftrace.hpp>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  using dftrace::ai;
  if (mode == "scope") {
    for (int i = 0; i < 3; ++i) auto s = ai.compute.forward.scope();
  } else if (mode == "iter") {
    for (int e : ai.pipeline.epoch.iter(std::vector<int>{0, 1, 2})) {
      auto s = ai.compute.forward.scope();
      (void)e;
    }
  } else if (mode == "update") {
    ai.update("epoch", 1);
    for (int i = 0; i < 3; ++i) auto s = ai.compute.forward.scope();
  } else if (mode == "mark") {
    for (int i = 0; i < 3; ++i) {
      ai.pipeline.epoch.mark_start();
      { auto s = ai.compute.forward.scope(); }
      ai.pipeline.epoch.mark_end();
    }
  } else {
    std::fprintf(stderr, "unknown mode '%s'\n", mode.c_str());
    return 2;
  }
  return 0;
}
