// descriptors.cpp: the descriptor table and the map table (descriptors.hpp). Lock-free: every
// entry is an atomic, and a race between the close of a number and its reuse on another thread
// leaves the entry unknown, which the next call looks up again.
#include "plugins/io/descriptors.hpp"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "plugins/io/interpose.hpp"
#include "plugins/io/paths.hpp"

namespace dftrace::io {

namespace fd_table {
std::atomic<uint8_t> state[k_max_fd];
std::atomic<uint64_t> hash[k_max_fd];
}  // namespace fd_table

using namespace fd_table;

namespace {

// Maps of traced files: few, so a small array scanned only while one exists.
constexpr int k_maps = 256;
std::atomic<uintptr_t> g_map_addr[k_maps];
std::atomic<size_t> g_map_len[k_maps];
std::atomic<uint64_t> g_map_hash[k_maps];
std::atomic<int> g_map_count{0};
std::atomic<pid_t> g_map_pid[k_maps];  // the process whose trace defines the map's hash

// The highest descriptor ever traced: what a forked child scans.
std::atomic<int> g_max_tracked{-1};
void raise_max_tracked(int fd) {
  int seen = g_max_tracked.load(std::memory_order_relaxed);
  while (fd > seen && !g_max_tracked.compare_exchange_weak(seen, fd, std::memory_order_relaxed)) {
  }
}

}  // namespace

// The file an unknown descriptor is open on, from /proc/self/fd. A vfork child, which shares
// its parent's table, neither looks up nor remembers: its own descriptors are not traced.
uint8_t fd_table::look_up(int fd, uint8_t s) {
  errno_keeper keep;
  if (in_vfork_child()) return k_untraced;
  inside g;
  if (s == k_inherited) {
    uint8_t was = k_inherited;
    if (dftrace_hash_redefine(DFTRACE_HASH_FILE, hash[fd].load(std::memory_order_relaxed))) {
      state[fd].compare_exchange_strong(was, k_traced, std::memory_order_acq_rel);
      return k_traced;
    }
    // A hash the runtime does not know (a new trace since): the file is looked up again.
    state[fd].compare_exchange_strong(was, k_unknown, std::memory_order_acq_rel);
  }
  char link[64], path[PATH_MAX];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const long n = ::syscall(SYS_readlinkat, AT_FDCWD, link, path, sizeof path - 1);
  if (n <= 0) return k_unknown;  // not open: the call fails, and the number stays unknown
  path[n] = '\0';
  // "socket:[...]", "pipe:[...]", "anon_inode:..." are not files, nor is a memfd_create
  // descriptor ("/memfd:NAME (deleted)").
  if (path[0] != '/' || std::strncmp(path, "/memfd:", 7) == 0) {
    state[fd].store(k_untraced, std::memory_order_release);
    return k_untraced;
  }
  constexpr const char k_deleted[] = " (deleted)";
  constexpr size_t k_deleted_len = sizeof k_deleted - 1;
  if (static_cast<size_t>(n) > k_deleted_len &&
      std::memcmp(path + n - k_deleted_len, k_deleted, k_deleted_len) == 0)
    path[n - k_deleted_len] = '\0';
  if (!traced_file(path)) {
    state[fd].store(k_untraced, std::memory_order_release);
    return k_untraced;
  }
  fd_track(fd, file_hash(path));  // (followed as an opened one is: a fork marks it inherited)
  return k_traced;
}

void fd_track(int fd, uint64_t fhash) {
  if (fd < 0 || fd >= k_max_fd) return;
  if (fd > g_max_tracked.load(std::memory_order_relaxed)) raise_max_tracked(fd);
  hash[fd].store(fhash, std::memory_order_relaxed);
  state[fd].store(k_traced, std::memory_order_release);
}

void fd_untrack(int fd) {
  if (fd >= 0 && fd < k_max_fd) state[fd].store(k_untraced, std::memory_order_release);
}

void fd_forget(int fd) {
  if (fd >= 0 && fd < k_max_fd) state[fd].store(k_unknown, std::memory_order_release);
}

void fd_forget_range(int first, int last) {
  if (first < 0) first = 0;
  if (last >= k_max_fd) last = k_max_fd - 1;
  for (int fd = first; fd <= last; ++fd) state[fd].store(k_unknown, std::memory_order_release);
}

void fd_inherited() {
  const int last = g_max_tracked.load(std::memory_order_relaxed);
  for (int fd = 0; fd <= last; ++fd)
    if (state[fd].load(std::memory_order_relaxed) == k_traced)
      state[fd].store(k_inherited, std::memory_order_relaxed);
}

void map_track(void *addr, size_t length, uint64_t fhash) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  for (int i = 0; i < k_maps; ++i) {
    uintptr_t free_slot = 0;
    if (g_map_addr[i].load(std::memory_order_relaxed) == 0 &&
        g_map_addr[i].compare_exchange_strong(free_slot, a, std::memory_order_acq_rel)) {
      g_map_len[i].store(length, std::memory_order_relaxed);
      g_map_pid[i].store(known_pid(), std::memory_order_relaxed);
      g_map_hash[i].store(fhash, std::memory_order_release);
      g_map_count.fetch_add(1, std::memory_order_release);
      return;
    }
  }
  // More than k_maps maps of traced files at once: the others' munmap/msync are not traced.
}

bool map_hash(void *addr, bool exact, uint64_t *fhash) {
  if (g_map_count.load(std::memory_order_acquire) == 0) return false;  // munmap of malloc's
  const auto a = reinterpret_cast<uintptr_t>(addr);
  for (int i = 0; i < k_maps; ++i) {
    const uintptr_t start = g_map_addr[i].load(std::memory_order_acquire);
    if (start == 0) continue;
    if (exact ? start == a : (a >= start && a - start < g_map_len[i].load())) {
      *fhash = g_map_hash[i].load(std::memory_order_acquire);
      if (g_map_pid[i].load(std::memory_order_relaxed) != known_pid() && !in_vfork_child()) {
        // a map a forked child inherited: its hash defined in the child's trace
        inside g;
        errno_keeper keep;
        dftrace_hash_redefine(DFTRACE_HASH_FILE, *fhash);
        g_map_pid[i].store(known_pid(), std::memory_order_relaxed);
      }
      return true;
    }
  }
  return false;
}

void map_forget_range(void *addr, size_t length) {
  if (g_map_count.load(std::memory_order_acquire) == 0) return;
  const auto a = reinterpret_cast<uintptr_t>(addr);
  for (int i = 0; i < k_maps; ++i) {
    uintptr_t start = g_map_addr[i].load(std::memory_order_acquire);
    if (start == 0 || start < a || start - a >= length) continue;
    if (g_map_addr[i].compare_exchange_strong(start, 0, std::memory_order_acq_rel))
      g_map_count.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace dftrace::io
