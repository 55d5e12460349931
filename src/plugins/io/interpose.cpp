// interpose.cpp: the shared parts of the interposers: symbol lookup, nodes, the process id, file
// hashes and the registry of interposers.
#include "plugins/io/interpose.hpp"

#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>

#include "plugins/io/descriptors.hpp"

namespace dftrace::io {

namespace {
std::atomic<pid_t> g_pid{0};
void refresh_pid() { g_pid.store(static_cast<pid_t>(::syscall(SYS_getpid))); }
void exit_begins() { g_exit_begun.store(true, std::memory_order_release); }
void forked_child() {
  refresh_pid();
  fd_inherited();  // the child's trace defines the hashes of the descriptors it uses
}
const int k_no_trace_fd = -1;
const int k_no_held_fds = 0;
__attribute__((constructor)) void io_ready() {
  refresh_pid();
  g_trace_fd_at = dftrace_trace_fd_address();
  g_held_fds_at = dftrace_held_fds_address();
  ::atexit(exit_begins);
  ::pthread_atfork(nullptr, nullptr, forked_child);  // a vfork child runs no handler
  g_ready.store(true, std::memory_order_release);
}
}  // namespace

const int *g_trace_fd_at = &k_no_trace_fd;
const int *g_held_fds_at = &k_no_held_fds;

namespace {
// What a call of a function the C library lacks does (statx before glibc 2.28, preadv2 before
// 2.26, copy_file_range before 2.27: a program built elsewhere that probes for them with
// dlsym finds the interposer): it fails with ENOSYS, as the kernel's missing system call
// would, and the program falls back. Every interposed function that a C library may lack
// returns an integer (or nothing), which -1 in the result register serves on the ABIs this
// library supports.
long missing_function() {
  errno = ENOSYS;
  return -1;
}
}  // namespace

__attribute__((noinline, cold)) void *next_symbol(const char *name, void *self) {
  void *f = dlsym(RTLD_NEXT, name);
  if (!f || f == self) return reinterpret_cast<void *>(&missing_function);
  return f;
}

void *next_symbol_or_null(const char *name, void *self) {
  void *f = dlsym(RTLD_NEXT, name);
  return f == self ? nullptr : f;
}

dftrace_node_t *find_node(std::atomic<dftrace_node_t *> &slot, const char *category,
                          const char *name) {
  if (!g_ready.load(std::memory_order_acquire) || g_exit_begun.load(std::memory_order_acquire))
    return nullptr;
  dftrace_node_t *n = slot.load(std::memory_order_acquire);
  if (!n) {
    inside g;
    n = dftrace_node_child(dftrace_category(category), name);
    slot.store(n, std::memory_order_release);
  }
  return n;
}

pid_t known_pid() { return g_pid.load(std::memory_order_relaxed); }

bool in_vfork_child() {
  errno_keeper keep;
  return static_cast<pid_t>(::syscall(SYS_getpid)) != known_pid();
}

uint64_t file_hash(const char *path) {
  inside g;
  return dftrace_hash_define(DFTRACE_HASH_FILE, path);
}

symbol *&symbol_list() {
  static symbol *head = nullptr;
  return head;
}

}  // namespace dftrace::io
