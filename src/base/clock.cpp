// clock.cpp: tick source selection and the tick -> ns map (clock.hpp).
#include "base/clock.hpp"

#include <cstdio>
#include <cstring>
#include <new>

#ifdef DFTRACE_HAVE_TSC
#include <cpuid.h>
#endif

namespace dftrace::detail {

std::atomic<bool> g_ticks_are_tsc{false};

namespace {

#ifdef DFTRACE_HAVE_TSC
inline uint64_t fenced_tsc() {
  _mm_lfence();  // not before earlier loads (the writer's view of committed records)
  const uint64_t t = __rdtsc();
  _mm_lfence();
  return t;
}

// One (tick, ns) pair: the clock read bracketed by two TSC reads, the tightest of a few tries.
void sample(uint64_t *tick, uint64_t *ns) {
  uint64_t best = ~uint64_t{0};
  for (int i = 0; i < 8; ++i) {
    const uint64_t a = fenced_tsc();
    const uint64_t m = mono_ns();
    const uint64_t b = fenced_tsc();
    if (b - a < best) {
      best = b - a;
      *tick = a + (b - a) / 2;
      *ns = m;
    }
  }
}
#endif

}  // namespace

namespace {

// The CPU's TSC runs at a constant rate in every power state: CPUID 0x80000007 EDX bit 8, which
// Linux shows as the flags constant_tsc and nonstop_tsc (a hypervisor may pass the flags on
// without the CPUID bit: either will do).
bool tsc_invariant() {
#ifndef DFTRACE_HAVE_TSC
  return false;
#else
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8))) return true;
  FILE *f = std::fopen("/proc/cpuinfo", "r");
  if (!f) return false;
  char line[4096];
  bool constant = false, nonstop = false;
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "flags", 5) != 0) continue;
    constant = std::strstr(line, " constant_tsc") != nullptr;
    nonstop = std::strstr(line, " nonstop_tsc") != nullptr;
    break;
  }
  std::fclose(f);
  return constant && nonstop;
#endif
}

}  // namespace

bool tsc_usable(const char **why, bool forced) {
#ifndef DFTRACE_HAVE_TSC
  (void)forced;
  *why = "not an x86 CPU";
  return false;
#else
  if (!tsc_invariant()) {
    *why = "the CPU's TSC is not invariant";
    return false;
  }
  if (forced) return true;  // timer.source: tsc: the invariant TSC, whatever the kernel uses
  FILE *f = std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (!f) {
    *why = "the kernel's clocksource is unknown";
    return false;
  }
  char buf[64] = {0};
  const bool got = std::fgets(buf, sizeof buf, f) != nullptr;
  std::fclose(f);
  buf[std::strcspn(buf, "\n")] = 0;
  if (!got || std::strcmp(buf, "tsc") != 0) {
    *why = "the kernel does not keep time with the TSC";
    return false;
  }
  return true;
#endif
}

bool kernel_uses_tsc() {
  const char *why;
  return tsc_usable(&why, false);
}

tick_map &ticks() {
  static tick_map *m = new tick_map;  // never destroyed: used until the process ends
  return *m;
}

bool tick_map::push(const point &p) {
  const size_t n = count_.load(std::memory_order_relaxed);
  if (n >= k_block * k_blocks) return false;
  point *&b = blocks_[n / k_block];
  if (!b) {
    b = new (std::nothrow) point[k_block];
    if (!b) return false;
  }
  b[n % k_block] = p;
  count_.store(n + 1, std::memory_order_release);
  return true;
}

bool tick_map::start(bool want_tsc, bool forced, const char **why) {
  tsc_ = false;
  g_ticks_are_tsc.store(false, std::memory_order_relaxed);
  count_.store(0, std::memory_order_release);
  if (!want_tsc || !tsc_usable(why, forced)) return false;
#ifdef DFTRACE_HAVE_TSC
  // First slope: from the sample prepare() took when initialisation began (its work is the
  // span) or from now, to a sample at least 100 us later (within ~300 ppm); the anchors that
  // follow measure it over ever longer spans, from 1 ms on.
  uint64_t t0 = prep_tick_, n0 = prep_ns_, t1, n1;
  prep_tick_ = prep_ns_ = 0;
  if (t0 == 0 || mono_ns() - n0 > 1000000000u) sample(&t0, &n0);
  do sample(&t1, &n1);
  while (n1 - n0 < 100000 || t1 <= t0);
  reset(t1, n1, static_cast<uint64_t>((static_cast<unsigned __int128>(n1 - n0) << 32) / (t1 - t0)));
  if (!tsc_) *why = "out of memory";
  g_ticks_are_tsc.store(tsc_, std::memory_order_relaxed);
#endif
  return tsc_;
}

void tick_map::prepare() {
#ifdef DFTRACE_HAVE_TSC
  const char *why;
  if (tsc_usable(&why, true)) sample(&prep_tick_, &prep_ns_);
#endif
}

void tick_map::reset(uint64_t tick0, uint64_t ns0, uint64_t slope_q32) {
  count_.store(0, std::memory_order_release);
  tsc_ = push({tick0, ns0, slope_q32});
  raw_tick_ = tick0;
  raw_ns_ = ns0;
  next_due_ns_.store(ns0 + spacing(1), std::memory_order_relaxed);
}

void tick_map::anchor() {
#ifdef DFTRACE_HAVE_TSC
  if (!tsc_) return;
  uint64_t t, n;
  sample(&t, &n);
  anchor_at(t, n, false);
#endif
}

void tick_map::anchor_at(uint64_t tick, uint64_t ns, bool force) {
  const size_t n = count_.load(std::memory_order_relaxed);
  if (!tsc_ || n == 0) return;
  const point &last = at(n - 1);
  if (tick <= last.tick || tick <= raw_tick_ || ns <= raw_ns_) return;  // no progress
  const uint64_t span = ns - raw_ns_;
  if (!force && span < spacing(n)) return;  // 1 ms, 2 ms, ... 1.024 s
  // The slope measured since the previous sample.
  const uint64_t measured =
      static_cast<uint64_t>((static_cast<unsigned __int128>(span) << 32) / (tick - raw_tick_));
  const uint64_t cont = eval(last, tick);  // where the map already reaches at this tick
  point p{tick, ns, measured};
  if (ns < cont) {
    // The map runs ahead of the clock: it may not step back (a tick already converted may lie
    // just before this one), so it stays continuous and runs slower until it meets the clock,
    // by at most 1/1024 of the slope.
    p.ns = cont;
    const unsigned __int128 cut = static_cast<unsigned __int128>(measured) * (cont - ns) / span;
    p.slope = measured - static_cast<uint64_t>(cut < (measured >> 10) ? cut : (measured >> 10));
  }
  // else: the map is behind (or on) the clock: it steps forward to it, which keeps it increasing.
  if (push(p)) {
    raw_tick_ = tick;
    raw_ns_ = ns;
    next_due_ns_.store(ns + spacing(n + 1), std::memory_order_relaxed);
  } else {
    // Full (or out of memory): no anchor is due again, else the writer would find this one
    // due at once, round after round.
    next_due_ns_.store(~uint64_t{0} >> 2, std::memory_order_relaxed);
  }
}

uint64_t tick_map::ns_until_due() const {
  // Read by the writer thread outside the I/O lock, while an anchor may be added under it
  // (by flush or finalize on another thread): only this atomic is shared.
  if (!tsc_) return ~uint64_t{0} >> 2;
  const uint64_t due = next_due_ns_.load(std::memory_order_relaxed), now = mono_ns();
  return due > now ? due - now : 0;
}

uint64_t tick_map::to_ns_slow(uint64_t tick, size_t n) const {
  const point &first = at(0);
  if (tick < first.tick) {
    const uint64_t back = static_cast<uint64_t>(
        (static_cast<unsigned __int128>(first.tick - tick) * first.slope) >> 32);
    return back < first.ns ? first.ns - back : 0;
  }
  size_t lo = 0, hi = n - 1;  // at(lo).tick <= tick < at(hi).tick
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    if (at(mid).tick <= tick)
      lo = mid;
    else
      hi = mid;
  }
  return eval(at(lo), tick);
}

}  // namespace dftrace::detail
