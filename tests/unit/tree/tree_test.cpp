// tree_test.cpp: node names and categories, derive, update propagation, enable state, rules.
#include "tree/tree.hpp"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

using namespace dftrace::detail;

namespace {
std::string args_of(node *n) {
  std::string s(4096, '\0');
  long got = n->args_src.load()->copy_to(s.data(), s.size());
  s.resize(static_cast<size_t>(got));
  return s;
}
}  // namespace

TEST(Tree, BuiltinNodesHaveSpecNamesAndCategories) {
  tree t;
  EXPECT_EQ(t.root()->name, "ai_root");
  EXPECT_EQ(t.root()->cat, "ai_root");
  struct expect {
    const char *path, *name, *cat;
  } cases[] = {{"compute", "compute", "compute"},
               {"compute.forward", "forward", "compute"},
               {"compute.step", "step", "compute"},
               {"data.preprocess", "preprocess", "data"},
               {"data.item", "item", "data"},
               {"dataloader.fetch", "fetch", "dataloader"},
               {"comm.all_to_all", "all_to_all", "comm"},
               {"comm.reduce_scatter", "reduce_scatter", "comm"},
               {"device.transfer", "transfer", "device"},
               {"checkpoint.restart", "restart", "checkpoint"},
               {"pipeline.epoch", "epoch", "pipeline"},
               {"pipeline.test", "test", "pipeline"}};
  for (const auto &c : cases) {
    node *n = t.find(c.path);
    ASSERT_NE(n, nullptr) << c.path;
    EXPECT_EQ(n->name, c.name);
    EXPECT_EQ(n->cat, c.cat);
    EXPECT_EQ(n->path, c.path);
  }
  EXPECT_EQ(t.find("ai.compute.forward"), t.find("compute.forward"));
  EXPECT_EQ(t.find(""), t.root());
  EXPECT_EQ(t.find("compute.nope"), nullptr);
  EXPECT_EQ(t.find("compute..forward"), nullptr);
}

// A node's name and path (its category is checked where the test says which).
static void expect_named(const node *n, const std::string &name, const std::string &path) {
  ASSERT_NE(n, nullptr) << path;
  EXPECT_EQ(n->name, name);
  EXPECT_EQ(n->path, path);
}

// A module path derived from compute.forward is one key with dots; its node's path must lead
// back to it (the Python face makes its nodes from paths), not to a chain of new children.
TEST(Tree, DerivedKeyWithDotsIsFoundByItsPath) {
  tree t;
  node *fwd = t.find("compute.forward");
  node *layer = t.derive(fwd, "transformer.h.0.ln_1");
  expect_named(layer, "forward.transformer.h.0.ln_1", "compute.forward.transformer.h.0.ln_1");
  EXPECT_EQ(t.find(layer->path), layer);
  node *block = t.derive(fwd, "transformer.h.0");  // a prefix of the other key
  EXPECT_EQ(t.find(block->path), block);
  EXPECT_EQ(t.find(layer->path), layer);
  EXPECT_EQ(t.find("compute.forward.transformer.h"), nullptr);
  EXPECT_EQ(t.find("compute.forward.transformer..h.0"), nullptr);
  node *plain = t.child(t.child(fwd, "transformer"), "x");  // a real chain still wins first
  EXPECT_EQ(t.find("compute.forward.transformer.x"), plain);
}

TEST(Tree, DeriveNamesAndIdempotence) {
  tree t;
  node *pre = t.find("data.preprocess");
  node *collate = t.derive(pre, "collate");
  expect_named(collate, "preprocess.collate", "data.preprocess.collate");
  EXPECT_EQ(collate->cat, "data");
  EXPECT_EQ(t.derive(pre, "collate"), collate);
  EXPECT_EQ(t.find("data.preprocess.collate"), collate);
  EXPECT_EQ(t.iter_of(t.find("pipeline.epoch"))->name, "epoch.iter");
  EXPECT_EQ(t.block_of(t.find("pipeline.epoch"))->name, "epoch.block");
  EXPECT_EQ(t.derive(t.find("checkpoint"), "init")->name, "checkpoint.init");
  node *custom = t.verbatim(t.find("dataloader.fetch"), "my_fetch");
  EXPECT_EQ(custom->name, "my_fetch");
  EXPECT_EQ(custom->cat, "dataloader");
}

TEST(Tree, UserCategoriesAndChildren) {
  tree t;
  node *c = t.category("C_APP");
  EXPECT_EQ(c->name, "C_APP");
  EXPECT_EQ(c->cat, "C_APP");
  node *f = t.child(c, "main");
  EXPECT_EQ(f->name, "main");
  EXPECT_EQ(f->cat, "C_APP");
  EXPECT_EQ(t.category("C_APP"), c);
  EXPECT_EQ(t.category(""), nullptr);
}

TEST(Tree, UpdateReachesTheSubtreeOnly) {
  tree t;
  t.update(t.find("compute"), "epoch", std::string_view("3"));
  EXPECT_EQ(args_of(t.find("compute.forward")), "\"epoch\":3");
  EXPECT_EQ(args_of(t.find("compute")), "\"epoch\":3");
  EXPECT_EQ(args_of(t.find("data.item")), "");
  // The root reaches everything, including nodes created later (they inherit).
  t.update(t.root(), "step", std::string_view("7"));
  EXPECT_EQ(args_of(t.find("data.item")), "\"step\":7");
  EXPECT_EQ(args_of(t.find("compute.forward")), "\"epoch\":3,\"step\":7");
  node *late = t.derive(t.find("compute.forward"), "late");
  EXPECT_EQ(args_of(late), "\"epoch\":3,\"step\":7");
  // Overwrite keeps the position; removal removes.
  t.update(t.root(), "epoch", std::string_view("4"));
  EXPECT_EQ(args_of(t.find("compute.forward")), "\"epoch\":4,\"step\":7");
  t.update(t.root(), "epoch", std::nullopt);
  EXPECT_EQ(args_of(t.find("compute.forward")), "\"step\":7");
  EXPECT_EQ(args_of(late), "\"step\":7");
}

TEST(Tree, SharersReadTheNearestListAfterAMiddleNodeGetsItsOwn) {
  // Nodes that share their parent's arguments read the nearest ancestor's fragment; when a
  // middle node gets a list of its own, the sharers below it (created before or after) follow it,
  // and the sharers elsewhere do not.
  tree t;
  node *deep = t.derive(t.derive(t.find("compute.forward"), "a"), "b");  // before
  t.update(t.root(), "epoch", std::string_view("1"));
  EXPECT_EQ(args_of(deep), "\"epoch\":1");
  t.update(t.find("compute.forward"), "x", std::string_view("2"));
  node *later = t.derive(t.find("compute.forward"), "c");  // after
  EXPECT_EQ(args_of(deep), "\"epoch\":1,\"x\":2");
  EXPECT_EQ(args_of(later), "\"epoch\":1,\"x\":2");
  EXPECT_EQ(args_of(t.find("compute.backward")), "\"epoch\":1");
  EXPECT_EQ(args_of(t.find("compute")), "\"epoch\":1");
  // A root update reaches the list holders and, through them, every sharer.
  t.update(t.root(), "epoch", std::string_view("5"));
  EXPECT_EQ(args_of(deep), "\"epoch\":5,\"x\":2");
  EXPECT_EQ(args_of(later), "\"epoch\":5,\"x\":2");
  EXPECT_EQ(args_of(t.find("compute.backward")), "\"epoch\":5");
  // Only list holders store a fragment: sharers read through their source pointer.
  EXPECT_EQ(deep->args_src.load(), &t.find("compute.forward")->args);
  EXPECT_EQ(t.find("compute.backward")->args_src.load(), &t.root()->args);
}

TEST(Tree, ReservedKeysAreRenamed) {
  tree t;
  t.update(t.find("compute"), "level", std::string_view("9"));
  t.update(t.find("compute"), "hhash", std::string_view("1"));
  EXPECT_EQ(args_of(t.find("compute.forward")), "\"user_level\":9,\"user_hhash\":1");
}

TEST(Tree, EnableDisableSubtreeAndRecording) {
  tree t;
  node *fwd = t.find("compute.forward");
  EXPECT_FALSE(fwd->active.load());  // not recording yet
  t.set_recording(true);
  EXPECT_TRUE(fwd->active.load());
  t.set_enabled(t.find("compute"), false);
  EXPECT_FALSE(fwd->active.load());
  EXPECT_FALSE(t.find("compute")->active.load());
  EXPECT_TRUE(t.find("data.item")->active.load());
  node *child = t.child(t.find("compute"), "new");  // created under a disabled parent
  EXPECT_FALSE(child->active.load());
  t.set_enabled(fwd, true);
  EXPECT_TRUE(fwd->active.load());
  t.set_enabled(t.root(), false);
  EXPECT_FALSE(t.find("data.item")->active.load());
  t.set_enabled(t.root(), true);
  t.set_recording(false);
  EXPECT_FALSE(t.find("data.item")->active.load());
}

TEST(Tree, RulesMostSpecificWins) {
  tree t;
  t.set_rules(
      {{"comm.all_reduce", true}, {"comm", false}, {"compute.step", false}, {"mylib.io", false}});
  t.set_recording(true);
  EXPECT_FALSE(t.find("comm.barrier")->active.load());
  EXPECT_TRUE(t.find("comm.all_reduce")->active.load());
  EXPECT_FALSE(t.find("compute.step")->active.load());
  EXPECT_TRUE(t.find("compute.forward")->active.load());
  // A rule for a category that does not exist yet holds when the application creates it.
  EXPECT_FALSE(t.child(t.category("mylib"), "io")->active.load());
  EXPECT_TRUE(t.child(t.category("mylib"), "net")->active.load());
}

TEST(Tree, ArgumentReadsAreConsistentUnderConcurrentUpdates) {
  tree t;
  node *n = t.find("compute.forward");
  t.update(t.root(), "k", std::string_view("1"));
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; i < 20000; ++i)
      t.update(t.root(), "k",
               std::string_view(i % 2 ? "\"a-long-string-value-that-grows-the-block\"" : "1"));
    stop = true;
  });
  char buf[256];
  while (!stop) {
    long got = n->args_src.load()->copy_to(buf, sizeof buf);
    ASSERT_GT(got, 0);
    std::string s(buf, static_cast<size_t>(got));
    ASSERT_TRUE(s == "\"k\":1" || s == "\"k\":\"a-long-string-value-that-grows-the-block\"") << s;
  }
  writer.join();
}
