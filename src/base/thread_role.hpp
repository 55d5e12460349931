// thread_role.hpp: whether the calling thread is one of dftrace's own (the writer and its
// compressors), so that I/O interposers (src/io) leave the I/O of those threads untraced.
#pragma once

namespace dftrace::detail {

// Set once by each internal thread when it starts; read through dftrace_thread_is_internal().
inline thread_local bool t_internal_thread = false;

}  // namespace dftrace::detail
