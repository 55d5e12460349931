// held_fds.hpp: the descriptors dftrace holds for a whole run besides the trace file (the attach
// channel's inotify instance, the telemetry node lock): kept at high numbers, counted where the
// I/O plug-in reads the count, and given up when the program meets EMFILE, so that a traced
// program gets as many descriptors as untraced.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

namespace dftrace::detail {

// Where dftrace's own descriptors go: at or above this number (or, under a smaller soft
// RLIMIT_NOFILE, the highest free numbers), never a number the application expects to get from
// open, pipe or dup.
constexpr int k_high_fd_floor = 1000;

// `fd` moved to the lowest free number at or above `floor`, or, below a soft RLIMIT_NOFILE that
// is not above the floor, to (nearly) the highest free number; `fd` is then closed and the new
// number returned (close-on-exec). When no higher number is free, `fd` itself. System calls
// only, no allocation (the fatal-signal path may create the trace file).
int move_fd_high(int fd, int floor);

// dftrace's other descriptors, as the I/O plug-in's EMFILE path reads them (one load): bits 0-7,
// how many held_fd slots hold one now; bits 8-15, how many momentary_fds scopes are open now;
// bits 16-31, a count of the scopes that ended (wrapping), so that a call can tell one came and
// went during it.
extern std::atomic<int> g_held_fds;
constexpr unsigned k_held_mask = 0xffu, k_momentary_one = 1u << 8, k_momentary_mask = 0xff00u,
                   k_momentary_ended_one = 1u << 16;

// A stretch of a dftrace thread's work that opens descriptors for a moment (a telemetry sample's
// /proc files, an attach request's files): counted while it runs, so that a program's call that
// met EMFILE meanwhile waits for its end and is made again (give_up_held_fds).
class momentary_fds {
 public:
  momentary_fds();
  ~momentary_fds();
  momentary_fds(const momentary_fds &) = delete;
  momentary_fds &operator=(const momentary_fds &) = delete;
};

// One descriptor held for the run. The holder uses it under use(); give_up_held_fds() (another
// thread: the program's call that met EMFILE) closes it under the same lock, after which use()
// says it is gone and the holder goes on without it. A thread blocked in poll() on the number
// while it is closed keeps the file until poll returns (the kernel's reference), and must not
// read the number after: it checks with use(). Each hold() is a new generation: a holder that
// ended (an attach listener after finalize) neither uses nor closes its successor's descriptor.
// Objects are never destroyed (a detached thread may use one at exit): make them with `new`.
// At most 4 are ever made.
class held_fd {
 public:
  held_fd() = default;
  held_fd(const held_fd &) = delete;
  held_fd &operator=(const held_fd &) = delete;
  // Holds `fd` (moved high), closing the previous generation's; its generation, or 0 (and `fd`
  // closed) when no slot is free.
  uint64_t hold(int fd);
  // f(fd) under the slot's lock while generation `gen` is held; false when it is not.
  template <typename F>
  bool use(uint64_t gen, F f) {
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ < 0 || gen != gen_) return false;
    f(fd_);
    return true;
  }
  // The number while held (for poll: read again after each wait), else -1.
  int peek() const { return fd_atomic_.load(std::memory_order_acquire); }
  // Closes generation `gen` (the holder's end), when it is still held.
  void close(uint64_t gen);
  // Set once a descriptor was given up because the program needed every number.
  bool given_up() const { return given_up_.load(std::memory_order_acquire); }

 private:
  friend void give_up_held_fds();
  friend void held_fds_fork_child();
  void forget_in_child();
  void give_up();
  void release_locked();
  std::mutex mu_;
  int fd_ = -1;
  uint64_t gen_ = 0;
  bool registered_ = false;
  std::atomic<int> fd_atomic_{-1};
  std::atomic<bool> given_up_{false};
};

// Every held descriptor closed (the program met EMFILE), then the momentary ones waited for (up
// to 200 ms). Thread-safe; not from a holder's use() or inside a momentary_fds scope.
void give_up_held_fds();
// In a forked child (one thread), before anything holds again: every slot's copy closed and
// its lock made anew (a parent's thread may have held it at fork).
void held_fds_fork_child();

}  // namespace dftrace::detail
