/* daemon_prog: behaves like a daemon that tidies its descriptor table, then writes its own file.
 *
 * Usage: daemon_prog close_range|loop|double_close|dup2 OUT
 *
 * Every mode first opens and closes a file and waits past dftrace's flush interval (the battery
 * sets it short), so that a traced process has created its trace file by then. Then:
 *   close_range   close_range(3, ~0U, 0)
 *   loop          for (fd = 3; fd < 1024; ++fd) close(fd), as daemons do
 *   double_close  closes the number it closed already: EBADF untraced
 *   dup2          dup2s a file of its own onto every number from 3 to 19, writes a line through
 *                 each, and closes them
 * and finally opens OUT and writes 20,000 numbered lines to it. It prints what each step saw
 * (the same traced as untraced). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void pause_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

static int write_all(int fd, const char *buf, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, buf, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    buf += w;
    n -= (size_t)w;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: daemon_prog close_range|loop|double_close|dup2 OUT\n");
    return 2;
  }
  const char *mode = argv[1];
  int first = open("first.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (first < 0 || write_all(first, "first\n", 6) != 0) return 3;
  close(first);
  pause_ms(700);
  if (strcmp(mode, "close_range") == 0) {
    long r = syscall(SYS_close_range, 3u, ~0u, 0u);
    printf("close_range: %ld\n", r);
  } else if (strcmp(mode, "loop") == 0) {
    int closed = 0;
    for (int fd = 3; fd < 1024; ++fd)
      if (close(fd) == 0) ++closed;
    /* how many were open is dftrace's business: print only that the loop ran */
    printf("loop: done\n");
    (void)closed;
  } else if (strcmp(mode, "double_close") == 0) {
    int r = close(first);
    printf("second close: %d %s\n", r, r < 0 ? strerrorname_np(errno) : "");
  } else if (strcmp(mode, "dup2") == 0) {
    int own = open("own.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (own < 0) return 3;
    for (int fd = 3; fd < 20; ++fd) {
      if (fd == own) continue;
      if (dup2(own, fd) != fd) {
        printf("dup2 onto %d failed: %s\n", fd, strerrorname_np(errno));
        continue;
      }
      char line[32];
      int n = snprintf(line, sizeof line, "through %d\n", fd);
      if (write_all(fd, line, (size_t)n) != 0) printf("write through %d failed\n", fd);
      pause_ms(fd == 3 ? 700 : 0); /* a flush of dftrace's happens while 3 is the program's */
    }
    for (int fd = 3; fd < 20; ++fd) close(fd);
    printf("dup2: done\n");
  } else {
    fprintf(stderr, "daemon_prog: unknown mode %s\n", mode);
    return 2;
  }
  fflush(stdout);
  int out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0640);
  if (out < 0) {
    perror("open");
    return 4;
  }
  char line[64];
  for (int i = 0; i < 20000; ++i) {
    int n = snprintf(line, sizeof line, "line %d\n", i);
    if (write_all(out, line, (size_t)n) != 0) {
      perror("write");
      return 5;
    }
  }
  close(out);
  printf("wrote %s\n", argv[2]);
  return 0;
}
