// disabled_build.cpp: with -DDFTRACE_DISABLE the C++ face and macros compile to nothing; this
// program is linked WITHOUT libdftrace, so any call left behind fails the link.
#include <dftrace/dftrace.hpp>

#include <vector>

static int work(int x) {
  DFTRACE_FUNCTION("APP");
  return x * 2;
}

int main() {
  dftrace::init();
  using dftrace::ai;
  int sum = 0;
  for (int v : ai.dataloader.fetch.iter(std::vector<int>{1, 2, 3})) {
    DFTRACE_REGION("compute.forward");
    auto s = ai.compute.backward.scope({{"bytes", 1}});
    s.arg("k", 2);
    ai.update("epoch", 1).update({{"step", 2}});
    ai.compute.disable();
    ai.compute.enable();
    ai.pipeline.epoch.start();
    ai.pipeline.epoch.stop();
    ai.pipeline.epoch.mark_start();
    sum += ai.compute.forward.wrap(work)(v);
  }
  for (int epoch : ai.pipeline.epoch.iter(3)) sum += epoch;  // 0 + 1 + 2
  dftrace::finalize();
  return sum == 15 ? 0 : 1;
}
