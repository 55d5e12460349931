// member_stream_test.cpp: a tool's output stream that fails at its end (no memory for the last
// batch) reports it and stops its flusher thread, rather than ending the process.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "output/member_stream.hpp"

using namespace dftrace::detail;

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
namespace {
// In a child: the address space limited to what is mapped now plus a little, and the heap
// taken up to it by small blocks, so that the next allocation fails.
std::vector<void *> exhaust_memory() {
  std::vector<void *> ballast;
  ballast.reserve(1u << 20);
  long pages = 0;
  if (FILE *s = fopen("/proc/self/statm", "r")) {
    if (fscanf(s, "%ld", &pages) != 1) pages = 0;
    fclose(s);
  }
  const rlimit as{static_cast<rlim_t>(pages) * sysconf(_SC_PAGESIZE) + (2u << 20), RLIM_INFINITY};
  if (pages == 0 || setrlimit(RLIMIT_AS, &as) != 0) _exit(3);
  for (size_t n = 1u << 20; n >= 16; n /= 2)
    while (ballast.size() < ballast.capacity())
      if (void *p = std::malloc(n))
        ballast.push_back(p);
      else
        break;
  return ballast;
}
}  // namespace

TEST(MemberStream, NoMemoryForTheLastBatchIsAnErrorAndTheFlusherStops) {
  const std::string path =
      ::testing::TempDir() + "/member_stream_" + std::to_string(getpid()) + ".pfw.gz";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int code = 4;  // an exception left finish()
    try {
      member_stream w(path, 2, 4096);  // 2 threads: the flusher runs
      if (!w.ok()) _exit(5);
      w.line("{\"id\":1,\"ts\":1000}", true, 1000000);
      std::vector<void *> ballast = exhaust_memory();
      const bool finished = w.finish();
      for (void *p : ballast) std::free(p);
      code = finished ? 1 : w.error().rfind(path + ": ", 0) == 0 ? 0 : 2;
    } catch (...) {
    }
    _exit(code);
  }
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  unlink(path.c_str());
  ASSERT_TRUE(WIFEXITED(st)) << "the stream ended the process (signal " << WTERMSIG(st) << ")";
  EXPECT_NE(WEXITSTATUS(st), 3) << "the limit could not be set";
  EXPECT_NE(WEXITSTATUS(st), 5) << "the file could not be created";
  EXPECT_NE(WEXITSTATUS(st), 4) << "finish() threw";
  EXPECT_NE(WEXITSTATUS(st), 2) << "error() does not name the file";
  if (WEXITSTATUS(st) == 1) GTEST_SKIP() << "the last batch found memory under the limit";
  EXPECT_EQ(WEXITSTATUS(st), 0);
}
#endif
