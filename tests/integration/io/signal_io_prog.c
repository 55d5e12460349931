/* signal_io_prog.c: a program that initialises dftrace (its I/O bound, the application mode),
 * records regions in a tight loop for DURATION_MS while a timer's SIGALRM handler, every 50 us,
 * writes to a file in DIR. A handler that interrupts a dftrace call on the same thread must not
 * record its write there (the thread's record buffer is not reentrant; it hung in the
 * allocator the interrupted call held). Prints "regions N ticks M" (test_io.py).
 * Usage: signal_io_prog DIR DURATION_MS */
#include <dftrace/dftrace.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

static int g_fd = -1;
static volatile sig_atomic_t g_ticks = 0;

static void on_tick(int s) {
  (void)s;
  if (write(g_fd, "tick\n", 5) == 5) g_ticks = g_ticks + 1;
}

static long micros_since(const struct timeval *t0) {
  struct timeval now;
  gettimeofday(&now, NULL);
  return (now.tv_sec - t0->tv_sec) * 1000000L + (now.tv_usec - t0->tv_usec);
}

int main(int argc, char **argv) {
  if (argc < 3 || dftrace_init(NULL) != DFTRACE_OK) return 2;
  char path[4096];
  snprintf(path, sizeof path, "%s/log", argv[1]);
  g_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (g_fd < 0) return 1;
  signal(SIGALRM, on_tick);
  struct itimerval every = {{0, 50}, {0, 50}}, off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &every, NULL);
  dftrace_node_t *n = dftrace_node_child(dftrace_category("compute"), "forward");
  dftrace_arg_t args[2] = {DFTRACE_ARG_I("epoch", 3), DFTRACE_ARG_S("phase", "train")};
  const long limit = atol(argv[2]) * 1000L;
  long regions = 0;
  struct timeval t0;
  gettimeofday(&t0, NULL);
  do {
    for (int i = 0; i < 1000; ++i, ++regions)
      dftrace_region_end_ex(dftrace_region_begin(n), args, 2);
  } while (micros_since(&t0) < limit);
  setitimer(ITIMER_REAL, &off, NULL);
  close(g_fd);
  printf("regions %ld ticks %d\n", regions, (int)g_ticks);
  return 0;
}
