// process_exec.cpp: the exec family. A new image keeps the process's id but nothing of dftrace:
// its buffered events, its writer thread and the end line would be lost, and a file the writer
// had already begun (a pass every flush interval) would be left without its end. A shell does
// this all the time: `bash -c 'a; b'` runs its last command by exec, and a subshell of `$(...)`
// execs its one command. So the trace is finalized first, as at exit (README.md, "Safety").
//
// glibc's execv, execvp, execl... reach execve inside the library, not through the table, so
// each is interposed. The variadic ones gather their arguments and go to the vector form.
// finalize_before_image_ends (image_end.hpp, as _exit) says where not (a vfork child: posix_spawn,
// a shell's vfork) and how (the signal-safe write first, then finalizing under a watchdog: an
// exec from a signal handler that interrupted the allocator). If the exec fails, the process
// goes on: recording starts again at its next event, in a file of its own.
#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

#include "dftrace/plugin.h"
#include "plugins/io/image_end.hpp"
#include "plugins/io/interpose.hpp"

using namespace dftrace::io;

namespace {

// After a failed exec: recording starts again at the process's next event, in a new file (the
// old one has its end line). Not at once: a search along PATH (Python's os.execvp) fails several
// times in a row, with no event in between, and would leave a file per try. Not after a
// finalizing the watchdog abandoned (dftrace's state is where it was left waiting).
int after_failed_exec(image_end e) {
  if (e == image_end::finalized) {
    inside g;
    const int saved = errno;
    dftrace_resume_after_exec();
    errno = saved;
  }
  return -1;
}

// The trace finalized, then the real exec with the caller's arguments; -1 when it fails.
template <typename Real, typename... Args>
int exec_after_finalize(Real real, Args... args) {
  const image_end e = finalize_before_image_ends();
  real(args...);
  return after_failed_exec(e);
}

// The arguments of execl, execlp and execle (`arg`, then `ap` up to its null) as a vector on
// the stack (exec may be called in a vfork child or a signal handler, where allocating is not
// allowed), given to `exec(argv, envp)`; envp: execle's, after the null, where `with_envp`.
template <typename Exec>
int exec_list(const char *arg, va_list ap, bool with_envp, Exec exec) {
  va_list counting;
  va_copy(counting, ap);
  size_t n = 1;
  while (va_arg(counting, const char *)) ++n;
  va_end(counting);
  char *argv[n + 1];
  argv[0] = const_cast<char *>(arg);
  for (size_t i = 1; i <= n; ++i) argv[i] = va_arg(ap, char *);
  char *const *envp = with_envp ? va_arg(ap, char *const *) : nullptr;
  return exec(argv, envp);
}

}  // namespace

int execve(const char *path, char *const argv[], char *const envp[]) {
  DFTRACE_IO_REAL(execve);
  return exec_after_finalize(real_execve, path, argv, envp);
}

int execv(const char *path, char *const argv[]) {
  DFTRACE_IO_REAL(execv);
  return exec_after_finalize(real_execv, path, argv);
}

int execvp(const char *file, char *const argv[]) {
  DFTRACE_IO_REAL(execvp);
  return exec_after_finalize(real_execvp, file, argv);
}

int execvpe(const char *file, char *const argv[], char *const envp[]) {
  DFTRACE_IO_REAL(execvpe);
  return exec_after_finalize(real_execvpe, file, argv, envp);
}

int fexecve(int fd, char *const argv[], char *const envp[]) {
  DFTRACE_IO_REAL(fexecve);
  return exec_after_finalize(real_fexecve, fd, argv, envp);
}

int execl(const char *path, const char *arg, ...) {
  DFTRACE_IO_REAL(execv);
  va_list ap;
  va_start(ap, arg);
  const int r = exec_list(arg, ap, false, [&](char *const *argv, char *const *) {
    return exec_after_finalize(real_execv, path, argv);
  });
  va_end(ap);
  return r;
}

int execlp(const char *file, const char *arg, ...) {
  DFTRACE_IO_REAL(execvp);
  va_list ap;
  va_start(ap, arg);
  const int r = exec_list(arg, ap, false, [&](char *const *argv, char *const *) {
    return exec_after_finalize(real_execvp, file, argv);
  });
  va_end(ap);
  return r;
}

int execle(const char *path, const char *arg, ...) {
  DFTRACE_IO_REAL(execve);
  va_list ap;
  va_start(ap, arg);
  const int r = exec_list(arg, ap, true, [&](char *const *argv, char *const *envp) {
    return exec_after_finalize(real_execve, path, argv, envp);
  });
  va_end(ap);
  return r;
}
