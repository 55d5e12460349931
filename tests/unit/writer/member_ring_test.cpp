// member_ring_test.cpp: the flight recorder's ring of members (one buffer, reused in a circle,
// no allocation once it is full), and the writer thread's sleep in ring mode (no poll: the
// trigger signal's handler wakes it).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.hpp"
#include "trace_support.hpp"
#include "writer/member_ring.hpp"
#include "writer/writer.hpp"

using namespace dftrace::detail;

namespace {
thread_local bool t_counting = false;
thread_local size_t t_allocations = 0;
}  // namespace

// Allocations made by this test's own thread while t_counting is set are counted.
void *operator new(size_t n) {
  if (t_counting) ++t_allocations;
  if (void *p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void *operator new(size_t n, const std::nothrow_t &) noexcept {
  if (t_counting) ++t_allocations;
  return std::malloc(n ? n : 1);
}
void *operator new[](size_t n) { return operator new(n); }
void *operator new[](size_t n, const std::nothrow_t &t) noexcept { return operator new(n, t); }
// Every form that can free what the forms above return (a sanitizer checks the pairs).
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, size_t) noexcept { std::free(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete[](void *p, size_t) noexcept { std::free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { std::free(p); }

namespace {

std::string member_bytes(size_t i, size_t n) {
  std::string s(n, '\0');
  for (size_t k = 0; k < n; ++k) s[k] = static_cast<char>('a' + (i * 7 + k) % 26);
  return s;
}

std::string held(const member_ring &r) {
  std::string all;
  r.for_each_span(1 << 20, [&](const char *p, size_t n, uint64_t) { all.append(p, n); });
  return all;
}

}  // namespace

TEST(MemberRing, KeepsTheNewestMembersInOneBufferWithoutAllocatingOnceFull) {
  const size_t cap = 64 * 1024;
  member_ring r(3600'000'000'000ull, cap);
  std::vector<std::string> pushed;
  // Members of varied sizes, so that some do not fit before the buffer's end.
  const auto push = [&](size_t i) {
    pushed.push_back(member_bytes(i, 1000 + (i * 997) % 5000));
    r.push(pushed.back().data(), pushed.back().size(), 1000 + i, 10);
  };
  for (size_t i = 0; i < 200; ++i) push(i);  // several rounds of the buffer
  pushed.reserve(pushed.size() + 2000);
  t_allocations = 0;
  for (size_t i = 200; i < 2000; ++i) {
    pushed.push_back(member_bytes(i, 1000 + (i * 997) % 5000));
    t_counting = true;  // the ring's push alone
    r.push(pushed.back().data(), pushed.back().size(), 1000 + i, 10);
    t_counting = false;
  }
  EXPECT_EQ(t_allocations, 0u) << "the ring allocated while full";
  // Every member held lies in the buffer, and they are the newest, oldest first, intact.
  ASSERT_NE(r.buffer(), nullptr);
  size_t spans = 0;
  r.for_each_span(1 << 20, [&](const char *p, size_t n, uint64_t) {
    ++spans;
    EXPECT_GE(p, r.buffer());
    EXPECT_LE(p + n, r.buffer() + r.capacity());
  });
  EXPECT_LE(spans, 2u);  // one run, or two where the circle turns
  EXPECT_LE(r.bytes(), cap);
  EXPECT_GT(r.bytes(), cap / 2);  // at most one member's room is left unused at the end
  std::string expect;
  for (size_t i = pushed.size() - r.size(); i < pushed.size(); ++i) expect += pushed[i];
  EXPECT_EQ(held(r), expect);
  EXPECT_EQ(r.events(), 10 * r.size());
  EXPECT_EQ(r.discarded(), 10 * (pushed.size() - r.size()));
}

TEST(MemberRing, LetsGoOfMembersOlderThanTheWindowAndOfOversizedOnes) {
  member_ring r(100, 4096);
  const std::string a = member_bytes(1, 1000), b = member_bytes(2, 1000), big(5000, 'x');
  r.push(a.data(), a.size(), 1000, 1);
  r.push(b.data(), b.size(), 1050, 2);
  EXPECT_EQ(held(r), a + b);
  r.push(big.data(), big.size(), 1060, 4);  // larger than the ring: let go itself
  EXPECT_EQ(r.discarded(), 4u);
  r.push(a.data(), a.size(), 1120, 8);  // the window before 1120 starts at 1020: a goes
  EXPECT_EQ(held(r), b + a);
  EXPECT_EQ(r.discarded(), 5u);
  uint64_t events = 0;
  r.drain(1 << 20, [&](const char *, size_t, uint64_t e) { events += e; });
  EXPECT_EQ(events, 10u);
  EXPECT_EQ(r.size(), 0u);
  EXPECT_EQ(r.discarded(), 5u);  // written, not discarded
}

namespace {
void on_trigger_signal(int sig) { signal_trigger(sig, mono_ns()); }
}  // namespace

TEST(WriterWake, AnIdleRingWriterSleepsUntilTheTriggerSignalWakesIt) {
  dftrace::test::temp_dir d;
  writer_settings ws;
  ws.compress = false;
  ws.kind = codec_auto();
  ws.level = codec_default_level(ws.kind);
  ws.member_bytes = 4096;
  ws.flush_interval = 3600;  // no pass on its own while the test runs
  ws.chunk_bytes = 4096;
  ws.queue_bytes = 1 << 20;
  ws.compress_threads = 1;
  ws.format.pid = 4242;
  ws.path = d.path + "/w.pfw";
  ws.header = "[\n";
  ws.ring_seconds = 3600;
  ws.ring_bytes = 1 << 20;
  ws.ring_after_text = "0s";
  writer w(ws);
  thread_buffer tb;
  w.register_buffer(&tb);  // the writer thread starts
  // Nothing is due for an hour: the thread sleeps (it used to wake every 100 ms in ring mode,
  // to look for a signal's trigger).
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  EXPECT_EQ(w.wakes(), 0u);
  struct sigaction sa {
  }, old{};
  sa.sa_handler = on_trigger_signal;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR2, &sa, &old), 0);
  raise(SIGUSR2);  // handled on this thread: the writer thread blocks such signals
  for (int i = 0; i < 6000 && w.triggers() == 0; ++i)  // a bound, not a measure: 60 s
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  sigaction(SIGUSR2, &old, nullptr);
  EXPECT_EQ(w.triggers(), 1u) << "the signal's trigger was not taken";
  EXPECT_GE(w.wakes(), 1u);
  w.unregister_buffer(&tb);
  w.finish(end_fields{});
  const std::vector<std::string> lines = dftrace::test::read_lines(ws.path);
  size_t trigger_lines = 0;
  for (const std::string &l : lines)
    trigger_lines +=
        l.find("\"signal\"") != std::string::npos && l.find("SIGUSR2") != std::string::npos;
  EXPECT_EQ(trigger_lines, 1u);
}
