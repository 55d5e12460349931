// interpose.hpp: what every interposed I/O function shares: the real function, the guard that
// keeps dftrace's own I/O untraced, the registry of interposers (for the application mode's
// binding), and the event around a call (plugins/common/call_event.hpp; README.md).
#pragma once

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "dftrace/plugin.h"
#include "plugins/common/call_event.hpp"

namespace dftrace::io {

// The next definition of `name` after this library (libc's): looked up at the first call
// (an atomic slot, not a guarded static: no guard to test on every call).
#define DFTRACE_IO_REAL(name)                                                             \
  static std::atomic<void *> real_slot_##name{nullptr};                                   \
  void *real_ptr_##name = real_slot_##name.load(std::memory_order_relaxed);               \
  if (__builtin_expect(real_ptr_##name == nullptr, 0)) {                                  \
    real_ptr_##name = ::dftrace::io::next_symbol(#name, reinterpret_cast<void *>(&name)); \
    real_slot_##name.store(real_ptr_##name, std::memory_order_relaxed);                   \
  }                                                                                       \
  const auto real_##name = reinterpret_cast<decltype(&name)>(real_ptr_##name)

// dlsym(RTLD_NEXT, name). A C library without the function ends the process with one message:
// there is no real call to make (never the case for glibc's functions; HDF5's are only reached
// from a program that calls them, so they exist).
void *next_symbol(const char *name, void *self);
// The same, or null when there is none (for functions of optional libraries: HDF5).
void *next_symbol_or_null(const char *name, void *self);

// Set while the interposer is inside dftrace (whose initialisation reads files): every call
// made then passes straight through.
// (initial-exec: read on every call without a __tls_get_addr call; one byte of the static TLS
// surplus when the library is loaded by dlopen in the application mode.)
inline thread_local bool t_inside __attribute__((tls_model("initial-exec"))) = false;
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

// True once the process's exit has begun (this library's exit handler ran: after the
// application's own handlers, before the static data of the libraries loaded before this one is
// destroyed). From then on a call site that has not found its node passes through untraced: it
// never initialises dftrace, whose static data may be gone (a program whose first interposed
// call is the C++ streams' final flush).
inline std::atomic<bool> g_exit_begun{false};

// The event node category.name, found once and kept in `slot`; null before g_ready.
dftrace_node_t *find_node(std::atomic<dftrace_node_t *> &slot, const char *category,
                          const char *name);
inline dftrace_node_t *node_of(std::atomic<dftrace_node_t *> &slot, const char *category,
                               const char *name) {
  dftrace_node_t *n = slot.load(std::memory_order_acquire);
  return __builtin_expect(n != nullptr, 1) ? n : find_node(slot, category, name);
}

// This process's id as the interposer last saw it (refreshed in a forked child). A vfork child
// shares the parent's memory, so it must neither record nor change the descriptor table: the
// calls that change the table compare this with the real id first.
pid_t known_pid();
bool in_vfork_child();

// Whether a call on `node` is to be recorded now (the node records, and the caller is the
// application, not dftrace itself).
inline bool recording(dftrace_node_t *node) {
  return g_ready.load(std::memory_order_relaxed) && !t_inside && dftrace_node_active_fast(node) &&
         !dftrace_thread_is_internal();
}

// The first half of recording(): the node records (one load). DFTRACE_IO_PASS below.
inline bool maybe_recording(dftrace_node_t *n) { return n && dftrace_node_active_fast(n); }

// The trace file's descriptor (dftrace_trace_fd_address: a high number, or -1), which is not
// the program's: a close of it fails with EBADF as if it were not open, a dup2 onto it moves
// the trace first, close_range and closefrom go around it.
extern const int *g_trace_fd_at __attribute__((visibility("hidden")));
inline bool is_trace_fd(int fd) {
  return __builtin_expect(fd == __atomic_load_n(g_trace_fd_at, __ATOMIC_RELAXED), 0) && fd >= 0;
}

// dftrace's other descriptors (dftrace_held_fds_address): bits 0-7, how many it holds for the
// run (the attach channel's inotify instance, the telemetry node lock); bits 8-15, how many of
// its threads are in a stretch that opens descriptors for a moment (a telemetry sample); bits
// 16-31, how many such stretches ended.
extern const int *g_held_fds_at __attribute__((visibility("hidden")));

// A call that makes a descriptor (every opening call, dup, F_DUPFD, socket, pipe, accept, ...),
// made again once when it failed with EMFILE while dftrace held a descriptor: the trace file's
// (held now, or by a write that let it go during the call: the value at the address changed),
// which dftrace_trace_fd_release gives up or waits for; one held for the run, which
// dftrace_held_fds_release closes for good; or a momentary one of its threads' (one open now, or
// one that came and went during the call), which it waits for. The number is then free, so
// that the program gets the count of descriptors it would have untraced. dftrace's own threads'
// calls are not made again (the writer waiting on its own write).
template <typename Call>
auto retry_after_trace_write(Call call) -> decltype(call()) {
  const int before = __atomic_load_n(g_trace_fd_at, __ATOMIC_RELAXED);
  const unsigned others_before =
      static_cast<unsigned>(__atomic_load_n(g_held_fds_at, __ATOMIC_RELAXED));
  auto ret = call();
  if (__builtin_expect(plugin::failed(ret) && errno == EMFILE, 0)) {
    const int t = __atomic_load_n(g_trace_fd_at, __ATOMIC_ACQUIRE);
    const bool trace = t >= 0 || t != before;  // held now, or a write held it during the call
    const unsigned others = static_cast<unsigned>(__atomic_load_n(g_held_fds_at, __ATOMIC_ACQUIRE));
    // held for the run (bits 0-7), or momentary: open now (8-15), or one ended meanwhile (16-31)
    const bool held = (others & 0xffffu) != 0 || (others >> 16) != (others_before >> 16);
    if ((trace || held) && !t_inside && !dftrace_thread_is_internal()) {
      {
        inside g;
        if (held) dftrace_held_fds_release();
        // then the trace file (a write that had just opened it at a low number is under way,
        // its number now published): given up, or its write waited for
        dftrace_trace_fd_release(__atomic_load_n(g_trace_fd_at, __ATOMIC_ACQUIRE));
      }
      errno = EMFILE;
      ret = call();
    }
  }
  return ret;
}

// The file's hash as DFTracer computes it, its FH line written once.
uint64_t file_hash(const char *path);

// The event around a call and its arguments: plugins/common/call_event.hpp, shared with
// libdftrace_mpi.
using plugin::arg_i;
using plugin::arg_s;
using plugin::arg_u;
using plugin::errno_keeper;
using plugin::failed;
using plugin::nesting;

// One event around `call` on `node` (plugin::call_event), with dftrace's own work inside
// (`inside`: the first event may initialise dftrace, which reads files). The wrappers called
// most (transfers, seeks) reach it through out_of_line, so that their pass-through path needs
// no stack frame for the event's arguments.
template <nesting Nesting = nesting::leaf, typename Call, typename Args>
inline auto traced(dftrace_node_t *node, Call call, Args args, bool with_errno = true)
    -> decltype(call()) {
  return plugin::call_event<Nesting, inside>(node, call, args, with_errno);
}

// The traced path of a wrapper, called out of line with the wrapper's arguments by value: the
// wrapper's pass-through path then keeps nothing in memory (lambdas capturing the arguments by
// reference make the compiler store them all before the first test).
template <typename Slow, typename... Args>
__attribute__((noinline)) auto out_of_line(Slow slow, Args... args) -> decltype(slow(args...)) {
  return slow(args...);
}

// The registry of interposers: every interposed function, by the C library's name, for the
// application mode's binding (bind.cpp). Filled by static registrars before main.
struct symbol {
  const char *name;
  void *function;
  symbol *next;
};
symbol *&symbol_list();
struct registrar {
  registrar(symbol *s) {
    s->next = symbol_list();
    symbol_list() = s;
  }
};

}  // namespace dftrace::io

// The node of the interposed function `name` in `category` (a static slot per function).
#define DFTRACE_IO_NODE(category, name)                     \
  static std::atomic<dftrace_node_t *> node_slot_{nullptr}; \
  dftrace_node_t *const node_ = ::dftrace::io::node_of(node_slot_, category, name)

// The common case first, before any event argument is built (so that the compiler keeps
// the wrapper's frame for the traced path): the node does not record, the call goes straight
// to libc. For the calls made most often (transfers, seeks, stat on a descriptor).
#define DFTRACE_IO_PASS(call) \
  if (__builtin_expect(!::dftrace::io::maybe_recording(node_), 1)) return call
// The same for a call on a descriptor, which also passes at once when the descriptor is known
// not to be traced (a file outside the data directories, a socket: one more load).
#define DFTRACE_IO_PASS_FD(fd, call)                                                             \
  if (__builtin_expect(!::dftrace::io::maybe_recording(node_) || ::dftrace::io::fd_untraced(fd), \
                       1))                                                                       \
  return call

// Registers `function` under the C library's name `name` (namespace scope).
#define DFTRACE_IO_REGISTER_AS(name, function)                                                 \
  static ::dftrace::io::symbol io_symbol_##function{name, reinterpret_cast<void *>(&function), \
                                                    nullptr};                                  \
  static ::dftrace::io::registrar io_registrar_##function { &io_symbol_##function }
#define DFTRACE_IO_REGISTER(name) DFTRACE_IO_REGISTER_AS(#name, name)
