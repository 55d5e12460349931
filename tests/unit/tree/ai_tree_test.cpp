// ai_tree_test.cpp: the core's built-in tree and the C++ face's dftrace::ai are the one table
// (include/dftrace/ai_tree.def): same names, categories, paths and order, nothing more.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dftrace/dftrace.hpp"
#include "tree/tree.hpp"

using namespace dftrace::detail;

namespace {

struct table_category {
  std::string cat;
  std::vector<std::string> events;
};

// The table as data, read here with its own expansion.
std::vector<table_category> table() {
  std::vector<table_category> t;
#define DFTRACE_AI_CATEGORY(c, py_enum) t.push_back({#c, {}});
#define DFTRACE_AI_EVENT(c, e)                \
  EXPECT_EQ(t.back().cat, #c) << "event " #e; \
  t.back().events.push_back(#e);
#include "dftrace/ai_tree.def"
  return t;
}

}  // namespace

TEST(AiTreeTable, IsWellFormed) {
  const auto t = table();
  ASSERT_FALSE(t.empty());
  std::vector<std::string> seen;
  for (const auto &c : t) {
    EXPECT_FALSE(c.events.empty()) << c.cat;
    for (const auto &s : seen) EXPECT_NE(s, c.cat) << "category twice";
    seen.push_back(c.cat);
    for (size_t i = 0; i < c.events.size(); ++i)
      for (size_t j = i + 1; j < c.events.size(); ++j) EXPECT_NE(c.events[i], c.events[j]) << c.cat;
  }
}

// The core: the root's children are the table's categories, in order, each with exactly the
// table's events, in order (a fresh tree holds nothing else).
TEST(AiTreeTable, CoreTreeIsTheTable) {
  tree tr;
  const auto t = table();
  node *root = tr.root();
  ASSERT_EQ(root->children.size(), t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    const node *c = root->children[i].get();
    EXPECT_EQ(c->key, t[i].cat);
    EXPECT_EQ(c->name, t[i].cat);
    EXPECT_EQ(c->cat, t[i].cat);
    EXPECT_EQ(c->path, t[i].cat);
    EXPECT_FALSE(c->hidden);
    ASSERT_EQ(c->children.size(), t[i].events.size()) << t[i].cat;
    for (size_t j = 0; j < t[i].events.size(); ++j) {
      const node *e = c->children[j].get();
      EXPECT_EQ(e->key, t[i].events[j]);
      EXPECT_EQ(e->name, t[i].events[j]);  // not prefixed with its category
      EXPECT_EQ(e->cat, t[i].cat);
      EXPECT_EQ(e->path, t[i].cat + "." + t[i].events[j]);
      EXPECT_TRUE(e->children.empty()) << e->path;
      EXPECT_EQ(tr.find(e->path), e);
    }
  }
}

// The C++ face: one member per table entry naming its path, in the table's order, and no
// member the table does not have (the sizes), each resolving to the core's node of that name.
TEST(AiTreeTable, CppFaceIsTheTable) {
  using dftrace::ai;
  const auto t = table();
  std::vector<std::string> paths;
  std::vector<uintptr_t> addresses;
  std::vector<size_t> category_sizes;
  size_t nodes = 1;  // the root
#define DFTRACE_AI_CATEGORY(c, py_enum)                    \
  paths.push_back(ai.c.path());                            \
  addresses.push_back(reinterpret_cast<uintptr_t>(&ai.c)); \
  category_sizes.push_back(sizeof(ai.c));                  \
  ++nodes;
#define DFTRACE_AI_EVENT(c, e)                               \
  paths.push_back(ai.c.e.path());                            \
  addresses.push_back(reinterpret_cast<uintptr_t>(&ai.c.e)); \
  ++nodes;
#include "dftrace/ai_tree.def"
  EXPECT_EQ(sizeof(ai), sizeof(dftrace::node) * nodes);
  std::vector<std::string> want;
  for (const auto &c : t) {
    want.push_back(c.cat);
    for (const auto &e : c.events) want.push_back(c.cat + "." + e);
  }
  EXPECT_EQ(paths, want);
  ASSERT_EQ(category_sizes.size(), t.size());
  for (size_t i = 0; i < t.size(); ++i)
    EXPECT_EQ(category_sizes[i], sizeof(dftrace::node) * (1 + t[i].events.size())) << t[i].cat;
  for (size_t i = 1; i < addresses.size(); ++i)
    EXPECT_LT(addresses[i - 1], addresses[i]) << paths[i];
  EXPECT_STREQ(ai.path(), "ai");

  tree tr;
  for (const auto &c : t) {
    for (const auto &e : c.events) {
      const node *n = tr.find(c.cat + "." + e);
      ASSERT_NE(n, nullptr) << c.cat << "." << e;
      EXPECT_EQ(n->name, e);
      EXPECT_EQ(n->cat, c.cat);
    }
  }
}
