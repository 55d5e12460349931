// descriptors.hpp: the descriptors being traced, with their file's hash, and the memory maps of
// traced files (README.md, "Descriptors"). Streams (FILE*) and directory streams (DIR*) are
// traced through their descriptor (fileno, dirfd), so they need no table of their own.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dftrace::io {

// A descriptor is traced from the open that named a traced file (or a dup of a traced one)
// until its close. A descriptor the interposer never saw opened (inherited across exec, opened
// before the application mode bound, made by a call that is not interposed) is looked up once
// in /proc/self/fd and remembered.
void fd_track(int fd, uint64_t fhash);
void fd_untrack(int fd);  // opened, not traced
void fd_forget(int fd);   // closed: the number may be reused by anything
// Whether `fd` is traced (*fhash: its file's hash).
bool fd_hash(int fd, uint64_t *fhash);

// Memory maps of traced files, so that munmap and msync on them are traced.
void map_track(void *addr, size_t length, uint64_t fhash);
// The hash of the map starting at (exact) or containing (!exact) addr; false when untraced.
bool map_hash(void *addr, bool exact, uint64_t *fhash);
void map_forget(void *addr);

}  // namespace dftrace::io
