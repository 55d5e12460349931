// clock.hpp: the event path's clock. Application threads read a raw tick (the invariant TSC
// when the kernel itself keeps time with it, CLOCK_MONOTONIC nanoseconds otherwise); the
// writer turns ticks into CLOCK_MONOTONIC nanoseconds with a tick map (design: README.md in
// this folder, "Clock").
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <ctime>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define DFTRACE_HAVE_TSC 1
#endif

namespace dftrace::detail {

inline uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// True while ticks are TSC ticks (set by tick_map::start before recording begins).
extern std::atomic<bool> g_ticks_are_tsc;

// One tick on the calling thread: one rdtsc, or one clock_gettime when the TSC is not used.
inline uint64_t tick_now() {
#ifdef DFTRACE_HAVE_TSC
  if (__builtin_expect(g_ticks_are_tsc.load(std::memory_order_relaxed), 1)) return __rdtsc();
#endif
  return mono_ns();
}

// A tick read only once every store before it is seen by other threads (off the event path:
// a window's end, read after a switch that other threads must see first). rdtsc alone may run
// ahead of the stores before it.
inline uint64_t tick_now_ordered() {
  // A sequentially consistent read-modify-write orders every store before it (x86: a locked
  // instruction, a full barrier); ThreadSanitizer models it, as it does no standalone fence.
  static std::atomic<uint32_t> order_word{0};
  order_word.fetch_add(1, std::memory_order_seq_cst);
#ifdef DFTRACE_HAVE_TSC
  _mm_lfence();  // the rdtsc waits for the locked instruction to complete
#endif
  return tick_now();
}

// Whether this machine's TSC may stand in for CLOCK_MONOTONIC: an x86 CPU with an invariant
// TSC and a kernel that keeps time with it (its clocksource is "tsc": the kernel checked that
// the TSC is stable and synchronised across CPUs). `forced` (timer.source: tsc): the invariant
// TSC is enough, whatever clocksource the kernel uses. `why` says why not.
bool tsc_usable(const char **why, bool forced);
// Whether the kernel itself keeps time with the TSC (what timer.source: auto needs).
bool kernel_uses_tsc();

// Ticks -> CLOCK_MONOTONIC ns. A continuous, increasing, piecewise-linear function made of
// anchors (tick, ns, slope). The function is never changed where it has been used: a new anchor
// is appended only at a tick read after every tick converted so far (the writer takes it after
// it has taken its batch of records), so a tick converted twice gives the same ns, and the
// order of ticks is kept (nesting survives). Anchors are rate-limited (1 ms at first, doubling
// to 1 s), so the map grows by 24 bytes a second at most.
//
// Threads: anchor() and to_ns() are called by the active writer under its I/O lock; the count
// is published with release/acquire, and anchor storage is never moved or freed.
class tick_map {
 public:
  tick_map() = default;
  tick_map(const tick_map &) = delete;
  tick_map &operator=(const tick_map &) = delete;
  ~tick_map() {
    for (point *b : blocks_) delete[] b;
  }
  // Chooses the tick source (TSC if wanted and usable) and places the first anchor. Call before
  // any tick is read for recording. Returns true when the TSC is used; else *why says why not
  // (when the TSC was wanted).
  bool start(bool want_tsc, bool forced, const char **why);
  // Optional, when initialisation begins: the first slope is then measured over its span.
  void prepare();
  bool tsc() const { return tsc_; }

  // Appends an anchor if the spacing since the last one has passed. Writer only.
  void anchor();

  // Monotonic ns of a tick. Identity when ticks are already ns.
  uint64_t to_ns(uint64_t tick) const {
    if (!tsc_) return tick;
    const size_t n = count_.load(std::memory_order_acquire);
    const point &last = at(n - 1);
    if (tick >= last.tick) return eval(last, tick);
    // The writer places an anchor as a pass begins, then formats the records made before it:
    // most ticks fall in the span before the last anchor (what the search would find first).
    if (n >= 2) {
      const point &before = at(n - 2);
      if (tick >= before.tick) return eval(before, tick);
    }
    return to_ns_slow(tick, n);
  }

  size_t anchors() const { return count_.load(std::memory_order_acquire); }
  // Nanoseconds until the next anchor is due (0: now). Any thread.
  uint64_t ns_until_due() const;

  // A map of one anchor (tick0, ns0, slope in 32.32 ns per tick): start() measures these; tests
  // give them.
  void reset(uint64_t tick0, uint64_t ns0, uint64_t slope_q32);
  // An anchor from the sample (tick, ns) (anchor() reads the clocks; tests give it); `force`
  // ignores the spacing.
  void anchor_at(uint64_t tick, uint64_t ns, bool force);

 private:
  struct point {
    uint64_t tick;
    uint64_t ns;
    uint64_t slope;  // ns per tick, 32.32 fixed point
  };
  static constexpr size_t k_block = 1024;
  static constexpr size_t k_blocks = 4096;  // 4 M anchors: 48 days at 1 s spacing

  static uint64_t eval(const point &p, uint64_t tick) {
    return p.ns +
           static_cast<uint64_t>((static_cast<unsigned __int128>(tick - p.tick) * p.slope) >> 32);
  }
  const point &at(size_t i) const { return blocks_[i / k_block][i % k_block]; }
  uint64_t to_ns_slow(uint64_t tick, size_t n) const;
  bool push(const point &p);
  uint64_t spacing(size_t n) const { return uint64_t{1000000} << (n - 1 < 10 ? n - 1 : 10); }

  bool tsc_ = false;
  point *blocks_[k_blocks] = {};
  std::atomic<size_t> count_{0};
  // The last raw sample (measured, not adjusted): the next slope is measured from it.
  uint64_t raw_tick_ = 0, raw_ns_ = 0;
  uint64_t prep_tick_ = 0, prep_ns_ = 0;
  std::atomic<uint64_t> next_due_ns_{0};  // when the next anchor is due (read without the lock)
};

tick_map &ticks();

}  // namespace dftrace::detail
