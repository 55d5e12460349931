// schedule_share.cpp: the shared page of the step schedule, and the thread by which a forked
// child follows its parent's schedule.
#include "runtime/schedule_share.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "base/attach_channel.hpp"
#include "base/thread_role.hpp"

namespace dftrace::detail {

schedule_page *schedule_page::create() {
  void *p = mmap(nullptr, sizeof(schedule_page), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                 -1, 0);
  return p == MAP_FAILED ? nullptr : new (p) schedule_page;
}

namespace {
constexpr uint32_t k_page_magic = k_channel_page_magic;  // (the channel's sweep reads it)

// The parent of pid (/proc/PID/stat, field 4), 0 when unknown.
pid_t parent_of(pid_t pid) { return static_cast<pid_t>(process_stat_field(pid, 4)); }
}  // namespace

schedule_page *schedule_page::create_named(const std::string &path) {
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  const int fd = open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return nullptr;
  void *p = MAP_FAILED;
  if (ftruncate(fd, sizeof(schedule_page)) == 0)
    p = mmap(nullptr, sizeof(schedule_page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    unlink(tmp.c_str());
    return nullptr;
  }
  auto *page = new (p) schedule_page;
  // sweep_attach_channel reads a page's head as channel_page_head.
  static_assert(
      offsetof(schedule_page, magic_) == offsetof(channel_page_head, magic) &&
          offsetof(schedule_page, owner_pid_) == offsetof(channel_page_head, owner_pid) &&
          offsetof(schedule_page, owner_start_) == offsetof(channel_page_head, owner_start),
      "a page begins as channel_page_head");
  page->owner_pid_ = static_cast<uint64_t>(getpid());
  page->owner_start_ = process_start_ticks(getpid());
  page->magic_ = k_page_magic;
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    munmap(p, sizeof(schedule_page));
    return nullptr;
  }
  return page;
}

const schedule_page *schedule_page::open_named(const std::string &path, pid_t pid) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st;
  void *p = MAP_FAILED;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_nlink == 1 &&
      !(st.st_mode & 077) && static_cast<size_t>(st.st_size) == sizeof(schedule_page))
    p = mmap(nullptr, sizeof(schedule_page), PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return nullptr;
  const auto *page = static_cast<const schedule_page *>(p);
  const uint64_t start = process_start_ticks(pid);
  if (page->magic_ == k_page_magic && page->owner_pid_ == static_cast<uint64_t>(pid) && start &&
      page->owner_start_ == start)
    return page;
  munmap(p, sizeof(schedule_page));  // another process's (a reused pid), or not a page
  return nullptr;
}

const schedule_page *ancestor_page(const std::string &dir, pid_t *publisher, int depth) {
  pid_t pid = getppid();
  for (int i = 0; i < depth && pid > 1; ++i, pid = parent_of(pid)) {
    const std::string path = dir + "/" + std::to_string(pid) + ".page";
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) continue;  // (most ancestors: no page)
    if (const schedule_page *page = schedule_page::open_named(path, pid)) {
      *publisher = pid;
      return page;
    }
  }
  return nullptr;
}

void schedule_page::publish(const schedule_state &st) {
  const bool changed = gate_.load(std::memory_order_relaxed) != static_cast<uint32_t>(st.gate) ||
                       skip_first_.load(std::memory_order_relaxed) != st.s.skip_first ||
                       wait_.load(std::memory_order_relaxed) != st.s.wait ||
                       warmup_.load(std::memory_order_relaxed) != st.s.warmup ||
                       active_.load(std::memory_order_relaxed) != st.s.active ||
                       repeat_.load(std::memory_order_relaxed) != st.s.repeat ||
                       !(window_relaxed() == st.window);
  if (!changed) {
    step_.store(st.step, std::memory_order_release);
    return;
  }
  // Release stores of the words and acquire loads in read(), rather than fences: a reader that
  // sees one word of this update sees the odd sequence after it (ThreadSanitizer, which does not
  // model standalone fences, checks it this way too).
  seq_.fetch_add(1, std::memory_order_acq_rel);  // odd: being written
  skip_first_.store(st.s.skip_first, std::memory_order_release);
  wait_.store(st.s.wait, std::memory_order_release);
  warmup_.store(st.s.warmup, std::memory_order_release);
  active_.store(st.s.active, std::memory_order_release);
  repeat_.store(st.s.repeat, std::memory_order_release);
  gate_.store(st.gate, std::memory_order_release);
  win_open_.store(st.window.open, std::memory_order_release);
  win_level_.store(st.window.level, std::memory_order_release);
  win_pid_.store(st.window.pid, std::memory_order_release);
  win_gen_.store(st.window.gen, std::memory_order_release);
  win_for_ns_.store(st.window.for_ns, std::memory_order_release);
  win_steps_.store(st.window.steps, std::memory_order_release);
  step_.store(st.step, std::memory_order_release);
  seq_.fetch_add(1, std::memory_order_acq_rel);  // even: complete
  // Shared between processes: no FUTEX_PRIVATE_FLAG.
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(&seq_), FUTEX_WAKE, INT32_MAX, nullptr, nullptr,
          0);
}

// The writer's own view (it alone writes them).
window_state schedule_page::window_relaxed() const {
  return {
      win_open_.load(std::memory_order_relaxed) != 0, win_level_.load(std::memory_order_relaxed),
      win_pid_.load(std::memory_order_relaxed),       win_gen_.load(std::memory_order_relaxed),
      win_for_ns_.load(std::memory_order_relaxed),    win_steps_.load(std::memory_order_relaxed)};
}

namespace {
uint64_t monotonic_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}
}  // namespace

bool schedule_page::read(schedule_state *out) const {
  // A writer preempted in the middle of its stores holds readers up for as long as it waits for
  // a core (long on a loaded machine): a second of failed tries, not a count, ends the wait.
  constexpr uint64_t k_give_up_ns = 1000000000ull;
  uint64_t deadline = 0;
  for (uint32_t tries = 0;; ++tries) {
    if (tries % 64 == 63) {
      const uint64_t now = monotonic_ns();
      if (!deadline)
        deadline = now + k_give_up_ns;
      else if (now >= deadline)
        return false;
    }
    schedule_state st;
    const uint32_t before = seq_.load(std::memory_order_acquire);
    if (before & 1u) {
      sched_yield();
      continue;
    }
    // Acquire loads: the sequence's second read stays after them.
    st.s = {skip_first_.load(std::memory_order_acquire), wait_.load(std::memory_order_acquire),
            warmup_.load(std::memory_order_acquire), active_.load(std::memory_order_acquire),
            repeat_.load(std::memory_order_acquire)};
    st.gate = gate_.load(std::memory_order_acquire) != 0;
    st.step = step_.load(std::memory_order_acquire);
    st.window = {
        win_open_.load(std::memory_order_acquire) != 0, win_level_.load(std::memory_order_acquire),
        win_pid_.load(std::memory_order_acquire),       win_gen_.load(std::memory_order_acquire),
        win_for_ns_.load(std::memory_order_acquire),    win_steps_.load(std::memory_order_acquire)};
    if (seq_.load(std::memory_order_relaxed) == before) {
      *out = st;
      return true;
    }
  }
}

void schedule_page::wait(uint32_t seen, int timeout_ms) const {
  timespec t{timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
  syscall(SYS_futex, reinterpret_cast<const uint32_t *>(&seq_), FUTEX_WAIT, seen, &t, nullptr, 0);
}

// ---------------------------------------------------------------- the follower thread

namespace {

// A later fork, finalize, or the child's own step ends the thread: it sees the generation
// change (as attach.cpp's listener does).
std::atomic<uint64_t> g_follower_gen{0};

struct follower_args {
  const schedule_page *page;
  bool (*follow)(bool changed);
  uint64_t gen;
};

void *follower_main(void *p) {
  ++t_internal_thread;
  const follower_args args = *static_cast<follower_args *>(p);
  delete static_cast<follower_args *>(p);
  uint32_t seen = ~0u;
  uint64_t seen_ring = 0;
  while (g_follower_gen.load() == args.gen) {
    const uint32_t now = args.page->sequence();
    const uint64_t ring = args.page->ring_state();
    const bool changed = (now != seen && !(now & 1u)) || ring != seen_ring;
    if (changed) seen = now, seen_ring = ring;
    try {
      if (!args.follow(changed)) break;
    } catch (...) {  // (out of memory) never out of the thread: this change is seen again
      seen = ~0u;
    }
    args.page->wait(now, 200);
  }
  return nullptr;
}

}  // namespace

void schedule_follower_stop() { g_follower_gen.fetch_add(1); }

bool schedule_follower_start(const schedule_page *page, bool (*follow)(bool changed)) {
  auto *args = new (std::nothrow) follower_args{page, follow, g_follower_gen.fetch_add(1) + 1};
  if (!args) return false;
  if (start_detached_thread(follower_main, args, "dftrace-sched")) return true;
  delete args;
  return false;
}

}  // namespace dftrace::detail
