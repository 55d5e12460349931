// held_fds.cpp: descriptors held for a run at high numbers, given up when the program meets
// EMFILE (held_fds.hpp).
#include "base/held_fds.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <new>

namespace dftrace::detail {

std::atomic<int> g_held_fds{0};

namespace {

// (system calls, never the C library's names, which an interposer may own)
int sys_close(int fd) { return static_cast<int>(::syscall(SYS_close, fd)); }

constexpr int k_slots = 4;
std::atomic<held_fd *> g_slots[k_slots];

}  // namespace

int move_fd_high(int fd, int floor) {
  long limit = INT_MAX;
  struct rlimit rl;
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    limit = static_cast<long>(std::min<rlim_t>(rl.rlim_cur, INT_MAX));
  // F_DUPFD_CLOEXEC(k) takes the lowest free number >= k: below a small limit, k steps down
  // from the top (1, 2, 4, ... apart) until a free number is above it.
  long step = 1;
  for (long k = std::min<long>(floor, limit - 1); k > fd; k -= step, step *= 2) {
    const int r = static_cast<int>(::syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, static_cast<int>(k)));
    if (r >= 0) {
      sys_close(fd);
      return r;
    }
    if (errno != EMFILE && errno != EINVAL) break;
  }
  return fd;
}

uint64_t held_fd::hold(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  release_locked();
  for (int i = 0; !registered_ && i < k_slots; ++i) {
    held_fd *expected = nullptr;
    registered_ = g_slots[i].compare_exchange_strong(expected, this, std::memory_order_acq_rel);
  }
  if (!registered_) {
    sys_close(fd);
    return 0;
  }
  fd_ = move_fd_high(fd, k_high_fd_floor);
  fd_atomic_.store(fd_, std::memory_order_release);
  g_held_fds.fetch_add(1, std::memory_order_acq_rel);  // (bits 0-7)
  return ++gen_;
}

void held_fd::release_locked() {
  if (fd_ < 0) return;
  sys_close(fd_);
  fd_ = -1;
  fd_atomic_.store(-1, std::memory_order_release);
  g_held_fds.fetch_sub(1, std::memory_order_acq_rel);
}

void held_fd::close(uint64_t gen) {
  std::lock_guard<std::mutex> lock(mu_);
  if (gen == gen_) release_locked();
}

void held_fd::give_up() {
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ < 0) return;
  release_locked();
  given_up_.store(true, std::memory_order_release);
}

void held_fd::forget_in_child() {
  new (&mu_) std::mutex();  // (a parent's thread may have held it at fork)
  if (fd_ >= 0) {
    sys_close(fd_);
    g_held_fds.fetch_sub(1, std::memory_order_relaxed);
  }
  fd_ = -1;
  fd_atomic_.store(-1, std::memory_order_relaxed);
}

momentary_fds::momentary_fds() {
  g_held_fds.fetch_add(static_cast<int>(k_momentary_one), std::memory_order_acq_rel);
}

momentary_fds::~momentary_fds() {
  // (one add: the count down, the count of ended scopes up; wraps)
  g_held_fds.fetch_add(static_cast<int>(k_momentary_ended_one - k_momentary_one),
                       std::memory_order_acq_rel);
}

void give_up_held_fds() {
  for (auto &slot : g_slots)
    if (held_fd *h = slot.load(std::memory_order_acquire)) h->give_up();
  const timespec pause{0, 20000};    // 20 us
  for (int i = 0; i < 10000; ++i) {  // 200 ms at most: a telemetry sample takes well under 1 ms
    if ((static_cast<unsigned>(g_held_fds.load(std::memory_order_acquire)) & k_momentary_mask) == 0)
      break;
    ::nanosleep(&pause, nullptr);
  }
}

void held_fds_fork_child() {
  for (auto &slot : g_slots)
    if (held_fd *h = slot.load(std::memory_order_relaxed)) h->forget_in_child();
}

}  // namespace dftrace::detail
