// write_whole.hpp: the trace file's append of whole members, shared by output_file.cpp and
// output_direct.cpp.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

namespace dftrace::detail {

// Writes all n bytes of v to fd (a short write is finished member by member); on an error, a
// member written in part (a full file system) is cut off at `size` (the file ends with whole
// members) and the errno is returned; 0 when all was written. System calls only (a child made
// by output_file's write_borrowed runs it; no allocation).
int write_whole(int fd, const struct iovec *v, size_t count, size_t n, uint64_t size);

}  // namespace dftrace::detail
