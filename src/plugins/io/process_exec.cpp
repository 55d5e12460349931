// process_exec.cpp: the exec family. A new image keeps the process's id but nothing of dftrace:
// its buffered events, its writer thread and the end line would be lost, and a file the writer
// had already begun (a pass every flush interval) would be left without its end. A shell does
// this all the time: `bash -c 'a; b'` runs its last command by exec, and a subshell of `$(...)`
// execs its one command. So the trace is finalized first, as at exit (README.md, "Safety").
//
// glibc's execv, execvp, execl... reach execve inside the library, not through the table, so
// each is interposed. The variadic ones gather their arguments and go to the vector form.
// Not in a vfork child (posix_spawn, a shell's vfork: it shares its parent's memory, writer and
// file, which stay the parent's). A handler that interrupted this thread inside dftrace gets
// only the signal-safe write (finalizing there would re-enter it). If the exec fails, the
// process goes on: recording starts again at its next event, in a file of its own.
#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

#include "dftrace/plugin.h"
#include "plugins/io/interpose.hpp"

using namespace dftrace::io;

namespace {

// Whether this call finalized the trace (then a failed exec starts it again).
bool finalize_before_exec() {
  if (!g_ready.load(std::memory_order_acquire) || in_vfork_child()) return false;
  if (t_inside) {
    dftrace_flush_from_signal(true);
    return false;
  }
  inside g;
  const int saved = errno;
  const bool was_on = dftrace_is_enabled();
  dftrace_finalize();  // (nothing to do where it never initialised)
  errno = saved;
  return was_on;
}

// After a failed exec: recording starts again at the process's next event, in a new file (the
// old one has its end line). Not at once: a search along PATH (Python's os.execvp) fails several
// times in a row, with no event in between, and would leave a file per try.
int after_failed_exec(bool finalized) {
  if (finalized) {
    inside g;
    const int saved = errno;
    dftrace_resume_after_exec();
    errno = saved;
  }
  return -1;
}

// The arguments of execl, execlp and execle as a vector (on the stack: exec may be called in a
// vfork child or a signal handler, where allocating is not allowed). `envp`: execle's, read
// only where `with_envp`.
#define GATHER_ARGS(arg, argv, with_envp, envp)                          \
  size_t n_##argv = 1;                                                   \
  {                                                                      \
    va_list ap;                                                          \
    va_start(ap, arg);                                                   \
    while (va_arg(ap, const char *)) ++n_##argv;                         \
    va_end(ap);                                                          \
  }                                                                      \
  char *argv[n_##argv + 1];                                              \
  {                                                                      \
    va_list ap;                                                          \
    va_start(ap, arg);                                                   \
    argv[0] = const_cast<char *>(arg);                                   \
    for (size_t i = 1; i <= n_##argv; ++i) argv[i] = va_arg(ap, char *); \
    if (with_envp) envp = va_arg(ap, char *const *);                     \
    va_end(ap);                                                          \
  }

}  // namespace

int execve(const char *path, char *const argv[], char *const envp[]) {
  DFTRACE_IO_REAL(execve);
  const bool finalized = finalize_before_exec();
  real_execve(path, argv, envp);
  return after_failed_exec(finalized);
}

int execv(const char *path, char *const argv[]) {
  DFTRACE_IO_REAL(execv);
  const bool finalized = finalize_before_exec();
  real_execv(path, argv);
  return after_failed_exec(finalized);
}

int execvp(const char *file, char *const argv[]) {
  DFTRACE_IO_REAL(execvp);
  const bool finalized = finalize_before_exec();
  real_execvp(file, argv);
  return after_failed_exec(finalized);
}

int execvpe(const char *file, char *const argv[], char *const envp[]) {
  DFTRACE_IO_REAL(execvpe);
  const bool finalized = finalize_before_exec();
  real_execvpe(file, argv, envp);
  return after_failed_exec(finalized);
}

int fexecve(int fd, char *const argv[], char *const envp[]) {
  DFTRACE_IO_REAL(fexecve);
  const bool finalized = finalize_before_exec();
  real_fexecve(fd, argv, envp);
  return after_failed_exec(finalized);
}

int execl(const char *path, const char *arg, ...) {
  DFTRACE_IO_REAL(execv);
  char *const *unused_envp = nullptr;
  GATHER_ARGS(arg, argv, false, unused_envp);
  (void)unused_envp;
  const bool finalized = finalize_before_exec();
  real_execv(path, argv);
  return after_failed_exec(finalized);
}

int execlp(const char *file, const char *arg, ...) {
  DFTRACE_IO_REAL(execvp);
  char *const *unused_envp = nullptr;
  GATHER_ARGS(arg, argv, false, unused_envp);
  (void)unused_envp;
  const bool finalized = finalize_before_exec();
  real_execvp(file, argv);
  return after_failed_exec(finalized);
}

int execle(const char *path, const char *arg, ...) {
  DFTRACE_IO_REAL(execve);
  char *const *envp = nullptr;
  GATHER_ARGS(arg, argv, true, envp);
  const bool finalized = finalize_before_exec();
  real_execve(path, argv, envp);
  return after_failed_exec(finalized);
}
