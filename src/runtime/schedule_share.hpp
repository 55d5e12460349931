// schedule_share.hpp: the step schedule's state shared with forked children: a page of shared
// memory in which the process that counts the steps publishes its schedule, step and gate, and
// the dftrace attach window it has open, and from which a forked child that counts none follows
// them (docs/configuration.md, "The step schedule"; docs/attach.md, "Forked children"). With
// attach.enable the page is a file of the private attach channel (PID.page), which a child
// started by exec (spawn, posix_spawn, a subprocess) maps read-only to follow the same window
// (docs/attach.md, "Children started by exec").
#pragma once

#include <sys/types.h>
#include <atomic>

#include <cstdint>
#include <string>

#include "runtime/schedule.hpp"

namespace dftrace::detail {

// The attach window of the publishing process: open or not, its level (0 full, 1 io, 2 torch),
// its length (a time or steps, as asked) and a count of the windows it opened (so that a
// follower that missed a close and an open between two looks sees a new window).
struct window_state {
  bool open = false;
  uint32_t level = 0;
  uint32_t pid = 0;  // the publisher
  uint64_t gen = 0, for_ns = 0, steps = 0;
  bool operator==(const window_state &o) const {
    return open == o.open && level == o.level && pid == o.pid && gen == o.gen &&
           for_ns == o.for_ns && steps == o.steps;
  }
};

// A window's gen with this bit: the flight recorder's full detail after a trigger of the
// publisher (its ring word), not an attach window.
constexpr uint64_t k_ring_window = uint64_t{1} << 63;

struct schedule_state {
  schedule s;
  uint64_t step = 0;
  bool gate = true;
  window_state window;
};

// Lives in an anonymous MAP_SHARED mapping made before the first fork, so that the parent and
// all its forked descendants see one copy. One writer (the counting process, under its
// runtime lock); any number of readers (a seqlock: a reader never blocks the writer).
class schedule_page {
 public:
  // A new page, or nullptr when the mapping can not be made (children then keep the state
  // they had at the fork).
  static schedule_page *create();
  // A new page in the file `path` (0600, made under another name and renamed into place), its
  // publisher this process; nullptr when it can not be made.
  static schedule_page *create_named(const std::string &path);
  // The page of `path`, mapped read-only, when it is this user's (a regular file of one link,
  // no access for others, of a page's size) and published by `pid` as it runs now (its start
  // time); nullptr otherwise.
  static const schedule_page *open_named(const std::string &path, pid_t pid);
  // The writer: the whole state. Readers waiting in wait() wake when the gate, the schedule or
  // the window changed (a step that changes none only updates the count: no system call).
  void publish(const schedule_state &st);
  // A consistent copy of the state in *out; false when none comes for about a second (a writer
  // killed while it wrote leaves the sequence odd for good: the page is then as good as gone).
  bool read(schedule_state *out) const;
  // Blocks until the state changes from the sequence `seen` or timeout_ms pass (futex).
  void wait(uint32_t seen, int timeout_ms) const;
  uint32_t sequence() const { return seq_.load(std::memory_order_acquire); }
  // The flight recorder's full detail in the publisher (ring mode): (windows << 1) | open.
  // Written by the publisher's writer thread alone (writer::ring_announce), outside the
  // sequence; a change wakes the waiters of wait() through wake_word().
  std::atomic<uint64_t> *ring_word() { return &ring_word_; }
  std::atomic<uint32_t> *wake_word() { return &seq_; }
  uint64_t ring_state() const { return ring_word_.load(std::memory_order_acquire); }

 private:
  std::atomic<uint32_t> seq_{0};              // odd while the writer writes; the futex word
  uint32_t magic_ = 0;                        // k_page_magic in a named page
  uint64_t owner_pid_ = 0, owner_start_ = 0;  // a named page's publisher, and its start time
  std::atomic<uint64_t> skip_first_{0}, wait_{0}, warmup_{0}, active_{0}, repeat_{0};
  std::atomic<uint64_t> step_{0};
  std::atomic<uint32_t> gate_{1};
  std::atomic<uint32_t> win_open_{0}, win_level_{0}, win_pid_{0};
  std::atomic<uint64_t> win_gen_{0}, win_for_ns_{0}, win_steps_{0};
  std::atomic<uint64_t> ring_word_{0};
  window_state window_relaxed() const;
};

}  // namespace dftrace::detail

namespace dftrace::detail {
// The page of the nearest ancestor of this process (its parent, or further up through processes
// that publish none: a shell, `dftrace run`, a forkserver) that publishes one in the channel
// `dir` (DIR/PID.page, checked by open_named), at most `depth` generations up; nullptr when
// there is none. Says nothing.
const schedule_page *ancestor_page(const std::string &dir, pid_t *publisher, int depth = 16);

// The thread of a forked child that follows `page`: follow(true) after each change of its
// sequence or of its ring word, follow(false) at least every 200 ms; it ends when follow returns
// false or at stop() (at finalize, at the child's own step). An exception of follow never leaves
// the thread (the change is offered again). False when the thread could not start.
bool schedule_follower_start(const schedule_page *page, bool (*follow)(bool changed));
void schedule_follower_stop();
}  // namespace dftrace::detail
