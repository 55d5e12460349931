// member_ring.cpp: the flight recorder's members in memory (member_ring.hpp).
#include "writer/member_ring.hpp"

namespace dftrace::detail {

void member_ring::pop_front() {
  entry &e = entries_.front();
  bytes_ -= e.data.capacity();
  events_ -= e.events;
  discarded_ += e.events;
  entries_.pop_front();
}

void member_ring::forget_before(uint64_t from_ns) {
  while (!entries_.empty() && entries_.front().closed_ns < from_ns) pop_front();
}

void member_ring::push(const char *p, size_t n, uint64_t closed_ns, uint64_t events) {
  if (closed_ns > window_ns_) forget_before(closed_ns - window_ns_);
  if (n > max_bytes_) {
    discarded_ += events;
    return;
  }
  while (!entries_.empty() && bytes_ + n > max_bytes_) pop_front();
  entry e;
  e.data.assign(p, p + n);  // exactly n bytes: the bound counts what is held
  e.closed_ns = closed_ns;
  e.events = events;
  bytes_ += e.data.capacity();
  events_ += e.events;
  entries_.push_back(std::move(e));
}

void member_ring::clear_kept() {
  entries_.clear();
  bytes_ = 0;
  events_ = 0;
}

}  // namespace dftrace::detail
