// writer_ring.cpp: the writer's flight recorder (output.mode: ring): members of events kept in
// a member_ring instead of written, triggers that write the ring and a trigger line, full
// detail after a trigger, and the ring on the fatal-signal path.
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>

#include <cstring>

#include "base/clock.hpp"
#include "writer/writer.hpp"

namespace dftrace::detail {

namespace {
std::atomic<int> g_signal_trigger_sig{0};
std::atomic<uint64_t> g_signal_trigger_ns{0};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "a signal handler stores it");
}  // namespace

void signal_trigger(int sig, uint64_t mono_ns) noexcept {
  g_signal_trigger_sig.store(sig, std::memory_order_relaxed);
  g_signal_trigger_ns.store(mono_ns ? mono_ns : 1, std::memory_order_release);
  writer_wake().wake();
}

bool writer::ring_due() const {
  if (g_signal_trigger_ns.load(std::memory_order_relaxed)) return true;
  const uint64_t until = hold_until_ns_.load(std::memory_order_relaxed);
  return (until && mono_ns() >= until) || release_at_ns_.load(std::memory_order_relaxed) ||
         followed_releases_.load(std::memory_order_relaxed);
}

void writer::ring_keep(member &m) {
  // The member as it would have been written: compressed when the trace is.
  const bool compressed = settings_.compress;
  if (compressed && !m.ok) {
    dropped_.fetch_add(m.events, std::memory_order_relaxed);
    return;
  }
  const char *p = compressed ? m.out.data() : m.text.data();
  const size_t n = compressed ? m.out.size() : m.text.size();
  ring_->push(p, n, mono_ns(), m.events);  // std::bad_alloc: the pass is dropped (cycle)
}

bool writer::accept_trigger(uint64_t mono_ns) {
  const uint64_t gap = static_cast<uint64_t>(settings_.trigger_min_gap * 1e9);
  if (any_trigger_ && mono_ns < last_trigger_ns_ + gap) return false;
  any_trigger_ = true;
  last_trigger_ns_ = mono_ns;
  return true;
}

bool writer::trigger(std::string_view source, std::string_view reason, uint64_t mono_ns,
                     double after_seconds, std::string_view after_text, bool followed) {
  if (!ring_) return false;
  {
    std::lock_guard<std::mutex> lock(trigger_mutex_);
    // (the followed process's windows are held to its own min_gap: neither refused by this
    // process's triggers nor refusing them)
    if (!followed && !accept_trigger(mono_ns)) return false;
    pending_.push_back({std::string(source), std::string(reason), mono_ns, after_seconds,
                        std::string(after_text), followed});
    trigger_waiting_.store(true, std::memory_order_relaxed);
  }
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    if (stop_) return true;  // finish's pass takes it
    flush_wanted_ = steal_wanted_ = true;
    start_thread();
  }
  wake_thread();
  return true;
}

void writer::ring_release(bool followed) {
  if (!ring_) return;
  const uint64_t now = mono_ns();
  if (followed) {
    followed_release_at_ns_.store(now, std::memory_order_relaxed);
    followed_releases_.fetch_add(1, std::memory_order_release);
  } else {
    release_at_ns_.store(now, std::memory_order_release);
  }
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    flush_wanted_ = steal_wanted_ = true;
  }
  wake_thread();
}

void writer::write_trigger_line(const trigger_fields &t) {
  char buf[4096];
  const size_t n = trigger_line_into(builder_.format(), t, buf, sizeof buf);
  if (!n) return;
  if (!settings_.compress) {
    file_.write(buf, n);
  } else {
    out_.clear();
    if (compressors_.encoder().encode(buf, n, scan(buf, n), out_))
      file_.write(out_.data(), out_.size());
  }
}

void writer::write_trigger(const pending_trigger &p) {
  if (!open_file() || file_.failed()) return;
  const uint64_t mono_ns = p.mono_ns;
  const bool own = !p.after_text.empty();
  const double after_seconds = own ? p.after_seconds : settings_.ring_after_seconds;
  const uint64_t window = ring_->window_ns();
  std::string direct;  // how the dump was written (ring.direct), for the trigger line
  if (!holding_) {     // the window before the trigger, oldest member first
    ring_->forget_before(mono_ns > window ? mono_ns - window : 0);
    ring_write_out();
    ring_direct(&direct);
  }
  trigger_fields t;
  t.direct = direct;
  t.source = p.source;
  t.reason = p.reason;
  t.after = own ? std::string_view(p.after_text) : std::string_view(settings_.ring_after_text);
  t.mono_ns = mono_ns;
  t.from_ns = mono_ns > window ? mono_ns - window : 0;
  write_trigger_line(t);
  triggers_.fetch_add(1, std::memory_order_relaxed);
  const bool opens = !holding_;
  holding_ = true;
  if (opens) ring_tell(true);
  if (p.followed) {
    // A new window of the followed process while its last one is open here: that one ended
    // (the release that came before this trigger is its).
    if (followed_open_) {
      if (followed_releases_.load(std::memory_order_relaxed))
        followed_releases_.fetch_sub(1, std::memory_order_relaxed);
      write_window_end(followed_);
    }
    followed_ = p;
    followed_open_ = true;
    return;
  }
  if (!own_open_) window_ = p;
  own_open_ = true;
  if (after_seconds > 0) {
    const uint64_t until = mono_ns + static_cast<uint64_t>(after_seconds * 1e9);
    if (until > hold_until_ns_.load(std::memory_order_relaxed))
      hold_until_ns_.store(until, std::memory_order_relaxed);
  }
}

namespace {
// The ring's members lie one after another in its buffer: runs of them of up to k_ring_span
// bytes, up to k_ring_batch runs a writev.
const size_t k_ring_span = 1 << 20;
const size_t k_ring_batch = 8;
}  // namespace

bool writer::ring_direct(std::string *said) {
  const char *refused = file_.direct_refused() ? " (refused)" : "";
  if (settings_.ring_direct) {
    if (said) *said = std::string("on") + refused;
    return true;
  }
  if (!settings_.ring_direct_auto || !file_.is_open()) return false;
  const direct_decision d = file_.direct_auto();
  if (said)
    *said = std::string("auto: ") + (d.on ? "on, " : "off, ") + d.fs + (d.on ? refused : "");
  return d.on;
}

void writer::ring_write_out() {
  uint64_t events = 0;
  const bool direct = ring_direct(nullptr);
  const auto out = [&] {
    const bool ok =
        !file_.failed() && (direct ? file_.write_many_direct(ring_iov_.data(), ring_iov_.size())
                                   : file_.write_many(ring_iov_.data(), ring_iov_.size()));
    (ok ? events_written_ : dropped_).fetch_add(events, std::memory_order_relaxed);
    ring_iov_.clear();
    events = 0;
  };
  ring_->drain(k_ring_span, [&](const char *p, size_t n, uint64_t e) {
    ring_iov_.push_back({const_cast<char *>(p), n});  // reserved: never grows
    events += e;
    if (ring_iov_.size() == k_ring_batch) out();
  });
  out();
}

void writer::ring_before_pass() {
  // Before the pass formats and compresses what came since the last one: the ring is on disk
  // without waiting for them, and the pass's members go to the file after it.
  if (!ring_) return;
  pass_ns_ = mono_ns();     // what this pass takes was committed before: full detail's end
  if (crash_wrote_ring_) {  // a fatal signal's path wrote the ring and the process went on
    crash_wrote_ring_ = false;
    ring_->clear();
  }
  ring_take_triggers();
}

void writer::ring_take_triggers() {
  if (!ring_ || (!trigger_waiting_.load(std::memory_order_relaxed) &&
                 !g_signal_trigger_ns.load(std::memory_order_relaxed)))
    return;
  std::vector<pending_trigger> pending;
  {
    std::lock_guard<std::mutex> lock(trigger_mutex_);
    trigger_waiting_.store(false, std::memory_order_relaxed);
    if (const uint64_t at = g_signal_trigger_ns.exchange(0, std::memory_order_acquire)) {
      const int sig = g_signal_trigger_sig.load(std::memory_order_relaxed);
      if (accept_trigger(at)) {
        const char *abbrev = sigabbrev_np(sig);
        pending_.push_back(
            {"signal", std::string("SIG") + (abbrev ? abbrev : "UNKNOWN"), at, 0, {}});
      }
    }
    pending.swap(pending_);
  }
  for (const pending_trigger &p : pending) write_trigger(p);
}

void writer::write_window_end(const pending_trigger &w) {
  if (!file_.is_open() || file_.failed()) return;
  trigger_fields t;
  t.source = w.source;
  t.reason = w.reason;
  t.after = w.after_text.empty() ? std::string_view(settings_.ring_after_text)
                                 : std::string_view(w.after_text);
  t.mono_ns = pass_ns_;
  t.from_ns = w.mono_ns;
  t.end = true;
  write_trigger_line(t);
}

void writer::ring_after_pass() {
  if (!ring_) return;
  // A trigger that came during the pass is taken first: a release never comes before the
  // trigger of the window it ends, and is never lost to it.
  ring_take_triggers();
  // Full detail ends at the first pass that began at or after its time (hold_until_ns_, or the
  // release's): every event committed before that time is in this pass or an earlier one, all
  // in the file (a pass that takes long, behind a backlog or a slow dump of the ring, does not
  // send events of the window to the ring); later members go to the ring. A release not yet
  // due stays wanted (ring_due: the next pass comes at once). The own window and the followed
  // one end each by itself (its trigger_end line); full detail, when both have.
  uint64_t release_at = release_at_ns_.load(std::memory_order_acquire);
  const bool released = release_at && pass_ns_ >= release_at;
  if (released)  // (a release that came since stays)
    release_at_ns_.compare_exchange_strong(release_at, 0, std::memory_order_relaxed);
  // Releases of a followed window whose trigger, taken, opened nothing here (the file failed)
  // end nothing: dropped, or ring_due would stay true and the thread would never wait. (A
  // trigger is pending before its release is counted: none pending, none of theirs to come.)
  uint32_t releases = followed_releases_.load(std::memory_order_acquire);
  if (!followed_open_ && releases && !trigger_waiting_.load(std::memory_order_relaxed))
    followed_releases_.compare_exchange_strong(releases, 0, std::memory_order_relaxed);
  if (!holding_) return;
  const uint64_t until = hold_until_ns_.load(std::memory_order_relaxed);
  if (own_open_ && ((until && pass_ns_ >= until) || (!until && released))) {
    own_open_ = false;
    hold_until_ns_.store(0, std::memory_order_relaxed);
    write_window_end(window_);
  }
  if (followed_open_ && followed_releases_.load(std::memory_order_acquire) &&
      pass_ns_ >= followed_release_at_ns_.load(std::memory_order_relaxed)) {
    followed_releases_.fetch_sub(1, std::memory_order_relaxed);  // (this thread alone takes)
    followed_open_ = false;
    write_window_end(followed_);
  }
  if (own_open_ || followed_open_) return;
  holding_ = false;
  ring_tell(false);
}

void writer::ring_tell(bool open) {
  std::atomic<uint64_t> *word = announce_word_.load(std::memory_order_acquire);
  if (!word) return;
  if (open) ++announced_;
  word->store(announced_ << 1 | (open ? 1 : 0), std::memory_order_release);
  if (std::atomic<uint32_t> *wake = announce_wake_.load(std::memory_order_relaxed))
    ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(wake), FUTEX_WAKE, INT_MAX, nullptr, nullptr,
              0);  // (shared between processes: no FUTEX_PRIVATE_FLAG)
}

void writer::ring_fork_child() {
  // The page the parent tells its windows on is the parent's.
  announce_word_.store(nullptr, std::memory_order_relaxed);
  announce_wake_.store(nullptr, std::memory_order_relaxed);
  announced_ = 0;
  // The parent's window, its triggers pending or taken (a signal that reached the parent
  // included) and its full detail are the parent's: the child's ring starts empty.
  if (ring_) ring_->forget();
  holding_ = own_open_ = followed_open_ = crash_wrote_ring_ = steal_wanted_ = false;
  hold_until_ns_ = 0;
  release_at_ns_ = 0;
  followed_releases_ = 0;
  followed_release_at_ns_ = 0;
  triggers_ = 0;
  pending_.clear();
  trigger_waiting_ = false;
  any_trigger_ = false;
  last_trigger_ns_ = 0;
  g_signal_trigger_ns.store(0, std::memory_order_relaxed);
  g_signal_trigger_sig.store(0, std::memory_order_relaxed);
}

void writer::crash_ring(int sig) {
  // The fatal-signal path (no allocation, no free): the ring as it is, then a trigger line that
  // names the signal; the buffered lines follow (crash_cycle).
  if (!ring_ || !sig || holding_ || crash_wrote_ring_ || !file_.is_open() || file_.failed()) return;
  ring_->for_each_span(k_ring_span, [&](const char *p, size_t n, uint64_t events) {
    const bool ok = !file_.failed() && file_.write(p, n);
    (ok ? events_written_ : dropped_).fetch_add(events, std::memory_order_relaxed);
  });
  crash_wrote_ring_ = true;
  const uint64_t now = crash_ns_ ? crash_ns_ : mono_ns();
  const uint64_t window = ring_->window_ns();
  trigger_fields t;
  t.source = "crash";
  const char *abbrev = sigabbrev_np(sig);
  char reason[32] = "fatal signal";
  if (abbrev) {
    std::memcpy(reason, "SIG", 3);
    std::strncpy(reason + 3, abbrev, sizeof reason - 4);
  }
  t.reason = reason;
  t.after = "0s";
  t.mono_ns = now;
  t.from_ns = now > window ? now - window : 0;
  char buf[1024];
  const size_t n = trigger_line_into(builder_.format(), t, buf, sizeof buf);
  if (n) crash_write(buf, n, scan(buf, n));
  triggers_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace dftrace::detail
