// member_ring.hpp: the flight recorder's memory: the newest members of events, as they would
// have been written to the file (compressed when the trace is), kept instead of written. Bounded
// in bytes (a member that would go over pushes out the oldest) and in time (members closed
// before the window's start are let go). Used under the writer's I/O lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace dftrace::detail {

class member_ring {
 public:
  member_ring(uint64_t window_ns, size_t max_bytes)
      : window_ns_(window_ns), max_bytes_(max_bytes) {}

  // A member's bytes, closed at closed_ns (CLOCK_MONOTONIC), holding `events` events. Members
  // older than the window before closed_ns, and the oldest while the ring would hold more than
  // max_bytes, are let go first (counted in discarded()). A member larger than max_bytes is let
  // go itself. Throws std::bad_alloc (the writer's pass then drops it).
  void push(const char *p, size_t n, uint64_t closed_ns, uint64_t events);
  // Lets go of the members closed before `from_ns`.
  void forget_before(uint64_t from_ns);
  // f(bytes, n, events) for each member held, oldest first, then the ring is empty. No
  // allocation (the fatal-signal path writes the ring this way).
  template <typename F>
  void drain(F f) {
    for_each(f);
    clear_kept();
  }
  // The same without emptying the ring (the fatal-signal path: no free either).
  template <typename F>
  void for_each(F f) const {
    for (const entry &e : entries_) f(e.data.data(), e.data.size(), e.events);
  }
  size_t bytes() const { return bytes_; }
  size_t size() const { return entries_.size(); }
  uint64_t discarded() const { return discarded_; }
  uint64_t events() const { return events_; }  // in the members held
  uint64_t window_ns() const { return window_ns_; }
  // fork's child: the parent's members are the parent's.
  void forget() {
    entries_.clear();
    bytes_ = 0;
    events_ = 0;
    discarded_ = 0;
  }

 private:
  struct entry {
    std::vector<char> data;
    uint64_t closed_ns = 0;
    uint64_t events = 0;
  };
  void pop_front();
  void clear_kept();  // after drain: the entries' buffers are let go (the ring is empty)

  const uint64_t window_ns_;
  const size_t max_bytes_;
  std::deque<entry> entries_;
  size_t bytes_ = 0;  // the capacity of the entries' buffers
  uint64_t events_ = 0;
  uint64_t discarded_ = 0;
};

}  // namespace dftrace::detail
