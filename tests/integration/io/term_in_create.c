/* term_in_create.c: a preloaded stand-in for the C library's syscall() that forces one
 * interleaving (test_io.py): the process's main thread has just created the trace's hidden
 * ".<name>.tmp" (the file being made, before its header and its name) when a SIGTERM comes to
 * it, as Pool.terminate's does to a fork worker leaving by os._exit. Once, on the main thread
 * only; every call goes on to the real syscall(). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int g_sent;

long syscall(long number, ...) {
  static long (*real)(long, ...);
  if (!real) real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
  va_list ap;
  va_start(ap, number);
  long a[6];
  for (int i = 0; i < 6; ++i) a[i] = va_arg(ap, long);
  va_end(ap);
  const long r = real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
  if (number == SYS_openat && r >= 0 && !g_sent && (a[2] & O_EXCL)) {
    const char *path = (const char *)a[1];
    const size_t n = strlen(path);
    if (n > 4 && !strcmp(path + n - 4, ".tmp") && real(SYS_gettid) == getpid()) {
      g_sent = 1;
      real(SYS_kill, (long)getpid(), (long)SIGTERM);
    }
  }
  return r;
}
