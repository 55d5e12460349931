/* table_prog.c: the descriptor table against calls that change descriptors behind its back, run
 * under `dftrace run` (test_io.py). Each mode prints "table_prog: ok" or why not.
 *   vfork DIR      a vfork child opens DIR/in, redirects it and execs; the parent's next
 *                  descriptor (a pipe, not interposed) must not be taken for DIR/in
 *   close_range DIR, closefrom DIR   a traced descriptor closed by them; its number, reused by
 *                  a pipe, must not be taken for the file
 *   freopen DIR    freopen(NULL, mode, f) of a traced stream keeps it traced
 *   errno DIR      a stream without a descriptor leaves errno alone; readv with a bad buffer
 *                  array on a traced descriptor fails as it does untraced (no crash)
 *   memfd DIR      a memfd_create descriptor (not interposed: looked up in /proc) is no file
 *   symlink DIR    a link DIR/sub/l to the relative target ../in, made from another working
 *                  directory: the event names DIR/in (where the kernel resolves the target)
 *   maps DIR       a map of DIR/in unmapped by a munmap starting lower, then an anonymous map at
 *                  its address: that map's munmap is not taken for the file's
 *   exit_in_handler DIR   allocates and writes DIR/in until a SIGALRM handler calls _exit(7),
 *                  often while the allocator's lock is held: the process must still leave
 *   exec_in_handler DIR   the same, the handler execs `/bin/sh -c 'exit 7'` instead: the exec
 *                  must still happen
 *   write_exit DIR writes DIR/in, then leaves with _exit(0) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static char path[4096];

static int fail(const char *why) {
  printf("table_prog: %s (errno %d)\n", why, errno);
  return 1;
}

/* A pipe whose read end is expected to be descriptor `want`: one byte through it. */
static int pipe_at(int want) {
  int pp[2];
  char c;
  if (pipe(pp) != 0) return fail("pipe");
  if (pp[0] != want) return fail("the pipe did not reuse the number");
  if (write(pp[1], "x", 1) != 1 || read(pp[0], &c, 1) != 1) return fail("pipe transfer");
  close(pp[0]);
  close(pp[1]);
  return 0;
}

static int mode_vfork(void) {
  const pid_t p = vfork();
  if (p == 0) {
    const int fd = open(path, O_RDONLY);
    if (fd < 0 || dup2(fd, 0) != 0) _exit(126);
    close(fd);
    execl("/bin/true", "true", (char *)0);
    _exit(127);
  }
  int st;
  if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
    return fail("the vfork child failed");
  return pipe_at(3);
}

static int mode_close_range(int from) {
  const int fd = open(path, O_RDONLY);
  if (fd != 3) return fail("open did not give 3");
  char c;
  if (read(fd, &c, 1) != 1) return fail("read");
  if (from) {
    closefrom(3);
  } else if (close_range(3, ~0U, 0) != 0) {
    return fail("close_range");
  }
  return pipe_at(3);
}

static int mode_freopen(void) {
  FILE *f = fopen(path, "r");
  if (!f) return fail("fopen");
  f = freopen(NULL, "rb", f);
  if (!f) return fail("freopen");
  char b[4];
  if (fread(b, 1, sizeof b, f) != sizeof b) return fail("fread");
  return fclose(f) == 0 ? 0 : fail("fclose");
}

static int mode_errno(void) {
  char buf[16] = "0123456789";
  FILE *m = fmemopen(buf, 10, "r");
  if (!m) return fail("fmemopen");
  char b[4];
  errno = 0;
  if (fread(b, 1, sizeof b, m) != sizeof b || errno != 0) return fail("fread changed errno");
  if (fclose(m) != 0 || errno != 0) return fail("fclose changed errno");
  const int fd = open(path, O_RDONLY);
  if (fd < 0) return fail("open");
  /* (volatile: the compiler would see the bad arguments; the C library must see them) */
  const struct iovec *volatile bad = (const struct iovec *)8;
  volatile int many = IOV_MAX + 1;
  errno = 0;
  if (readv(fd, bad, 1) != -1 || errno != EFAULT)
    return fail("readv of a bad array did not fail with EFAULT");
  struct iovec one = {b, sizeof b};
  errno = 0;
  if (readv(fd, &one, many) != -1 || errno != EINVAL)
    return fail("readv of too many buffers did not fail with EINVAL");
  if (readv(fd, &one, 1) != (ssize_t)sizeof b) return fail("readv");
  return close(fd) == 0 ? 0 : fail("close");
}

static int mode_memfd(void) {
  const int fd = memfd_create("scratch", 0);
  char b[4];
  if (fd < 0) return fail("memfd_create");
  if (write(fd, "abcd", 4) != 4 || lseek(fd, 0, SEEK_SET) != 0 || read(fd, b, 4) != 4)
    return fail("memfd transfer");
  return close(fd) == 0 ? 0 : fail("close");
}

static int mode_symlink(const char *dir) {
  char sub[4096], link[4096];
  snprintf(sub, sizeof sub, "%s/sub", dir);
  snprintf(link, sizeof link, "%s/sub/l", dir);
  if (mkdir(sub, 0755) != 0 || chdir("/") != 0) return fail("mkdir, chdir");
  if (symlink("../in", link) != 0) return fail("symlink");
  char b[4];
  const int fd = open(link, O_RDONLY);
  if (fd < 0 || read(fd, b, 4) != 4) return fail("reading through the link");
  return close(fd) == 0 ? 0 : fail("close");
}

static int mode_maps(void) {
  const long page = sysconf(_SC_PAGESIZE);
  const int fd = open(path, O_RDONLY);
  if (fd < 0) return fail("open");
  /* room for a page below the file's map */
  char *room = mmap(NULL, 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (room == MAP_FAILED) return fail("mmap room");
  char *p = mmap(room + page, page, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
  if (p != room + page || p[0] != '0') return fail("mmap of the file");
  if (munmap(room, 2 * page) != 0) return fail("munmap from below");
  char *q = mmap(p, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (q != p) return fail("anonymous map at the same address");
  if (munmap(q, page) != 0) return fail("munmap of the anonymous map");
  return close(fd) == 0 ? 0 : fail("close");
}

static void on_alarm(int s) {
  (void)s;
  _exit(7);
}

static void on_alarm_exec(int s) {
  (void)s;
  execl("/bin/sh", "sh", "-c", "exit 7", (char *)NULL);
  _exit(126);
}

static int mode_in_handler(void (*handler)(int)) {
  signal(SIGALRM, handler);
  struct itimerval t = {{0, 0}, {0, 50000}};
  void *keep[64] = {0};
  for (unsigned i = 0;; ++i) {
    if (i == 1) setitimer(ITIMER_REAL, &t, NULL); /* once tracing has started */
    for (int k = 0; k < 64; ++k) {
      free(keep[k]);
      keep[k] = malloc(16 + (i * 7 + k) % 2000);
    }
    if (i % 16 == 0) {
      const int fd = open(path, O_WRONLY | O_TRUNC);
      if (fd < 0 || write(fd, "0123456789", 10) != 10 || close(fd) != 0) return fail("write");
    }
  }
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  snprintf(path, sizeof path, "%s/in", argv[2]);
  FILE *f = fopen(path, "w");
  if (!f || fputs("0123456789", f) < 0 || fclose(f) != 0) return fail("making the file");
  int r = 2;
  if (!strcmp(argv[1], "vfork")) r = mode_vfork();
  if (!strcmp(argv[1], "close_range")) r = mode_close_range(0);
  if (!strcmp(argv[1], "closefrom")) r = mode_close_range(1);
  if (!strcmp(argv[1], "freopen")) r = mode_freopen();
  if (!strcmp(argv[1], "errno")) r = mode_errno();
  if (!strcmp(argv[1], "memfd")) r = mode_memfd();
  if (!strcmp(argv[1], "exit_in_handler")) r = mode_in_handler(on_alarm);
  if (!strcmp(argv[1], "exec_in_handler")) r = mode_in_handler(on_alarm_exec);
  if (!strcmp(argv[1], "write_exit")) {
    const int fd = open(path, O_WRONLY | O_TRUNC);
    _exit(fd < 0 || write(fd, "0123456789", 10) != 10 || close(fd) != 0 ? 1 : 0);
  }
  if (!strcmp(argv[1], "symlink")) r = mode_symlink(argv[2]);
  if (!strcmp(argv[1], "maps")) r = mode_maps();
  if (r == 0) puts("table_prog: ok");
  return r;
}
