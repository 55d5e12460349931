// wake_word.hpp: a thread's sleep that any thread, and a signal handler, can end: the sleeper
// reads seq(), checks its condition, then waits while the word still holds what it read; a
// waker changes its condition, then calls wake() (a lock-free atomic add and, only while
// someone sleeps, one futex system call: async-signal-safe). A condition variable can not be
// woken from a signal handler.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>

namespace dftrace::detail {

class wake_word {
 public:
  constexpr wake_word() = default;
  static_assert(std::atomic<uint32_t>::is_always_lock_free, "a signal handler adds to it");

  uint32_t seq() const { return seq_.load(std::memory_order_seq_cst); }
  // Sleeps while the word is still `seen`, until deadline_ns (CLOCK_MONOTONIC; 0: no deadline).
  // May return early (a wake meant for another sleeper on the same word): the caller checks.
  void wait(uint32_t seen, uint64_t deadline_ns) {
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    timespec t{static_cast<time_t>(deadline_ns / 1000000000u),
               static_cast<long>(deadline_ns % 1000000000u)};
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&seq_), FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG,
            seen, deadline_ns ? &t : nullptr, nullptr, FUTEX_BITSET_MATCH_ANY);
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
  }
  void wake() noexcept {
    seq_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst))
      syscall(SYS_futex, reinterpret_cast<uint32_t *>(&seq_), FUTEX_WAKE | FUTEX_PRIVATE_FLAG,
              INT_MAX, nullptr, nullptr, 0);
  }
  // fork's child: the parent's sleepers are not here.
  void forget_sleepers() { sleepers_.store(0, std::memory_order_relaxed); }

 private:
  std::atomic<uint32_t> seq_{0};
  std::atomic<uint32_t> sleepers_{0};
};

}  // namespace dftrace::detail
