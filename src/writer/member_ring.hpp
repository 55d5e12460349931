// member_ring.hpp: the flight recorder's memory: the newest members of events, as they would
// have been written to the file (compressed when the trace is), kept instead of written. The
// members lie one after another in one buffer of max_bytes, mapped at the first member and
// reused in a circle (no allocation per member; a member that does not fit before the buffer's
// end starts again at its beginning). Bounded in bytes (the buffer: a member pushes out the
// oldest it would overwrite) and in time (members closed before the window's start are let
// go). Used under the writer's I/O lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dftrace::detail {

class member_ring {
 public:
  member_ring(uint64_t window_ns, size_t max_bytes)
      : window_ns_(window_ns), max_bytes_(max_bytes) {}
  ~member_ring();
  member_ring(const member_ring &) = delete;
  member_ring &operator=(const member_ring &) = delete;

  // A member's bytes, closed at closed_ns (CLOCK_MONOTONIC), holding `events` events. Members
  // older than the window before closed_ns, and the oldest whose bytes the member needs, are let
  // go first (counted in discarded()). A member larger than max_bytes is let go itself. Throws
  // std::bad_alloc (the buffer could not be mapped, or the list of members could not grow: the
  // writer's pass then drops it).
  void push(const char *p, size_t n, uint64_t closed_ns, uint64_t events);
  // Lets go of the members closed before `from_ns`.
  void forget_before(uint64_t from_ns);
  // f(bytes, n, events) for runs of members that lie next to each other in the buffer, oldest
  // first, each run at most max_span bytes (a larger member alone), then the ring is empty. No
  // allocation.
  template <typename F>
  void drain(size_t max_span, F f) {
    for_each_span(max_span, f);
    forget_members();
  }
  // The same without emptying the ring (the fatal-signal path).
  template <typename F>
  void for_each_span(size_t max_span, F f) const {
    const char *p = nullptr;
    size_t n = 0;
    uint64_t events = 0;
    for (size_t i = 0; i < count_; ++i) {
      const entry &e = at(i);
      if (p && buf_ + e.off == p + n && n + e.n <= max_span) {
        n += e.n;
        events += e.events;
        continue;
      }
      if (p) f(p, n, events);
      p = buf_ + e.off;
      n = e.n;
      events = e.events;
    }
    if (p) f(p, n, events);
  }
  size_t bytes() const { return bytes_; }  // in the members held
  size_t size() const { return count_; }
  uint64_t discarded() const { return discarded_; }
  uint64_t events() const { return events_; }  // in the members held
  uint64_t window_ns() const { return window_ns_; }
  // The buffer the members lie in (null before the first member) and its size.
  const char *buffer() const { return buf_; }
  size_t capacity() const { return max_bytes_; }
  // Lets go of every member without counting them as discarded (they were written).
  void clear() { forget_members(); }
  // fork's child: the parent's members are the parent's (the buffer stays, to be reused).
  void forget() {
    forget_members();
    discarded_ = 0;
  }

 private:
  struct entry {
    size_t off = 0, n = 0;
    uint64_t closed_ns = 0;
    uint64_t events = 0;
  };
  const entry &at(size_t i) const { return slots_[(first_ + i) % slots_.size()]; }
  void pop_front();
  size_t place(size_t n);  // where a member of n bytes goes, the oldest let go to make room
  void forget_members() {
    first_ = count_ = 0;
    bytes_ = 0;
    events_ = 0;
  }

  const uint64_t window_ns_;
  const size_t max_bytes_;
  char *buf_ = nullptr;       // max_bytes_, mapped at the first member
  std::vector<entry> slots_;  // a circle of count_ members from first_, oldest first
  size_t first_ = 0, count_ = 0;
  size_t bytes_ = 0;
  uint64_t events_ = 0;
  uint64_t discarded_ = 0;
};

}  // namespace dftrace::detail
