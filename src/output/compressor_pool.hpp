// compressor_pool.hpp: compresses a batch of closed members (member.hpp) into gzip members, on
// the calling thread and, when a batch has several and more than one thread is allowed, on
// helper threads started the first time they are needed.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/gzip_member.hpp"
#include "output/member.hpp"

namespace dftrace::detail {

// compress() is called by one thread at a time (the writer's I/O lock).
class compressor_pool {
 public:
  compressor_pool(codec kind, int level, int threads);
  ~compressor_pool();
  compressor_pool(const compressor_pool &) = delete;
  compressor_pool &operator=(const compressor_pool &) = delete;

  // Sets each closed member's `out` and `ok`; helpers share the work when `parallel`. Never
  // throws: a member that can not be compressed (no memory) is not `ok`; helpers that can not
  // be started leave the work to the calling thread. `between` (when given) is called on the
  // calling thread before each member it compresses, while helpers go on with theirs: work that
  // must not wait for the whole batch (the writer's triggers); it must not touch `b`.
  void compress(member_list &b, bool parallel, const std::function<void()> *between = nullptr);
  // The calling thread's encoder (the header's member).
  member_encoder &encoder() { return encoder_; }
  codec kind() const { return kind_; }
  int level() const { return level_; }

  // fork(): the child forgets the parent's helper threads (they do not exist there).
  void fork_prepare() { mutex_.lock(); }
  void fork_parent() { mutex_.unlock(); }
  void fork_child();

 private:
  void helper_run(size_t k);
  void start_helpers(int want);  // mutex_ not held

  const codec kind_;
  const int level_;
  const int threads_;
  member_encoder encoder_;
  std::vector<std::thread> helpers_;
  bool helpers_failed_ = false;  // a helper could not be made: the writer thread does the rest
  std::vector<std::unique_ptr<member_encoder>> helper_encoders_;
  std::mutex mutex_;
  std::condition_variable cv_, done_cv_;
  member_list *pass_ = nullptr;  // the batch being compressed
  uint64_t pass_no_ = 0;
  size_t count_ = 0;  // members in the pass
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace dftrace::detail
