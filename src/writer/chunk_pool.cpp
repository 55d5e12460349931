// chunk_pool.cpp: chunks for application threads and the registry of their buffers.
#include "writer/chunk_pool.hpp"

#include <algorithm>
#include <new>

namespace dftrace::detail {

namespace {
void free_chunk(chunk *c) {
  ::operator delete(c->data);
  delete c;
}
}  // namespace

chunk_pool::~chunk_pool() {
  for (chunk *c : pool_) free_chunk(c);
}

chunk *chunk_pool::take(size_t min_bytes) {
  if (min_bytes <= chunk_bytes_) {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    if (!pool_.empty()) {
      chunk *c = pool_.back();
      pool_.pop_back();
      return c;
    }
  }
  auto *c = new chunk;
  c->cap = static_cast<uint32_t>(std::max(min_bytes, chunk_bytes_));
  c->data = static_cast<char *>(::operator new(c->cap));  // new's alignment is at least 16
  return c;
}

void chunk_pool::recycle(chunk *c) noexcept {
  if (c->cap != chunk_bytes_) {  // an oversized chunk for one huge record
    free_chunk(c);
    return;
  }
  c->reset();
  std::lock_guard<std::mutex> lock(pool_mutex_);
  try {
    pool_.push_back(c);
  } catch (...) {  // no memory for the list: the chunk is freed instead of kept
    free_chunk(c);
  }
}

size_t chunk_pool::add(thread_buffer *tb) {
  std::lock_guard<std::mutex> lock(registry_mutex_);
  buffers_.push_back(tb);
  return buffers_.size();
}

chunk *chunk_pool::remove(thread_buffer *tb) {
  std::lock_guard<std::mutex> lock(registry_mutex_);
  auto it = std::find(buffers_.begin(), buffers_.end(), tb);
  if (it != buffers_.end()) buffers_.erase(it);
  // Under the registry lock, so that no flush is looking at it while it moves.
  return tb->current.exchange(nullptr);
}

void chunk_pool::collect(std::vector<chunk_range> &out, bool bounded) {
  for (thread_buffer *tb : buffers_) {
    if (bounded && out.size() == out.capacity()) break;
    chunk *c = tb->current.load(std::memory_order_acquire);
    if (!c) continue;
    const uint32_t end = c->committed.load(std::memory_order_acquire);
    if (end > c->drained) {
      out.push_back({c, c->drained, end});
      c->drained = end;
    }
  }
}

void chunk_pool::take_committed(std::vector<chunk_range> &out, bool bounded) {
  std::lock_guard<std::mutex> lock(registry_mutex_);
  collect(out, bounded);
}

bool chunk_pool::take_committed_within(std::vector<chunk_range> &out,
                                       std::chrono::milliseconds limit) {
  if (!lock_within(registry_mutex_, limit)) return false;
  collect(out, true);
  registry_mutex_.unlock();
  return true;
}

void chunk_pool::fork_prepare() {
  registry_mutex_.lock();
  pool_mutex_.lock();
}

void chunk_pool::fork_parent() {
  pool_mutex_.unlock();
  registry_mutex_.unlock();
}

void chunk_pool::fork_child(thread_buffer *survivor, std::vector<chunk *> &orphans) {
  for (chunk *c : orphans) {
    c->reset();
    if (c->cap == chunk_bytes_) pool_.push_back(c);
  }
  orphans.clear();
  buffers_.clear();
  if (survivor) {
    buffers_.push_back(survivor);
    if (chunk *c = survivor->current.load(std::memory_order_relaxed)) c->reset();
    survivor->pos = 0;
  }
  // Made anew, not unlocked (writer.cpp's fork_child says why).
  new (&pool_mutex_) std::mutex();
  new (&registry_mutex_) std::mutex();
}

}  // namespace dftrace::detail
