// member_ring.cpp: the flight recorder's members in memory (member_ring.hpp).
#include "writer/member_ring.hpp"

#include <sys/mman.h>

#include <cstring>
#include <new>

namespace dftrace::detail {

member_ring::~member_ring() {
  if (buf_) munmap(buf_, max_bytes_);
}

void member_ring::pop_front() {
  const entry &e = slots_[first_];
  bytes_ -= e.n;
  events_ -= e.events;
  discarded_ += e.events;
  first_ = (first_ + 1) % slots_.size();
  --count_;
}

void member_ring::forget_before(uint64_t from_ns) {
  while (count_ && slots_[first_].closed_ns < from_ns) pop_front();
}

size_t member_ring::place(size_t n) {
  for (;; pop_front()) {
    if (!count_) return 0;
    const size_t oldest = slots_[first_].off;
    const entry &newest = at(count_ - 1);
    const size_t end = newest.off + newest.n;
    if (newest.off >= oldest) {  // [oldest, end) in use
      if (max_bytes_ - end >= n) return end;
      if (oldest >= n) return 0;     // the rest of the buffer is left unused this round
    } else if (oldest - end >= n) {  // [oldest, buffer's end) and [0, end) in use
      return end;
    }
  }
}

void member_ring::push(const char *p, size_t n, uint64_t closed_ns, uint64_t events) {
  if (closed_ns > window_ns_) forget_before(closed_ns - window_ns_);
  if (n > max_bytes_ || n == 0) {
    discarded_ += events;
    return;
  }
  if (!buf_) {
    void *m = mmap(nullptr, max_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    buf_ = static_cast<char *>(m);
  }
  if (count_ == slots_.size()) {  // grows until it holds a full buffer's members, then never
    std::vector<entry> more(slots_.empty() ? 64 : 2 * slots_.size());
    for (size_t i = 0; i < count_; ++i) more[i] = at(i);
    slots_.swap(more);
    first_ = 0;
  }
  const size_t off = place(n);
  std::memcpy(buf_ + off, p, n);
  slots_[(first_ + count_) % slots_.size()] = entry{off, n, closed_ns, events};
  ++count_;
  bytes_ += n;
  events_ += events;
}

}  // namespace dftrace::detail
