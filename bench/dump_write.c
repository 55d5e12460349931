/* dump_write.c: the flight recorder's dump without dftrace: 64 MiB from an anonymous buffer
 * appended to a new file after a small first member, the way the writer writes a ring, timed
 * (wall and the thread's CPU time, the kernel's copy included). bench/dump_write.sh runs it.
 * Usage: dump_write MODE FILE [SLEEP_MS]
 *   MODE buffered: writev calls of 8 runs of 1 MiB (the writer's ring_write_out)
 *        reserve:  the same after one fallocate(FALLOC_FL_KEEP_SIZE) of the 64 MiB (kept)
 *        direct:   O_DIRECT writes of 1 MiB through an aligned buffer the data is copied into,
 *                  the unaligned head and tail written as before (not kept: bench/RESULTS.md)
 *   SLEEP_MS: a wait between filling the buffer and writing it (in a VM whose balloon reports
 *   free pages to the host, memory freed seconds ago costs the host's faults when the page
 *   cache takes it again). Prints "MODE wall W ms cpu C ms". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum { k_total = 64 << 20, k_span = 1 << 20, k_batch = 8, k_align = 4096 };

static double ms_of(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int buffered(int fd, const char *buf) {
  struct iovec v[k_batch];
  for (size_t off = 0; off < k_total;) {
    int k = 0;
    for (; k < k_batch && off < k_total; ++k, off += k_span) {
      v[k].iov_base = (void *)(buf + off);
      v[k].iov_len = k_span;
    }
    if (writev(fd, v, k) < 0) return -1; /* (a short write is not expected here) */
  }
  return 0;
}

static int direct(int fd, const char *buf, size_t at) {
  static char *bounce;
  if (!bounce) {
    bounce = mmap(NULL, k_span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (bounce == MAP_FAILED) return -1;
    memset(bounce, 0, k_span);
  }
  const size_t head = (k_align - at % k_align) % k_align;
  if (write_all(fd, buf, head) != 0) return -1;
  const int flags = fcntl(fd, F_GETFL);
  if (fcntl(fd, F_SETFL, flags | O_DIRECT) != 0) return -1;
  size_t off = head;
  while (k_total - off >= k_align) {
    size_t n = k_total - off < k_span ? k_total - off : k_span;
    n &= ~(size_t)(k_align - 1);
    memcpy(bounce, buf + off, n);
    if (write_all(fd, bounce, n) != 0) return -1;
    off += n;
  }
  if (fcntl(fd, F_SETFL, flags) != 0) return -1;
  return write_all(fd, buf + off, k_total - off);
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  const char *mode = argv[1];
  char *buf = mmap(NULL, k_total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED) return 1;
  unsigned long long x = 88172645463325252ull; /* bytes that are not all alike */
  for (size_t i = 0; i < k_total; i += 8) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    memcpy(buf + i, &x, 8);
  }
  const int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0 || write_all(fd, "hdr", 3) != 0) return 1; /* the header's member */
  if (argc > 3) usleep((useconds_t)atoi(argv[3]) * 1000);
  const double w0 = ms_of(CLOCK_MONOTONIC), c0 = ms_of(CLOCK_THREAD_CPUTIME_ID);
  int r;
  if (strcmp(mode, "direct") == 0) {
    r = direct(fd, buf, 3);
  } else {
    if (strcmp(mode, "reserve") == 0) fallocate(fd, FALLOC_FL_KEEP_SIZE, 3, k_total);
    r = buffered(fd, buf);
  }
  const double w1 = ms_of(CLOCK_MONOTONIC), c1 = ms_of(CLOCK_THREAD_CPUTIME_ID);
  if (r != 0) {
    perror(mode);
    return 1;
  }
  close(fd);
  printf("%s wall %.1f ms cpu %.1f ms\n", mode, w1 - w0, c1 - c0);
  return 0;
}
