// thread_role.hpp: whether the calling thread is one of dftrace's own (the writer and its
// compressors), so that I/O interposers (src/io) leave the I/O of those threads untraced.
#pragma once

namespace dftrace::detail {

// Set once by each internal thread when it starts; read through dftrace_thread_is_internal()
// on every interposed I/O call (initial-exec: no __tls_get_addr call, as for the event path's
// thread state).
inline thread_local bool t_internal_thread __attribute__((tls_model("initial-exec"))) = false;

// Marks the calling (application) thread as dftrace's own while dftrace does its own work on it:
// initialisation reads the configuration, /proc and the topology, finalisation and a new rank
// write or rename the trace. A preloaded interposer must neither trace that I/O nor call back
// into dftrace from it (initialisation holds its lock). Nests.
class internal_scope {
 public:
  internal_scope() : outer_(t_internal_thread) { t_internal_thread = true; }
  ~internal_scope() { t_internal_thread = outer_; }
  internal_scope(const internal_scope &) = delete;
  internal_scope &operator=(const internal_scope &) = delete;

 private:
  const bool outer_;
};

}  // namespace dftrace::detail
