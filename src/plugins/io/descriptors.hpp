// descriptors.hpp: the descriptors being traced, with their file's hash, and the memory maps of
// traced files (README.md, "Descriptors"). Streams (FILE*) and directory streams (DIR*) are
// traced through their descriptor (fileno, dirfd), so they need no table of their own.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace dftrace::io {

// A descriptor is traced from the open that named a traced file (or a dup of a traced one)
// until its close. A descriptor the interposer never saw opened (inherited across exec, opened
// before the application mode bound, made by a call that is not interposed) is looked up once
// in /proc/self/fd and remembered.
void fd_track(int fd, uint64_t fhash);
void fd_untrack(int fd);                    // opened, not traced
void fd_forget(int fd);                     // closed: the number may be reused by anything
void fd_forget_range(int first, int last);  // each of first..last (inclusive) closed
// In a forked child: every traced descriptor is inherited, its hash defined in the parent's
// trace only; its first use defines it in the child's (dftrace_hash_redefine).
void fd_inherited();
// The table itself (descriptors.cpp), read inline on every call on a descriptor.
namespace fd_table {
constexpr int k_max_fd = 1 << 16;  // descriptors below this are followed; higher ones pass
enum : uint8_t { k_unknown = 0, k_untraced = 1, k_traced = 2, k_inherited = 3 };
extern std::atomic<uint8_t> state[k_max_fd] __attribute__((visibility("hidden")));
extern std::atomic<uint64_t> hash[k_max_fd] __attribute__((visibility("hidden")));
// An unknown descriptor's state, from /proc/self/fd; an inherited one's, its hash defined in
// this process's trace.
uint8_t look_up(int fd, uint8_t state);
}  // namespace fd_table

// Whether `fd` is known not to be traced (one load; unknown descriptors are not).
inline bool fd_untraced(int fd) {
  using namespace fd_table;
  return static_cast<unsigned>(fd) < static_cast<unsigned>(k_max_fd) &&
         state[fd].load(std::memory_order_relaxed) == k_untraced;
}

// Whether `fd` is traced (*fhash: its file's hash).
inline bool fd_hash(int fd, uint64_t *fhash) {
  using namespace fd_table;
  if (static_cast<unsigned>(fd) >= static_cast<unsigned>(k_max_fd)) return false;
  uint8_t s = state[fd].load(std::memory_order_acquire);
  if (__builtin_expect(s != k_traced, 0)) {
    if (s == k_untraced) return false;
    if (look_up(fd, s) != k_traced) return false;
  }
  *fhash = hash[fd].load(std::memory_order_relaxed);
  return true;
}

// Memory maps of traced files, so that munmap and msync on them are traced.
void map_track(void *addr, size_t length, uint64_t fhash);
// The hash of the map starting at (exact) or containing (!exact) addr; false when untraced.
bool map_hash(void *addr, bool exact, uint64_t *fhash);
void map_forget_range(void *addr, size_t length);  // every map starting in [addr, addr+length)

}  // namespace dftrace::io
