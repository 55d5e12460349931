// compressor_pool.cpp: a batch of members compressed on the calling thread and its helpers.
#include "output/compressor_pool.hpp"

#include <new>

#include "base/thread_role.hpp"

namespace dftrace::detail {

namespace {
// One member compressed; false when it could not be (its events are then counted as dropped):
// out of memory for the output never leaves the thread.
bool encode_member(member_encoder &e, text_member &m) noexcept {
  try {
    m.out.clear();
    return e.encode(m.text.data(), m.text.size(), m.stats, m.out);
  } catch (...) {
    std::vector<char>().swap(m.out);
    return false;
  }
}
}  // namespace

compressor_pool::compressor_pool(codec kind, int level, int threads)
    : kind_(kind), level_(level), threads_(threads), encoder_(kind, level) {}

compressor_pool::~compressor_pool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto &h : helpers_)
    if (h.joinable()) h.join();
}

void compressor_pool::helper_run(size_t k) {
  // Helper k of n compresses members k+1, k+1+(n+1), ... of each pass.
  t_internal_thread = 1;
  uint64_t seen = 0;
  for (;;) {
    size_t count;
    member_list *b;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || pass_no_ != seen; });
      if (stop_) return;
      seen = pass_no_;
      count = count_;
      b = pass_;
    }
    const size_t stride = helpers_.size() + 1;
    for (size_t i = k + 1; i < count; i += stride) {
      text_member &m = b->at(i);
      m.ok = encode_member(*helper_encoders_[k], m);
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --pending_;
    }
    done_cv_.notify_all();
  }
}

void compressor_pool::compress(member_list &b, bool parallel,
                               const std::function<void()> *between) {
  const size_t count = b.closed();
  const int want_helpers = std::max(0, threads_ - 1);
  size_t stride = 1;
  if (parallel && count > 1 && want_helpers > 0) {
    if (helpers_.empty() && !helpers_failed_) start_helpers(want_helpers);
    stride = helpers_.size() + 1;
    std::lock_guard<std::mutex> lock(mutex_);
    pass_ = &b;
    count_ = count;
    pending_ = static_cast<int>(helpers_.size());
    ++pass_no_;
  }
  if (stride > 1) cv_.notify_all();
  for (size_t i = 0; i < count; i += stride) {
    if (between) (*between)();
    text_member &m = b.at(i);
    m.ok = encode_member(encoder_, m);
  }
  if (stride > 1) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, [&] { return pending_ == 0; });
  }
}

void compressor_pool::start_helpers(int want) {
  // As many as can be made: a helper's encoder or thread that can not be (no memory for its
  // stack under an address-space limit) leaves its members to the writer thread, and no later
  // pass tries again.
  std::lock_guard<std::mutex> lock(mutex_);
  const async_signals_blocked no_handlers;  // the application's handlers: not here
  try {
    helpers_.reserve(static_cast<size_t>(want));
    helper_encoders_.reserve(static_cast<size_t>(want));
    for (int h = 0; h < want; ++h) {
      helper_encoders_.push_back(std::make_unique<member_encoder>(kind_, level_));
      helpers_.emplace_back([this, h] { helper_run(static_cast<size_t>(h)); });
    }
  } catch (...) {
    helpers_failed_ = true;
  }
}

void compressor_pool::fork_child() {
  // The parent's helper threads do not exist here: forget their handles without joining (a
  // joinable std::thread must not be destroyed), and make the synchronisation objects anew.
  for (auto &h : helpers_) new (&h) std::thread();
  helpers_.clear();
  helper_encoders_.clear();
  pending_ = 0;
  pass_no_ = 0;
  pass_ = nullptr;
  new (&mutex_) std::mutex();
  new (&cv_) std::condition_variable();
  new (&done_cv_) std::condition_variable();
}

}  // namespace dftrace::detail
