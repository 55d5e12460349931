/* io_bench.c: what tracing adds to a pread of 4 KiB from the page cache, in a program never
 * built with dftrace (bench/io_bench.sh runs it bare and under libdftrace_io, side by side).
 * Usage: io_bench FILE [CALLS] [mt]; prints ns per call (the median of 5 timed loops). "mt"
 * starts an idle thread first, so that the C library takes the path of a multi-threaded
 * process, as it does in a traced one (which has a writer thread): io_instructions.sh
 * subtracts that run's count to leave only the interposer's and dftrace's own instructions.
 * io_bench FILE CALLS mt|st fgetc|fputc: the same loops of fgetc on FILE (from its start again
 * at its end), or of fputc to FILE.out, instead of pread: a stream's character calls, which
 * libdftrace_io folds per stream (src/plugins/io/README.md). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void *idle(void *arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

static int one_call(FILE *f, int put) {
  if (put) return fputc('x', f) == 'x';
  if (fgetc(f) != EOF) return 1;
  rewind(f);
  return fgetc(f) != EOF;
}

static int stream_calls(const char *path, long calls, const char *op) {
  const int put = strcmp(op, "fputc") == 0;
  if (!put && strcmp(op, "fgetc") != 0) return 2;
  char out[4096];
  snprintf(out, sizeof out, "%s.out", path);
  FILE *f = fopen(put ? out : path, put ? "w" : "r");
  if (!f) return 1;
  for (long i = 0; i < calls / 10; ++i)
    if (!one_call(f, put)) return 1;
  double per_call[5];
  for (int r = 0; r < 5; ++r) {
    const double t0 = now_ns();
    for (long i = 0; i < calls; ++i)
      if (!one_call(f, put)) return 1;
    per_call[r] = (now_ns() - t0) / calls;
  }
  qsort(per_call, 5, sizeof per_call[0], cmp);
  printf("%.1f\n", per_call[2]);
  return fclose(f) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  const long calls = argc > 2 ? atol(argv[2]) : 200000;
  pthread_t t;
  if (argc > 3 && strcmp(argv[3], "mt") == 0 && pthread_create(&t, NULL, idle, NULL) != 0) return 1;
  if (argc > 4 && strcmp(argv[4], "pread") != 0) return stream_calls(argv[1], calls, argv[4]);
  int fd = open(argv[1], O_RDONLY);
  if (fd < 0) return 1;
  static char buf[4096];
  for (long i = 0; i < calls / 10; ++i) /* warm the cache and the interposer */
    if (pread(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf) return 1;
  double per_call[5];
  for (int r = 0; r < 5; ++r) {
    const double t0 = now_ns();
    for (long i = 0; i < calls; ++i)
      if (pread(fd, buf, sizeof buf, (off_t)(i & 15) * 4096) != (ssize_t)sizeof buf) return 1;
    per_call[r] = (now_ns() - t0) / calls;
  }
  qsort(per_call, 5, sizeof per_call[0], cmp);
  printf("%.1f\n", per_call[2]);
  close(fd);
  return 0;
}
