/* trace_fd_prog.c: a program that treats descriptors as its own, as shells and daemons do, run
 * untraced and traced (test_trace_fd.py): the trace's descriptor must not be one it can close,
 * reuse or overwrite. Built twice: for `dftrace run` (libdftrace_io preloaded), and with
 * TRACE_FD_LINKED, linked with libdftrace only (no interposer: a region per 500 lines makes
 * the events, DFTRACE_ENABLE starts the trace).
 * Usage: trace_fd_prog MODE DIR, or trace_fd_prog_linked fill N
 *   reuse       open and close a file, wait past the flush interval, close the number again
 *   closerange  close_range(3, ~0U, 0)
 *   closeloop   for (fd = 3; fd < 1024; ++fd) close(fd)
 *   closefrom   closefrom(3)
 *   dup2        dup2 its own file onto 1000 (the trace's number when the limit allows)
 *   fork        a forked child writing to a file its parent opened
 *   fill N      N regions with incompressible arguments, then dftrace_finalize (the trace
 *               goes where DFTRACE_LOG_FILE says)
 * Every mode but fill then writes DIR/out.txt: 20,000 numbered lines. What it sees (results,
 * errno, descriptor numbers) goes to stdout, which must be as untraced; the trace's descriptor
 * number, when one is open, to stderr. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef TRACE_FD_LINKED
#include <dftrace/dftrace.h>
#endif

#ifdef TRACE_FD_LINKED
static dftrace_node_t *step_node(void) {
  static dftrace_node_t *n;
  if (!n) n = dftrace_node_child(dftrace_category("test"), "step");
  return n;
}
#define STEP_BEGIN() dftrace_region_t step_ = dftrace_region_begin(step_node())
#define STEP_END() dftrace_region_end(step_)
#else
#define STEP_BEGIN() (void)0
#define STEP_END() (void)0
#endif

static char dir[3000];

static void path_of(char *buf, size_t cap, const char *name) {
  snprintf(buf, cap, "%s/%s", dir, name);
}

/* The trace's descriptor, from /proc/self/fd (to stderr: untraced there is none). */
static void say_trace_fd(const char *when) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    char link[300], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
    const ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (strstr(target, ".pfw")) fprintf(stderr, "trace fd %s: %s\n", when, e->d_name);
  }
  closedir(d);
}

static void wait_ms(int ms) {
  const char *w = getenv("TRACE_FD_WAIT_MS");
  if (w) ms = atoi(w);
  usleep((useconds_t)ms * 1000);
}

/* A file of its own, opened, written and closed: its number is the lowest free one. */
static int touch(const char *name) {
  char p[4096];
  path_of(p, sizeof p, name);
  STEP_BEGIN();
  const int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (fd < 0 || write(fd, "x\n", 2) != 2) return -1;
  const int r = close(fd);
  STEP_END();
  printf("%s: fd %d, close %d\n", name, fd, r);
  return fd;
}

static int write_lines(int fd) {
  char line[64];
  for (int i = 0; i < 20000; ++i) {
    if (i % 500 == 0) {
      STEP_BEGIN();
      STEP_END();
    }
    if (i == 10000) wait_ms(300); /* a flush of the trace while the file is open */
    const int n = snprintf(line, sizeof line, "line %05d\n", i);
    if (write(fd, line, (size_t)n) != n) return -1;
  }
  return 0;
}

static int write_out(void) {
  char p[4096];
  path_of(p, sizeof p, "out.txt");
  const int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  printf("out.txt: fd %d\n", fd);
  if (fd < 0 || write_lines(fd) != 0) return 1;
  printf("out.txt: close %d\n", close(fd));
  return 0;
}

static void start(void) {
  touch("a.txt");
  wait_ms(500); /* past the flush interval: the trace file exists */
  say_trace_fd("before");
}

static int fork_mode(void) {
  char p[4096];
  path_of(p, sizeof p, "shared.txt");
  const int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (fd < 0 || write(fd, "parent\n", 7) != 7) return 1;
  const pid_t pid = fork();
  if (pid == 0) {
    /* the child writes to the descriptor it inherited, as a shell's subshell does */
    for (int i = 0; i < 3; ++i)
      if (write(fd, "child\n", 6) != 6) _exit(1);
    exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  printf("child: %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  printf("close %d\n", close(fd));
  return 0;
}

#ifdef TRACE_FD_LINKED
static int fill(long n) {
  if (dftrace_init(NULL) != DFTRACE_OK) return 2;
  dftrace_node_t *node = step_node();
  unsigned x = 12345;
  char junk[129];
  for (long i = 0; i < n; ++i) {
    for (int k = 0; k < 128; ++k) {
      x = x * 1103515245u + 12345u;
      junk[k] = (char)('!' + (x >> 16) % 90);
    }
    junk[128] = '\0';
    const dftrace_region_t r = dftrace_region_begin(node);
    dftrace_region_arg_string(r, "junk", junk);
    dftrace_region_end(r);
  }
  printf("finalize %d\n", dftrace_finalize());
  return 0;
}
#endif

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  snprintf(dir, sizeof dir, "%s", argv[2]);
  const char *mode = argv[1];
  setvbuf(stdout, NULL, _IOLBF, 0);
#ifdef TRACE_FD_LINKED
  if (strcmp(mode, "fill") == 0) return fill(atol(argv[2]));
#endif
  if (strcmp(mode, "fork") == 0) return fork_mode();
  start();
  if (strcmp(mode, "reuse") == 0) {
    /* the number a.txt had, closed again: not open (untraced, and traced) */
    errno = 0;
    const int r = close(3);
    printf("close(3) again: %d errno %d\n", r, errno);
  } else if (strcmp(mode, "closerange") == 0) {
    printf("close_range: %d\n", close_range(3, ~0U, 0));
  } else if (strcmp(mode, "closeloop") == 0) {
    int closed = 0;
    for (int fd = 3; fd < 1024; ++fd) closed += close(fd) == 0;
#ifndef TRACE_FD_LINKED
    printf("closed: %d\n", closed); /* linked alone, nothing keeps it from closing the trace */
#endif
  } else if (strcmp(mode, "closefrom") == 0) {
    closefrom(3);
    printf("closefrom: done\n");
  } else if (strcmp(mode, "dup2") == 0) {
    char p[4096];
    path_of(p, sizeof p, "out.txt");
    const int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    const int to = dup2(fd, 1000);
    printf("dup2: %d, cloexec %d\n", to, fcntl(to, F_GETFD) & FD_CLOEXEC);
    printf("close %d\n", close(fd));
    if (to != 1000 || write_lines(to) != 0) return 1;
    printf("out.txt: close %d\n", close(to));
    say_trace_fd("after");
    return 0;
  } else {
    return 2;
  }
  const int r = write_out();
  say_trace_fd("after");
  return r;
}
