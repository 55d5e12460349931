// interpose.hpp: what every interposed I/O function shares: the real function, the guard that
// keeps dftrace's own I/O untraced, the path filter, the descriptor and stream tables, and the
// event around a call (README.md).
#pragma once

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "dftrace/dftrace.h"

namespace dftrace::io {

// The next definition of `name` after this library (libc's): looked up at the first call.
#define DFTRACE_IO_REAL(name)                                        \
  static const auto real_##name = reinterpret_cast<decltype(&name)>( \
      ::dftrace::io::next_symbol(#name, reinterpret_cast<void *>(&name)))

// dlsym(RTLD_NEXT, name). A libc without the function (never the case with glibc) ends the
// process with one message: there is no real call to make.
void *next_symbol(const char *name, void *self);

// Set while the interposer is inside dftrace (whose initialisation reads files): every call
// made then passes straight through.
inline thread_local bool t_inside = false;
struct inside {
  inside() : outer_(t_inside) { t_inside = true; }
  ~inside() { t_inside = outer_; }  // nested: dftrace's own I/O may reach an interposer
  inside(const inside &) = delete;
  inside &operator=(const inside &) = delete;

 private:
  const bool outer_;
};

// True once this library's constructor ran (libdftrace is initialised by then): calls made
// earlier, by other libraries' constructors, pass through.
inline std::atomic<bool> g_ready{false};

// The event node category.name, found once and kept in `slot`; null before g_ready.
dftrace_node_t *node_of(std::atomic<dftrace_node_t *> &slot, const char *category,
                        const char *name);

// Whether a call on `node` is to be recorded now (the node records, and the caller is the
// application, not dftrace itself).
inline bool recording(dftrace_node_t *node) {
  return g_ready.load(std::memory_order_relaxed) && !t_inside && dftrace_node_active_fast(node) &&
         !dftrace_thread_is_internal();
}

// Whether I/O on `path` is traced (data directories, never the trace itself, /proc, /sys, /dev).
bool traced_path(const char *path);
// The file's hash as DFTracer computes it, its FH line written once.
uint64_t file_hash(const char *path);

// Descriptors and streams being traced, with their file's hash: fd_hash and stream_hash say
// whether the descriptor or stream is traced and set *fhash.
void fd_track(int fd, uint64_t fhash);
bool fd_hash(int fd, uint64_t *fhash);
void fd_forget(int fd);
void stream_track(FILE *f, uint64_t fhash);
bool stream_hash(FILE *f, uint64_t *fhash);
void stream_forget(FILE *f);

// Event arguments (dftrace_arg_t) of each type.
inline dftrace_arg_t arg_i(const char *key, int64_t v) { return {key, DFTRACE_ARG_INT, {.i = v}}; }
inline dftrace_arg_t arg_u(const char *key, uint64_t v) {
  return {key, DFTRACE_ARG_UINT, {.u = v}};
}
inline dftrace_arg_t arg_s(const char *key, const char *v) {
  return {key, DFTRACE_ARG_STRING, {.s = v}};
}

// One event around `call` on `node`; args(result) gives the event's arguments. The caller's
// errno after the call is what the application sees.
template <typename Call, typename Args>
auto traced(dftrace_node_t *node, Call call, Args args) -> decltype(call()) {
  dftrace_region_t r;
  {
    inside g;
    r = dftrace_region_begin(node);
  }
  auto ret = call();
  const int err = errno;
  if (r) {
    inside g;
    const auto a = args(ret);
    dftrace_region_end_ex(r, a.data(), a.size());
  }
  errno = err;
  return ret;
}

}  // namespace dftrace::io

// The node of the interposed function `name` in `category` (a static slot per function).
#define DFTRACE_IO_NODE(category, name)                     \
  static std::atomic<dftrace_node_t *> node_slot_{nullptr}; \
  dftrace_node_t *const node_ = ::dftrace::io::node_of(node_slot_, category, name)
