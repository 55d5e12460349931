// schedule_share_test.cpp: the step schedule's shared page and its follower thread in one
// process (a publishing thread stands for the parent, the follower for a forked child's), so
// that ThreadSanitizer sees their synchronisation (a real child is out of its reach).
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

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
  g_log->states.push_back(g_log->page->read());
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
  EXPECT_EQ(page_->read().step, 10 * last + 1);
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

}  // namespace
}  // namespace dftrace::detail
