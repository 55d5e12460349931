// thread_group.hpp: worker threads that are joined on every way out of the scope that started
// them, so that neither a thread the system refuses nor an exception of the caller destroys a
// running std::thread (which is std::terminate).
#pragma once

#include <functional>
#include <new>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace dftrace::detail {

class thread_group {
 public:
  // `stop` (may be empty) makes the threads return soon; the destructor calls it before joining
  // when join() was not called (an exception is leaving the scope). It must not throw.
  explicit thread_group(std::function<void()> stop = nullptr) : stop_(std::move(stop)) {}
  ~thread_group() {
    if (threads_.empty()) return;
    if (stop_) stop_();
    join();
  }
  thread_group(const thread_group &) = delete;
  thread_group &operator=(const thread_group &) = delete;

  // Runs fn on a new thread. False, and nothing started, when the system refuses a thread
  // (EAGAIN: a process or memory limit) or there is no memory for its handle: the group keeps
  // the threads started before. Not thread-safe (the starting thread only).
  template <class F>
  bool start(F &&fn) {
    try {
      threads_.emplace_back(std::forward<F>(fn));
      return true;
    } catch (const std::system_error &) {
      return false;
    } catch (const std::bad_alloc &) {
      return false;
    }
  }
  size_t size() const { return threads_.size(); }
  // Waits for every thread to return.
  void join() {
    for (std::thread &t : threads_)
      if (t.joinable()) t.join();
    threads_.clear();
  }

 private:
  std::function<void()> stop_;
  std::vector<std::thread> threads_;
};

}  // namespace dftrace::detail
