/* emfile_kinds_prog.c: a program that makes descriptors with one kind of call until EMFILE, run
 * untraced and traced under a small RLIMIT_NOFILE (test_trace_fd.py): the count must be the same.
 * Each kind runs in a process of its own, since the first EMFILE makes dftrace give its
 * descriptors up for the rest of the run.
 * Usage: emfile_kinds_prog DIR KIND
 *   Writes DIR/in.txt, waits 300 ms (the trace file is written and held meanwhile), then makes
 * descriptors with KIND until it fails; prints "KIND: COUNT ERRNO-NAME". KIND: open, openat,
 * creat, fopen, opendir, dup, fcntl, socket, socketpair, pipe, pipe2, accept, accept4, eventfd,
 * signalfd, timerfd, epoll, inotify, memfd, mkstemp, tmpfile, popen.
 * Built with KINDS_LINKED, linked with libdftrace alone (no interposer): it initialises dftrace
 * and records one region before the wait (DFTRACE_ENABLE starts the trace). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef KINDS_LINKED
#include <dftrace/dftrace.h>
#endif

static char g_dir[4096], g_in[4200];
static int g_base = -1; /* what dup and fcntl duplicate */

/* One call of the kind: the number of descriptors it made (0: failed, errno says why). */
static int make_one(const char *kind) {
  int pair[2];
  if (!strcmp(kind, "open")) return open(g_in, O_RDONLY) >= 0;
  if (!strcmp(kind, "openat")) return openat(AT_FDCWD, g_in, O_RDONLY) >= 0;
  if (!strcmp(kind, "creat")) return creat(g_in, 0644) >= 0;
  if (!strcmp(kind, "fopen")) return fopen(g_in, "r") != NULL;
  if (!strcmp(kind, "opendir")) return opendir(g_dir) != NULL;
  if (!strcmp(kind, "dup")) return dup(g_base) >= 0;
  if (!strcmp(kind, "fcntl")) return fcntl(g_base, F_DUPFD_CLOEXEC, 0) >= 0;
  if (!strcmp(kind, "socket")) return socket(AF_UNIX, SOCK_STREAM, 0) >= 0;
  if (!strcmp(kind, "socketpair")) return socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0 ? 2 : 0;
  if (!strcmp(kind, "pipe")) return pipe(pair) == 0 ? 2 : 0;
  if (!strcmp(kind, "pipe2")) return pipe2(pair, O_CLOEXEC) == 0 ? 2 : 0;
  if (!strcmp(kind, "eventfd")) return eventfd(0, 0) >= 0;
  if (!strcmp(kind, "signalfd")) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    return signalfd(-1, &s, 0) >= 0;
  }
  if (!strcmp(kind, "timerfd")) return timerfd_create(CLOCK_MONOTONIC, 0) >= 0;
  if (!strcmp(kind, "epoll")) return epoll_create1(0) >= 0;
  if (!strcmp(kind, "inotify")) return inotify_init1(0) >= 0;
  if (!strcmp(kind, "memfd")) return memfd_create("emfile", 0) >= 0;
  if (!strcmp(kind, "mkstemp")) {
    char t[4200];
    snprintf(t, sizeof t, "%s/tmpXXXXXX", g_dir);
    const int fd = mkstemp(t);
    if (fd >= 0) unlink(t);
    return fd >= 0;
  }
  if (!strcmp(kind, "tmpfile")) return tmpfile() != NULL;
  if (!strcmp(kind, "popen")) return popen("true", "r") != NULL ? 1 : 0;
  errno = EINVAL;
  return 0;
}

static int listener = -1;

/* accept: a child connects 64 times and waits; this process accepts until EMFILE. */
static int accept_one(int four) {
  return (four ? accept4(listener, NULL, NULL, SOCK_CLOEXEC) : accept(listener, NULL, NULL)) >= 0;
}

static pid_t start_clients(void) {
  struct sockaddr_un a = {.sun_family = AF_UNIX}; /* abstract: no path length to mind */
  snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "emfile-kinds-%d", (int)getpid());
  listener = socket(AF_UNIX, SOCK_STREAM, 0);
  if (listener < 0 || bind(listener, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(listener, 128) != 0)
    exit(3);
  const pid_t child = fork();
  if (child == 0) {
    close(listener);
    for (int i = 0; i < 64; ++i) {
      const int c = socket(AF_UNIX, SOCK_STREAM, 0);
      if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) != 0) _exit(4);
    }
    pause(); /* (killed by the parent) */
    _exit(0);
  }
  return child;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  const char *kind = argv[2];
  snprintf(g_dir, sizeof g_dir, "%s", argv[1]);
  snprintf(g_in, sizeof g_in, "%s/in.txt", g_dir);
  FILE *f = fopen(g_in, "w");
  if (!f || fputs("input\n", f) < 0 || fclose(f) != 0) return 3;
  g_base = open(g_in, O_RDONLY);
  if (g_base < 0) return 3;
#ifdef KINDS_LINKED
  dftrace_init(NULL); /* (untraced: DFTRACE_ENABLE unset, nothing is recorded) */
  dftrace_region_end(dftrace_region_begin(dftrace_node_child(dftrace_category("test"), "start")));
#endif
  const int accepting = !strcmp(kind, "accept") || !strcmp(kind, "accept4");
  const pid_t clients = accepting ? start_clients() : 0;
  const struct timespec t = {0, 300 * 1000000L}; /* past the flush interval: the file is held */
  nanosleep(&t, NULL);
  int n = 0, made;
  while ((made = accepting ? accept_one(kind[6] == '4') : make_one(kind)) > 0) n += made;
  const int err = errno;
  printf("%s: %d %s\n", kind, n, err == EMFILE ? "EMFILE" : strerror(err));
  if (clients > 0) {
    kill(clients, SIGKILL);
    waitpid(clients, NULL, 0);
  }
  return 0;
}
