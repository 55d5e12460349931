// path_normal_test.cpp: the quick check (is_normal) never skips a path the rewrite (normalise)
// would change, and passes the paths applications build; the rewrite's own results.
#include "plugins/common/path_normal.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

using dftrace::plugin::is_normal;
using dftrace::plugin::normalise;

namespace {
std::string normal_form(std::string p) {
  p.push_back('\0');
  normalise(p.data());
  return std::string(p.c_str());
}
}  // namespace

TEST(PathNormal, TheQuickCheckAgreesWithTheRewriteOnEveryPathOfFewComponents) {
  // Every absolute path of up to 4 components drawn from these, with and without a trailing
  // '/': the check says "normal" exactly when the rewrite leaves the path as it is.
  const std::vector<std::string> parts = {"",   ".",  "..", "...", "a",
                                          "bc", ".x", "x.", "..y", "y.."};
  std::vector<std::string> paths = {"/"};
  std::vector<std::string> level = {""};
  for (int depth = 0; depth < 4; ++depth) {
    std::vector<std::string> next;
    for (const std::string &base : level)
      for (const std::string &part : parts) next.push_back(base + "/" + part);
    for (const std::string &p : next) {
      paths.push_back(p);
      paths.push_back(p + "/");
    }
    level.swap(next);
  }
  size_t normal = 0;
  for (const std::string &p : paths) {
    const bool unchanged = normal_form(p) == p;
    EXPECT_EQ(is_normal(p.data(), p.size()), unchanged) << "'" << p << "'";
    normal += unchanged;
  }
  EXPECT_GT(normal, 1000u);  // the check is not "never normal"
}

TEST(PathNormal, TheRewriteRemovesEmptyDotAndDotDotComponents) {
  const std::pair<std::string, std::string> cases[] = {
      {"/", "/"},
      {"//", "/"},
      {"/a//b/./c/", "/a/b/c"},
      {"/a/b/../../..", "/"},
      {"/a/.b/..c/c../.../x", "/a/.b/..c/c../.../x"},  // names that only look like dots
  };
  for (const auto &[path, normal] : cases) EXPECT_EQ(normal_form(path), normal) << path;
  const std::string built = "/tmp/dlio/data/s00017.npy", dotted = "/tmp/dlio/./s.npy";
  EXPECT_TRUE(is_normal(built.data(), built.size()));
  EXPECT_FALSE(is_normal(dotted.data(), dotted.size()));
}
