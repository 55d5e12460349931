// posix_make.cpp: the calls that make a descriptor and record no event (sockets, pipes, event,
// timer, signal and inotify descriptors, memory files, temporary files, popen): interposed so
// that a call that fails with EMFILE while dftrace holds a descriptor is made again once
// (retry_after_trace_write), and so that the new number, whatever the table knew of it, is
// looked up again at its next use.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>

#include "plugins/io/calls.hpp"

using namespace dftrace::io;

namespace {

// The new descriptors forgotten (no system call: errno stays the real call's).
void forget_new(int fd) { fd_forget(fd); }
void forget_new(const int *pair, int ret) {
  if (ret == 0) {
    fd_forget(pair[0]);
    fd_forget(pair[1]);
  }
}
void forget_new(FILE *f) {
  if (!f) return;
  const int saved = errno;
  const int fd = ::fileno_unlocked(f);
  errno = saved;
  fd_forget(fd);
}

// mkstemp's forms write the name they tried into the template, also when they fail: it is put
// back before the call is made again (a template longer than a path is not made again).
template <typename Call>
int temp_made(char *tmpl, Call call) {
  char saved[4096];
  const size_t n = tmpl ? ::strnlen(tmpl, sizeof saved) : sizeof saved;
  if (n >= sizeof saved) return call();
  ::memcpy(saved, tmpl, n + 1);
  bool again = false;
  const int fd = retry_after_trace_write([&] {
    if (again) ::memcpy(tmpl, saved, n + 1);
    again = true;
    return call();
  });
  forget_new(fd);
  return fd;
}

}  // namespace

extern "C" {

// One descriptor (or a stream) as the result.
#define DFTRACE_IO_SHAPE_MAKE_FD(cat, name, event, result, params, args)          \
  result name params {                                                            \
    DFTRACE_IO_REAL(name);                                                        \
    result const ret = retry_after_trace_write([&] { return real_##name args; }); \
    if (!in_vfork_child()) forget_new(ret);                                       \
    return ret;                                                                   \
  }                                                                               \
  DFTRACE_IO_REGISTER(name);

// Two descriptors in the array `fds` (pipe, pipe2, socketpair).
#define DFTRACE_IO_SHAPE_MAKE_PAIR(cat, name, event, params, args)             \
  int name params {                                                            \
    DFTRACE_IO_REAL(name);                                                     \
    const int ret = retry_after_trace_write([&] { return real_##name args; }); \
    if (!in_vfork_child()) forget_new(fds, ret);                               \
    return ret;                                                                \
  }                                                                            \
  DFTRACE_IO_REGISTER(name);

// A temporary file from a template (mkstemp and its forms).
#define DFTRACE_IO_SHAPE_MAKE_TEMP(cat, name, event, params, args) \
  int name params {                                                \
    DFTRACE_IO_REAL(name);                                         \
    return temp_made(tmpl, [&] { return real_##name args; });      \
  }                                                                \
  DFTRACE_IO_REGISTER(name);

#include "plugins/io/shapes.hpp"
#define DFTRACE_IO_CALL DFTRACE_IO_WRAPPER
#include "dftrace/io_calls.def"

}  // extern "C"
