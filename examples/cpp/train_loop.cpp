// train_loop.cpp: a training loop annotated with the dftrace AI tree, as a user would write it.
// Run with DFTRACE_ENABLE=1 (and DFTRACE_LOG_FILE=<prefix>) to write a trace.
#include <dftrace/dftrace.hpp>

#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

namespace {

double work(int n) {  // stands in for real computation
  double x = 0;
  for (int i = 0; i < n; ++i) x += std::sqrt(static_cast<double>(i));
  return x;
}

struct dataset {
  std::vector<int> items;
  explicit dataset(int n) {
    auto s = dftrace::ai.data.init_node().scope();  // "data.init"
    for (int i = 0; i < n; ++i) items.push_back(i);
  }
};

}  // namespace

int main() {
  using dftrace::ai;
  const auto collate = ai.data.preprocess.derive("collate");  // "preprocess.collate", cat data
  const auto forward = ai.compute.forward.wrap([](int b) { return work(2000 + b); });

  dataset data(8);
  {
    auto s = ai.checkpoint.restart.scope({{"path", "/tmp/ckpt-0"}});
    work(5000);
  }
  auto train = ai.pipeline.train.scope();
  int epoch = 0;
  for (int e : ai.pipeline.epoch.iter(std::vector<int>{0, 1})) {
    epoch = e;
    int step = 0;
    for (int item : ai.dataloader.fetch.iter(data.items)) {
      ai.update("epoch", epoch).update("step", step);  // every event below carries epoch/step
      {
        auto s = ai.data.item.scope();
        work(500 + item);
      }
      {
        auto s = collate.scope();
        work(300);
      }
      {
        auto s = ai.device.transfer.scope({{"bytes", 4096}});
        work(200);
      }
      forward(item);
      {
        auto s = ai.compute.backward.scope();
        work(4000);
      }
      {
        auto s = ai.comm.all_reduce.scope({{"bytes", 1 << 20}});
        work(1000);
      }
      {
        auto s = ai.compute.step.scope();
        work(500);
      }
      ++step;
    }
    auto s = ai.checkpoint.capture.scope({{"epoch_end", true}});
    work(3000);
  }
  train.end();
  dftrace::finalize();
  return 0;
}
