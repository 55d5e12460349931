// chunk_pool.hpp: the chunks application threads write their records into, where they come from
// and go back to, and the registry of the threads holding one (so that a time-based flush can
// take what a thread has committed without waiting for its chunk to fill).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "base/lock_within.hpp"

namespace dftrace::detail {

// A block of whole binary records (record.hpp) written by one thread. Bytes below
// `committed` never change until the writer recycles the chunk.
struct chunk {
  char *data = nullptr;  // 8-byte aligned
  uint32_t cap = 0;
  std::atomic<uint32_t> committed{0};
  // How far the writer has taken records out (time-based flushes take partial chunks).
  // Written by the writer; read by a producer that drops the chunk.
  std::atomic<uint32_t> drained{0};

  void reset() {
    committed.store(0, std::memory_order_relaxed);
    drained = 0;
  }
};

// What one thread writes into. Owned by the thread's state; registered with the pool so that
// time-based flushes can take what it has committed.
struct thread_buffer {
  std::atomic<chunk *> current{nullptr};
  uint32_t pos = 0;  // producer's write position in current (== committed between events)
};

// Records of chunk c in [from, to): committed, not yet taken by the writer.
struct chunk_range {
  chunk *c;
  uint32_t from, to;
};

// Thread-safe. Chunks of chunk_bytes are kept for reuse; a larger one (for one huge record) is
// freed when it comes back.
class chunk_pool {
 public:
  explicit chunk_pool(size_t chunk_bytes) : chunk_bytes_(chunk_bytes) {}
  ~chunk_pool();
  chunk_pool(const chunk_pool &) = delete;
  chunk_pool &operator=(const chunk_pool &) = delete;

  // A fresh chunk of at least min_bytes.
  chunk *take(size_t min_bytes);
  // Takes back a chunk nobody writes into any more.
  void recycle(chunk *c) noexcept;  // (freed when it can not be kept)
  size_t chunk_bytes() const { return chunk_bytes_; }

  // Registry. add() returns how many buffers are registered.
  size_t add(thread_buffer *tb);
  // Forgets the buffer and returns its current chunk (taken from it), or null.
  chunk *remove(thread_buffer *tb);
  // Appends the committed, not yet taken part of each registered buffer's current chunk to out
  // and marks it taken. `bounded` (the fatal-signal path): stop at out's capacity, never allocate.
  void take_committed(std::vector<chunk_range> &out, bool bounded);
  // The same, giving up after `limit` if the registry is locked (the fatal-signal path).
  bool take_committed_within(std::vector<chunk_range> &out, std::chrono::milliseconds limit);

  // fork(): prepare locks everything, parent unlocks; in the child only the forking thread
  // exists: the pool forgets every buffer but `survivor` (whose chunk restarts empty), takes back
  // `orphans` (chunks the parent had handed over) and makes its locks anew.
  void fork_prepare();
  void fork_parent();
  void fork_child(thread_buffer *survivor, std::vector<chunk *> &orphans);

 private:
  void collect(std::vector<chunk_range> &out, bool bounded);

  const size_t chunk_bytes_;
  std::mutex pool_mutex_;
  std::vector<chunk *> pool_;
  std::mutex registry_mutex_;
  std::vector<thread_buffer *> buffers_;
};

}  // namespace dftrace::detail
