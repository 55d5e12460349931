/* copy_prog.c: data copied in the kernel, with byte counts known in advance (test_io_copy.py).
 *
 *   copy_prog copy DIR   a.bin -> a_cfr.bin by copy_file_range (part at given offsets, the
 *                        rest at the descriptors'), b.bin -> b_sf.bin by sendfile (the same),
 *                        c.bin -> a pipe and a socket by sendfile, d.bin -> a pipe -> d_out.bin
 *                        by splice, and e.bin written by pwritev2 at the descriptor's offset
 *                        (-1), then given space by fallocate and posix_fallocate. Prints "copied"
 * when every call was there, or "unsupported <call> <errno>" (exit 3) where the kernel or file
 * system lacks one. copy_prog kill DIR   writes DIR/k.txt, then kill(getpid(), SIGUSR1) copy_prog
 * raise DIR  writes DIR/k.txt, then raise(SIGUSR1)
 *
 * The sizes are the test's (A_SIZE ... below): each source is written whole with write(). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

enum {
  A_SIZE = 100000,
  A_FIRST = 40000,
  B_SIZE = 70000,
  B_FIRST = 25000,
  C_TO_PIPE = 30000,
  C_TO_SOCKET = 20000,
  D_SIZE = 40000,
  E_PART = 1000
};

static char g_path[4096];

static const char *at(const char *dir, const char *name) {
  snprintf(g_path, sizeof g_path, "%s/%s", dir, name);
  return g_path;
}

static void die(const char *what) {
  fprintf(stderr, "copy_prog: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void unsupported(const char *call) {
  printf("unsupported %s %d\n", call, errno);
  exit(3);
}

static int open_or_die(const char *path, int flags) {
  const int fd = open(path, flags, 0644);
  if (fd < 0) die(path);
  return fd;
}

/* A file of `size` bytes, written with write(). */
static void make_file(const char *path, size_t size) {
  char *buf = malloc(size);
  if (!buf) die("malloc");
  for (size_t i = 0; i < size; ++i) buf[i] = (char)('a' + i % 23);
  const int fd = open_or_die(path, O_WRONLY | O_CREAT | O_TRUNC);
  for (size_t done = 0; done < size;) {
    const ssize_t n = write(fd, buf + done, size - done);
    if (n <= 0) die("write");
    done += (size_t)n;
  }
  close(fd);
  free(buf);
}

/* Drains `count` bytes from a pipe or socket (untraced: not a file). */
static void drain(int fd, size_t count) {
  char buf[8192];
  while (count > 0) {
    const ssize_t n = read(fd, buf, count < sizeof buf ? count : sizeof buf);
    if (n <= 0) die("drain");
    count -= (size_t)n;
  }
}

static void by_copy_file_range(const char *dir) {
  make_file(at(dir, "a.bin"), A_SIZE);
  const int from = open_or_die(at(dir, "a.bin"), O_RDONLY);
  const int to = open_or_die(at(dir, "a_cfr.bin"), O_WRONLY | O_CREAT | O_TRUNC);
  loff_t in = 0, out = 0; /* the first part at offsets given: the descriptors' stay at 0 */
  while (in < A_FIRST) {
    const ssize_t n = copy_file_range(from, &in, to, &out, (size_t)(A_FIRST - in), 0);
    if (n < 0 && (errno == ENOSYS || errno == EXDEV || errno == EOPNOTSUPP || errno == EINVAL))
      unsupported("copy_file_range");
    if (n <= 0) die("copy_file_range");
  }
  if (lseek(from, A_FIRST, SEEK_SET) != A_FIRST || lseek(to, A_FIRST, SEEK_SET) != A_FIRST)
    die("lseek");
  for (size_t left = A_SIZE - A_FIRST; left > 0;) { /* the rest at the descriptors' offsets */
    const ssize_t n = copy_file_range(from, NULL, to, NULL, left, 0);
    if (n <= 0) die("copy_file_range");
    left -= (size_t)n;
  }
  close(from);
  close(to);
}

static void sendfile_all(int to, int from, off_t *offset, size_t count) {
  while (count > 0) {
    const ssize_t n = sendfile(to, from, offset, count);
    if (n < 0 && (errno == ENOSYS || errno == EINVAL)) unsupported("sendfile");
    if (n <= 0) die("sendfile");
    count -= (size_t)n;
  }
}

static void by_sendfile(const char *dir) {
  make_file(at(dir, "b.bin"), B_SIZE);
  int from = open_or_die(at(dir, "b.bin"), O_RDONLY);
  const int to = open_or_die(at(dir, "b_sf.bin"), O_WRONLY | O_CREAT | O_TRUNC);
  off_t offset = 0;
  sendfile_all(to, from, &offset, B_FIRST); /* at an offset given: the source's stays at 0 */
  if (lseek(from, B_FIRST, SEEK_SET) != B_FIRST) die("lseek");
  sendfile_all(to, from, NULL, B_SIZE - B_FIRST);
  close(from);
  close(to);

  /* a file to a pipe and to a socket: read from the file, written to no file */
  make_file(at(dir, "c.bin"), C_TO_PIPE + C_TO_SOCKET);
  from = open_or_die(at(dir, "c.bin"), O_RDONLY);
  int p[2], s[2];
  if (pipe(p) != 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, s) != 0) die("pipe");
  sendfile_all(p[1], from, NULL, C_TO_PIPE);
  drain(p[0], C_TO_PIPE);
  sendfile_all(s[0], from, NULL, C_TO_SOCKET);
  drain(s[1], C_TO_SOCKET);
  close(p[0]);
  close(p[1]);
  close(s[0]);
  close(s[1]);
  close(from);
}

static void by_splice(const char *dir) {
  make_file(at(dir, "d.bin"), D_SIZE);
  const int from = open_or_die(at(dir, "d.bin"), O_RDONLY);
  const int to = open_or_die(at(dir, "d_out.bin"), O_WRONLY | O_CREAT | O_TRUNC);
  int p[2];
  if (pipe(p) != 0) die("pipe");
  for (size_t left = D_SIZE; left > 0;) { /* the file into the pipe, then the pipe out */
    ssize_t n = splice(from, NULL, p[1], NULL, left, 0);
    if (n < 0 && (errno == ENOSYS || errno == EINVAL)) unsupported("splice");
    if (n <= 0) die("splice in");
    left -= (size_t)n;
    for (size_t out = (size_t)n; out > 0;) {
      const ssize_t m = splice(p[0], NULL, to, NULL, out, 0);
      if (m <= 0) die("splice out");
      out -= (size_t)m;
    }
  }
  close(p[0]);
  close(p[1]);
  close(from);
  close(to);
}

static void by_pwritev2(const char *dir) {
  char buf[E_PART];
  memset(buf, 'e', sizeof buf);
  struct iovec v = {buf, sizeof buf};
  const int fd = open_or_die(at(dir, "e.bin"), O_WRONLY | O_CREAT | O_TRUNC);
  for (int i = 0; i < 2; ++i) { /* at, and moving, the descriptor's offset */
    const ssize_t n = pwritev2(fd, &v, 1, -1, 0);
    if (n < 0 && (errno == ENOSYS || errno == EOPNOTSUPP)) unsupported("pwritev2");
    if (n != E_PART) die("pwritev2");
  }
  /* space reserved, no data moved (a file system without fallocate fails it: still a call) */
  if (fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 4 * E_PART) != 0 && errno != EOPNOTSUPP)
    die("fallocate");
  if (posix_fallocate(fd, 0, 3 * E_PART) != 0) die("posix_fallocate");
  close(fd);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: copy_prog copy|kill|raise DIR\n");
    return 2;
  }
  const char *dir = argv[2];
  if (strcmp(argv[1], "copy") == 0) {
    by_copy_file_range(dir);
    by_sendfile(dir);
    by_splice(dir);
    by_pwritev2(dir);
    printf("copied\n");
    return 0;
  }
  make_file(at(dir, "k.txt"), 100);
  printf("sending\n");
  fflush(stdout);
  if (strcmp(argv[1], "kill") == 0) kill(getpid(), SIGUSR1);
  if (strcmp(argv[1], "raise") == 0) raise(SIGUSR1);
  printf("not reached\n");
  return 1;
}
