// schedule_share_test.cpp: the step schedule's shared page and its follower thread in one
// process (a publishing thread stands for the parent, the follower for a forked child's), so
// that ThreadSanitizer sees their synchronisation (a real child is out of its reach); the named
// page of the attach channel (PID.page) and what open_named refuses; a reader of a page left
// half-written.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "base/attach_channel.hpp"
#include "runtime/schedule_share.hpp"

namespace dftrace::detail {
namespace {

// What the follower saw; the callback is a plain function, so its state is global.
struct seen_log {
  std::mutex mu;
  std::condition_variable cv;
  const schedule_page *page = nullptr;
  std::vector<schedule_state> states;  // one per change
  int calls = 0;
  int throws_left = 0;  // changes to refuse with an exception first
  bool stop_after_first = false;
  bool ended = false;
};
seen_log *g_log = nullptr;

// Marks the follower thread's end (its thread_local is destroyed as the thread exits).
struct end_marker {
  bool armed = false;
  ~end_marker() {
    if (!armed) return;
    std::lock_guard<std::mutex> lock(g_log->mu);
    g_log->ended = true;
    g_log->cv.notify_all();
  }
};
thread_local end_marker t_end;

bool follow(bool changed) {
  t_end.armed = true;
  std::lock_guard<std::mutex> lock(g_log->mu);
  ++g_log->calls;
  if (!changed) return true;
  if (g_log->throws_left > 0) {
    --g_log->throws_left;
    throw std::runtime_error("refused");
  }
  schedule_state st;
  if (!g_log->page->read(&st)) throw std::runtime_error("unreadable");
  g_log->states.push_back(st);
  g_log->cv.notify_all();
  return !g_log->stop_after_first;
}

// The state of publication k: every field derived from k, so that a torn read shows.
schedule_state state_of(uint64_t k) {
  schedule_state st;
  st.s = {k, k + 1, k + 2, k + 3, k % 5};
  st.step = 10 * k;
  st.gate = (k % 2) == 0;
  st.window = {(k % 3) == 0, static_cast<uint32_t>(k % 3), static_cast<uint32_t>(k), k, 7 * k,
               k + 5};
  return st;
}

bool consistent(const schedule_state &st) {
  const uint64_t k = st.s.skip_first;
  return st.s.wait == k + 1 && st.s.warmup == k + 2 && st.s.active == k + 3 &&
         st.s.repeat == k % 5 && st.gate == ((k % 2) == 0) && st.step >= 10 * k &&
         st.window.open == ((k % 3) == 0) && st.window.level == k % 3 && st.window.pid == k &&
         st.window.gen == k && st.window.for_ns == 7 * k && st.window.steps == k + 5;
}

// Waits (a hang guard, not a measure) until pred holds under the log's lock.
template <typename P>
bool wait_for(std::unique_lock<std::mutex> &lock, P pred) {
  return g_log->cv.wait_for(lock, std::chrono::seconds(60), pred);
}

class ScheduleShare : public ::testing::Test {
 protected:
  void SetUp() override {
    page_ = schedule_page::create();
    ASSERT_NE(page_, nullptr);
    log_.page = page_;
    g_log = &log_;
  }
  void TearDown() override {
    schedule_follower_stop();
    std::unique_lock<std::mutex> lock(log_.mu);
    EXPECT_TRUE(wait_for(lock, [&] { return log_.ended; })) << "the follower thread did not end";
    lock.unlock();
    g_log = nullptr;  // (the page stays mapped: a process's page lives as long as it)
  }
  schedule_page *page_ = nullptr;
  seen_log log_;
};

TEST_F(ScheduleShare, FollowerSeesEveryStateWholeAndTheLastOne) {
  page_->publish(state_of(0));
  ASSERT_TRUE(schedule_follower_start(page_, follow));
  const uint64_t last = 2000;
  std::thread parent([&] {
    for (uint64_t k = 1; k <= last; ++k) {
      page_->publish(state_of(k));
      // a step that changes neither the schedule nor the gate: the count only
      schedule_state same = state_of(k);
      same.step += 1;
      page_->publish(same);
    }
  });
  parent.join();
  std::unique_lock<std::mutex> lock(log_.mu);
  ASSERT_TRUE(wait_for(
      lock, [&] { return !log_.states.empty() && log_.states.back().s.skip_first == last; }));
  uint64_t before = 0;
  for (const schedule_state &st : log_.states) {
    EXPECT_TRUE(consistent(st)) << "torn read at k=" << st.s.skip_first;
    EXPECT_GE(st.s.skip_first, before);  // never back in time
    before = st.s.skip_first;
  }
  // A step that changes nothing else wakes nobody: the page holds the newest count, and the
  // follower reads it at its next change.
  schedule_state now;
  ASSERT_TRUE(page_->read(&now));
  EXPECT_EQ(now.step, 10 * last + 1);
}

TEST_F(ScheduleShare, AnExceptionOfTheCallbackStaysInTheThreadAndTheChangeComesAgain) {
  log_.throws_left = 2;
  page_->publish(state_of(7));
  ASSERT_TRUE(schedule_follower_start(page_, follow));
  std::unique_lock<std::mutex> lock(log_.mu);
  ASSERT_TRUE(wait_for(lock, [&] { return !log_.states.empty(); }));
  EXPECT_EQ(log_.throws_left, 0);
  EXPECT_EQ(log_.states.front().s.skip_first, 7u);
  EXPECT_FALSE(log_.ended);
}

TEST_F(ScheduleShare, FalseFromTheCallbackEndsTheThread) {
  log_.stop_after_first = true;
  page_->publish(state_of(3));
  ASSERT_TRUE(schedule_follower_start(page_, follow));
  std::unique_lock<std::mutex> lock(log_.mu);
  ASSERT_TRUE(wait_for(lock, [&] { return log_.ended; }));
  EXPECT_EQ(log_.states.size(), 1u);
  const int calls = log_.calls;
  lock.unlock();
  page_->publish(state_of(4));  // nobody follows any more
  lock.lock();
  EXPECT_EQ(log_.calls, calls);
}

TEST_F(ScheduleShare, AWindowThatOpensOrClosesAloneWakesTheFollower) {
  // The schedule, step and gate as they were: only the attach window changes.
  schedule_state st = state_of(4);
  page_->publish(st);
  ASSERT_TRUE(schedule_follower_start(page_, follow));
  std::unique_lock<std::mutex> lock(log_.mu);
  ASSERT_TRUE(wait_for(lock, [&] { return log_.states.size() == 1; }));
  lock.unlock();
  st.window = {true, 2, 42, 1, 0, 4};
  page_->publish(st);
  lock.lock();
  ASSERT_TRUE(wait_for(lock, [&] { return log_.states.size() == 2; }));
  EXPECT_TRUE(log_.states.back().window == st.window);
  lock.unlock();
  st.window.open = false;
  page_->publish(st);
  lock.lock();
  ASSERT_TRUE(wait_for(lock, [&] { return log_.states.size() == 3; }));
  EXPECT_FALSE(log_.states.back().window.open);
  EXPECT_EQ(log_.states.back().window.gen, 1u);
}

TEST_F(ScheduleShare, StopEndsAWaitingFollower) {
  page_->publish(state_of(1));
  ASSERT_TRUE(schedule_follower_start(page_, follow));
  {
    std::unique_lock<std::mutex> lock(log_.mu);
    ASSERT_TRUE(wait_for(lock, [&] { return !log_.states.empty(); }));
  }
  // TearDown stops it and waits for the thread's end.
}

// ---------------------------------------------------------------- the named page

class NamedPage : public ::testing::Test {
 protected:
  void SetUp() override {
    const char *tmp = getenv("TMPDIR");
    dir_ = std::string(tmp && *tmp ? tmp : "/tmp") + "/dftrace-page-XXXXXX";
    ASSERT_NE(mkdtemp(&dir_[0]), nullptr) << strerror(errno);
    path_ = dir_ + "/" + std::to_string(getpid()) + ".page";
    page_ = schedule_page::create_named(path_);
    ASSERT_NE(page_, nullptr) << strerror(errno);
    page_->publish(state_of(6));
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    EXPECT_EQ(system(cmd.c_str()), 0);
  }
  // Whether open_named maps `path` as the page of `pid` (the mapping is left: a few pages).
  static bool opens(const std::string &path, pid_t pid) {
    return schedule_page::open_named(path, pid) != nullptr;
  }
  std::string dir_, path_;
  schedule_page *page_ = nullptr;
};

TEST_F(NamedPage, ItsPublisherOpensItAndReadsWhatItPublishes) {
  struct stat st;
  ASSERT_EQ(lstat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const schedule_page *seen = schedule_page::open_named(path_, getpid());
  ASSERT_NE(seen, nullptr);
  schedule_state got;
  ASSERT_TRUE(seen->read(&got));
  EXPECT_TRUE(consistent(got));
  EXPECT_EQ(got.s.skip_first, 6u);
  page_->publish(state_of(9));  // one page: the reader's mapping sees the next publication
  ASSERT_TRUE(seen->read(&got));
  EXPECT_EQ(got.s.skip_first, 9u);
  // Made under another name and renamed: nothing else is left in the directory.
  std::string cmd = "test \"$(ls -A '" + dir_ + "')\" = " + std::to_string(getpid()) + ".page";
  EXPECT_EQ(system(cmd.c_str()), 0);
}

TEST_F(NamedPage, AFileOfAnotherUserIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "only root can give the file to another user here";
  ASSERT_EQ(chown(path_.c_str(), 65534, 65534), 0) << strerror(errno);
  EXPECT_FALSE(opens(path_, getpid()));
  ASSERT_EQ(chown(path_.c_str(), 0, 0), 0);
  EXPECT_TRUE(opens(path_, getpid()));
}

TEST_F(NamedPage, AFileOthersCanReachIsRefused) {
  for (mode_t mode : {0640, 0604, 0620, 0602, 0610, 0601}) {
    ASSERT_EQ(chmod(path_.c_str(), mode), 0);
    EXPECT_FALSE(opens(path_, getpid())) << std::oct << mode;
  }
  ASSERT_EQ(chmod(path_.c_str(), 0600), 0);
  EXPECT_TRUE(opens(path_, getpid()));
}

TEST_F(NamedPage, ASymbolicLinkIsRefused) {
  const std::string link = dir_ + "/link.page";
  ASSERT_EQ(symlink(path_.c_str(), link.c_str()), 0);
  EXPECT_FALSE(opens(link, getpid()));
  EXPECT_TRUE(opens(path_, getpid()));
}

TEST_F(NamedPage, AFileOfTwoLinksIsRefused) {
  const std::string other = dir_ + "/other.page";
  ASSERT_EQ(link(path_.c_str(), other.c_str()), 0);
  EXPECT_FALSE(opens(path_, getpid()));
  EXPECT_FALSE(opens(other, getpid()));
  ASSERT_EQ(unlink(other.c_str()), 0);
  EXPECT_TRUE(opens(path_, getpid()));
}

TEST_F(NamedPage, AFileOfAnotherSizeIsRefused) {
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  ASSERT_EQ(truncate(path_.c_str(), st.st_size + 1), 0);
  EXPECT_FALSE(opens(path_, getpid()));
  ASSERT_EQ(truncate(path_.c_str(), st.st_size), 0);
  EXPECT_TRUE(opens(path_, getpid()));
  const std::string empty = dir_ + "/empty.page";
  const int fd = open(empty.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  EXPECT_FALSE(opens(empty, getpid()));
}

TEST_F(NamedPage, APageOfAnotherProcessIsRefused) {
  // Asked as another pid's page (the publisher recorded in it is this process).
  EXPECT_FALSE(opens(path_, getppid()));
  // A page whose publisher has ended: its pid runs nothing now (or another process).
  const std::string gone = dir_ + "/gone.page";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(schedule_page::create_named(gone) ? 0 : 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_FALSE(opens(gone, child));
}

TEST_F(NamedPage, APageOfAnEarlierProcessOfTheSamePidIsRefused) {
  // The page as an earlier process of this pid would have left it: the start time recorded in
  // it (found in the file by its value) one tick before this process's.
  const uint64_t start = process_start_ticks(getpid());
  ASSERT_NE(start, 0u);
  const int fd = open(path_.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  struct stat st;
  ASSERT_EQ(fstat(fd, &st), 0);
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  ASSERT_EQ(pread(fd, &bytes[0], bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  const std::string needle(reinterpret_cast<const char *>(&start), sizeof start);
  const size_t at = bytes.find(needle);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.find(needle, at + 1), std::string::npos) << "the start time is not alone";
  EXPECT_TRUE(opens(path_, getpid()));
  const uint64_t earlier = start - 1;
  ASSERT_EQ(pwrite(fd, &earlier, sizeof earlier, static_cast<off_t>(at)),
            static_cast<ssize_t>(sizeof earlier));
  EXPECT_FALSE(opens(path_, getpid()));
  ASSERT_EQ(pwrite(fd, &start, sizeof start, static_cast<off_t>(at)),
            static_cast<ssize_t>(sizeof start));
  EXPECT_TRUE(opens(path_, getpid()));
  close(fd);
}

TEST_F(NamedPage, AReaderGivesUpOnAPageLeftHalfWritten) {
  // A publisher killed between its two increments of the sequence leaves it odd for good: the
  // page's first word, checked against sequence() before it is made odd here.
  const uint32_t seq = page_->sequence();
  ASSERT_EQ(seq % 2, 0u);
  ASSERT_NE(seq, 0u);
  const int fd = open(path_.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  uint32_t first = 0;
  ASSERT_EQ(pread(fd, &first, sizeof first, 0), static_cast<ssize_t>(sizeof first));
  ASSERT_EQ(first, seq) << "the sequence is not the page's first word";
  const uint32_t odd = seq + 1;
  ASSERT_EQ(pwrite(fd, &odd, sizeof odd, 0), static_cast<ssize_t>(sizeof odd));
  close(fd);
  ASSERT_EQ(page_->sequence(), odd);
  const schedule_page *seen = schedule_page::open_named(path_, getpid());
  ASSERT_NE(seen, nullptr);
  schedule_state got;
  EXPECT_FALSE(seen->read(&got));  // after about a second of tries
  EXPECT_FALSE(page_->read(&got));
}

}  // namespace
}  // namespace dftrace::detail
