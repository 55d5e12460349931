// path_pattern_test.cpp: io.exclude's patterns (src/plugins/io/path_pattern.hpp) match exactly as
// fnmatch(pattern, path, 0), whether decided by their shape or by fnmatch itself.
#include "plugins/io/path_pattern.hpp"

#include <fnmatch.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

using dftrace::io::path_pattern;

TEST(PathPattern, MatchesAsFnmatchDoes) {
  const std::vector<std::string> patterns = {
      // the default exclusions' shapes
      "*.so", "*.so.*", "*.py", "*.pyc", "*/__pycache__/*", "*/site-packages/*",
      // the other shapes, and what goes to fnmatch
      "/data/*", "*", "**", "*.", "*/", "/x", "*a*b*", "*.[ch]", "*?.py", "*\\*x", "[/]tmp*",
      "*/dist-packages/*", "*.pfw.gz", "*so", "*/.*", "*./*", "*//*"};
  const std::vector<std::string> paths = {"/usr/lib/libc.so",
                                          "/usr/lib/libc.so.6",
                                          "/a/b.so.x/c",
                                          "/home/u/train.py",
                                          "/home/u/train.pyc",
                                          "/home/u/__pycache__/m.pyc",
                                          "/usr/lib/python3/site-packages/np/x",
                                          "/data/a.npy",
                                          "/data",
                                          "/datax/a",
                                          "/",
                                          "/x",
                                          "/a.",
                                          "/a/",
                                          "/ab",
                                          "/tmp/f.c",
                                          "/tmp/f.h",
                                          "/tmp/ab.py",
                                          "/tmp/*x",
                                          "/tmp/.so",
                                          "so",
                                          "",
                                          "/t.pfw.gz",
                                          "/dist-packages/",
                                          "/a*b",
                                          "/__pycache__/",
                                          "/x/__pycache_/__pycache__/y",
                                          "/x/_pycache__/",
                                          "/site-packages",
                                          "site-packages/",
                                          "/a/.so.",
                                          ".so.",
                                          "/a/b/site-packagessite-packages/x",
                                          "/a//b",
                                          "/a/./b"};
  for (const std::string &p : patterns) {
    const path_pattern pat(p);
    for (const std::string &path : paths)
      EXPECT_EQ(pat.matches(path.c_str(), path.size()), fnmatch(p.c_str(), path.c_str(), 0) == 0)
          << "pattern " << p << " on " << path;
  }
}
