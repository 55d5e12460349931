// tree_prog.cpp: the AI tree through its C++ face, one mode per behaviour of docs/ai-tree.md.
// Usage: tree_prog MODE. Tracing is enabled by the environment.
#include <dftrace/dftrace.hpp>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using dftrace::ai;

namespace {

void spin(int n) {
  volatile double x = 0;
  for (int i = 0; i < n; ++i) x = x + i;
}

// A training loop touching every part of the tree.
int mode_loop() {
  const auto collate = ai.data.preprocess.derive("collate");
  {
    auto s = ai.checkpoint.init_node().scope();
    spin(100);
  }
  {
    auto s = ai.checkpoint.restart.scope();
    spin(100);
  }
  for (int epoch : ai.pipeline.epoch.iter(std::vector<int>{0, 1})) {
    ai.update("epoch", epoch);
    int step = 0;
    for (int item : ai.dataloader.fetch.iter(std::vector<int>{10, 20, 30})) {
      ai.update("step", step);
      {
        auto s = ai.data.item.scope({{"item", item}});
        spin(50);
      }
      {
        auto s = collate.scope();
        spin(50);
      }
      {
        auto s = ai.device.transfer.scope();
        spin(50);
      }
      {
        auto s = ai.compute.forward.scope();
        spin(50);
      }
      {
        auto s = ai.compute.backward.scope();
        spin(50);
      }
      {
        auto s = ai.comm.all_reduce.scope({{"bytes", 4096}});
        spin(50);
      }
      {
        auto s = ai.compute.step.scope();
        spin(50);
      }
      ++step;
    }
    {
      auto s = ai.checkpoint.capture.scope();
      spin(100);
    }
  }
  return 0;
}

// update(): subtree only, root reaches all, removal, read at the end, per-use not leaking.
int mode_update() {
  ai.compute.update("lr", 0.5);  // e1: forward has lr, item does not
  { auto a = ai.compute.forward.scope(); }
  { auto b = ai.data.item.scope(); }
  ai.update("epoch", 1);  // root: everyone
  { auto c = ai.data.item.scope(); }
  {
    auto d = ai.compute.forward.scope();  // value when the event ENDS
    ai.update("epoch", 2);
  }
  { auto e = ai.compute.forward.scope({{"layer", 7}}); }  // per-use
  { auto f = ai.compute.forward.scope(); }                // layer must not leak here
  ai.compute.remove("lr");
  { auto g = ai.compute.forward.scope(); }
  ai.compute.forward.update("note", "x");  // only forward's subtree
  { auto h = ai.compute.backward.scope(); }
  { auto i = ai.compute.forward.scope(); }
  return 0;
}

// enable/disable at every level and per use.
int mode_enable() {
  { auto s = ai.comm.barrier.scope(); }  // DFTRACE_CATEGORIES / YAML may switch these
  { auto s = ai.comm.all_reduce.scope(); }
  ai.compute.disable();
  { auto s = ai.compute.forward.scope(); }                        // off
  { auto s = ai.compute.forward.scope(dftrace::use::force_on); }  // forced on
  { auto s = ai.data.item.scope(); }                              // on
  ai.compute.forward.enable();
  { auto s = ai.compute.forward.scope(); }                   // on
  { auto s = ai.compute.backward.scope(); }                  // still off
  { auto s = ai.data.item.scope(dftrace::use::force_off); }  // forced off
  ai.disable();
  { auto s = ai.data.item.scope(); }  // off
  // A "decorated" function created while disabled, run after enabling: traced.
  auto fn = ai.pipeline.train.wrap([] { spin(10); });
  ai.enable();
  fn();
  return 0;
}

// metadata (streaming) mode: CM lines instead of the epoch events.
int mode_metadata() {
  for (int epoch = 0; epoch < 2; ++epoch) {
    ai.pipeline.epoch.mark_start();
    { auto s = ai.compute.forward.scope(); }
    ai.pipeline.epoch.mark_end();
  }
  return 0;
}

int recurse(int depth) {
  auto s = ai.compute.forward.scope({{"depth", depth}});
  return depth == 0 ? 0 : 1 + recurse(depth - 1);
}

// Section 8's defects, each of which must not happen.
int mode_defects() {
  // Two threads inside the same node at once, each with its own nesting.
  std::atomic<int> inside{0};
  auto worker = [&](int id) {
    auto outer = ai.compute.forward.scope({{"thread", id}});
    ++inside;
    while (inside.load() < 2) {
    }
    auto inner = ai.compute.backward.scope({{"thread", id}});
    spin(100);
  };
  std::thread t1(worker, 1), t2(worker, 2);
  t1.join();
  t2.join();
  // Recursion through one node.
  recurse(3);
  // break out of an iter loop: the open block ends, nothing leaks.
  for (int x : ai.dataloader.fetch.iter(std::vector<int>{1, 2, 3, 4})) {
    if (x == 2) break;
  }
  // An exception in the body of an iter loop.
  try {
    for (int x : ai.pipeline.epoch.iter(std::vector<int>{1, 2, 3})) {
      auto s = ai.compute.step.scope();
      if (x == 2) throw std::runtime_error("boom");
    }
  } catch (const std::exception &) {
  }
  // After all that, a fresh event is back at level 1 with no parent.
  { auto s = ai.checkpoint.capture.scope(); }
  // The init node as a scope works (pydftracer's `with ai.checkpoint.init:` raised).
  { auto s = ai.checkpoint.init_node().scope(); }
  // Nodes created after initialisation nest normally.
  { auto s = ai.compute.derive("late").scope(); }
  return 0;
}

// iter(count), as Python's range(count): the items 0..count-1, none for 0 or a negative count.
int mode_count() {
  int sum = 0;
  for (int epoch : ai.pipeline.epoch.iter(3)) {
    { auto s = ai.compute.forward.scope({{"epoch_item", epoch}}); }
    sum += epoch;
  }
  for (long x : ai.pipeline.train.iter(0L)) sum += 100 + static_cast<int>(x);
  for (int x : ai.pipeline.test.iter(-4)) sum += 1000 + x;
  for (unsigned x : ai.dataloader.fetch.iter(2u)) sum += 10 * static_cast<int>(x);
  std::printf("sum %d\n", sum);
  return 0;
}

// start()/stop() by node (the runtime's stack): a node nested in itself, another node inside
// it that ends after it, and stops with nothing open (here, and on another thread).
int mode_start_stop() {
  ai.pipeline.train.start();
  ai.compute.forward.start();
  ai.compute.forward.start();
  ai.compute.backward.start();
  ai.compute.forward.stop();  // the inner forward, while backward (inside it) is open
  ai.compute.backward.stop();
  ai.compute.forward.stop();
  ai.compute.forward.stop();                             // nothing open: nothing
  std::thread([] { ai.pipeline.train.stop(); }).join();  // open here, not there: nothing
  ai.pipeline.train.stop();
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  const std::string m = argv[1];
  int rc = 2;
  if (m == "loop")
    rc = mode_loop();
  else if (m == "update")
    rc = mode_update();
  else if (m == "enable")
    rc = mode_enable();
  else if (m == "metadata")
    rc = mode_metadata();
  else if (m == "defects")
    rc = mode_defects();
  else if (m == "count")
    rc = mode_count();
  else if (m == "start_stop")
    rc = mode_start_stop();
  dftrace::finalize();
  return rc;
}
