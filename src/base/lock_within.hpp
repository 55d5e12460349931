// lock_within.hpp: try_lock with a deadline, for the fatal-signal path.
#pragma once

#include <chrono>
#include <mutex>
#include <thread>

namespace dftrace::detail {

// try_lock with a deadline, for the fatal-signal path: never wait forever on a lock that the
// interrupted code may hold.
inline bool lock_within(std::mutex &m, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!m.try_lock()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace dftrace::detail
