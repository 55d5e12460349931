// thread_role.hpp: whether the calling thread is one of dftrace's own (the writer and its
// compressors), so that I/O interposers (src/io) leave the I/O of those threads untraced.
#pragma once

namespace dftrace::detail {

// Set once by each internal thread when it starts; read through dftrace_thread_is_internal()
// on every interposed I/O call (initial-exec: no __tls_get_addr call, as for the event path's
// thread state).
inline thread_local bool t_internal_thread __attribute__((tls_model("initial-exec"))) = false;

}  // namespace dftrace::detail
