/* emfile_prog.c: a program that opens files until EMFILE, again and again, while another thread
 * does traced I/O all along (so that the writer's passes come while every descriptor the limit
 * allows is the program's), run untraced and traced under a small RLIMIT_NOFILE
 * (test_trace_fd.py): the count must be the same in every round, traced or not.
 * Usage: emfile_prog DIR ROUNDS HOLD_MS [hold]
 *   300 ms after the I/O thread starts, each round opens DIR/in.txt until EMFILE, keeps them all
 * HOLD_MS milliseconds, closes them; with `hold`, the last round's descriptors are still open when
 * the program exits. Prints one line per round ("round N: COUNT ERRNO-NAME"), then "io thread
 * done". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_int g_stop;
static int g_io_fd = -1;

/* Many small traced writes and reads on a descriptor opened before the rounds. */
static void *io_thread(void *arg) {
  (void)arg;
  char buf[64];
  memset(buf, 'x', sizeof buf);
  long i = 0;
  while (!atomic_load(&g_stop)) {
    if (pwrite(g_io_fd, buf, sizeof buf, (i % 1024) * 64) != (ssize_t)sizeof buf) return NULL;
    if (pread(g_io_fd, buf, sizeof buf, (i % 1024) * 64) < 0) return NULL;
    ++i;
    if (i % 256 == 0) {
      const struct timespec t = {0, 100000};
      nanosleep(&t, NULL);
    }
  }
  return NULL;
}

static void sleep_ms(int ms) {
  const struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000};
  nanosleep(&t, NULL);
}

int main(int argc, char **argv) {
  if (argc < 4) return 2;
  const char *dir = argv[1];
  const int rounds = atoi(argv[2]), hold_ms = atoi(argv[3]);
  const int hold_at_exit = argc > 4 && strcmp(argv[4], "hold") == 0;
  char in[4096], data[4096];
  snprintf(in, sizeof in, "%s/in.txt", dir);
  snprintf(data, sizeof data, "%s/data.bin", dir);
  FILE *f = fopen(in, "w");
  if (!f || fputs("input\n", f) < 0 || fclose(f) != 0) return 3;
  g_io_fd = open(data, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (g_io_fd < 0) return 4;
  pthread_t t;
  if (pthread_create(&t, NULL, io_thread, NULL) != 0) return 5;
  sleep_ms(300); /* past the flush interval (100 ms): the trace file was written first */
  int fds[4096];
  for (int r = 0; r < rounds; ++r) {
    int n = 0, err = 0;
    for (;;) {
      const int fd = open(in, O_RDONLY);
      if (fd < 0) {
        err = errno;
        break;
      }
      if (n == 4096) return 6;
      fds[n++] = fd;
    }
    printf("round %d: %d %s\n", r, n, err == EMFILE ? "EMFILE" : strerror(err));
    fflush(stdout);
    sleep_ms(hold_ms); /* every number the limit allows is the program's meanwhile */
    if (hold_at_exit && r + 1 == rounds) break;
    for (int i = 0; i < n; ++i) close(fds[i]);
  }
  atomic_store(&g_stop, 1);
  pthread_join(t, NULL);
  printf("io thread done\n");
  return 0;
}
