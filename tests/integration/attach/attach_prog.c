/* attach_prog.c: a C program for dftrace attach's tests (test_attach.py), run with
 * DFTRACE_ENABLE=0 DFTRACE_ATTACH=1: it is not traced, and waits for an attach. Each step is a
 * region `work` with the argument `step`, then, with DIR, the step's I/O: open, write and close
 * of DIR/posix-STEP, fopen, fputs and fclose of DIR/stdio-STEP; then dftrace_step(). It says on
 * stdout "ready" once dftrace waits (after its first region), "on STEP" and "off STEP" when it
 * sees tracing switch on and off (dftrace_is_enabled before the step's region), and ends three
 * steps after "off" (or after MAXSTEPS steps). With `fork`, it forks after its first step; the
 * parent and the child then go on alike, and each line starts with the word and its pid
 * ("ready-PID", "on-PID STEP", ...); the parent waits for the child before it ends. With
 * ATTACH_PROG_STOP=PATH in its environment (a process that records, in ring mode), it says "at
 * STEP NS" (CLOCK_MONOTONIC) before each step's region instead, and ends after the step where PATH
 * exists. With `follow`, the child forked after the first step counts no step of its own: each
 * 5 ms a region `work` (argument `step`: its own count), saying "on-PID N" and "off-PID N" as the
 * parent does, "first-PID 0" after its first region, until three of them after "off" or until
 * the parent ends its loop (a pipe), when it says "end-PID N" (N: its last region's).
 * With `spin`, a second thread begins and ends regions `spin` (about one a microsecond) from
 * the start until the loop ends, whatever the steps: a window closes while it records.
 * With `spawn`, it starts after the first step, by posix_spawn, a copy of itself with
 * `spawned`, which does as the child of `follow` does (its end told by a pipe on its fd 3):
 * a program started by exec, which inherits nothing of the parent's memory. It tells the
 * parent when it sees tracing on (a byte on its fd 4), and the parent, once it sees tracing
 * on, waits for that (at most 120 s) before its next step: the window, in steps, stays open
 * until the child is in it, however late its thread wakes. With ATTACH_PROG_CHILD_OFF=1 in its
 * environment, the copy is started with DFTRACE_ENABLE=0 and DFTRACE_OUTPUT_MODE=file (not
 * traced, waiting for an attach, whatever the parent's mode).
 * With ATTACH_PROG_HOLD=PATH, the loop makes no next step while PATH exists (at most 120 s).
 * Usage: attach_prog MAXSTEPS [DIR|-] [fork|follow|spawn|spin|spawned] */
#include <dftrace/dftrace.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int forked;
extern char **environ;

static void say(const char *word, long step) {
  if (forked)
    printf("%s-%d %ld\n", word, (int)getpid(), step);
  else
    printf("%s %ld\n", word, step);
  fflush(stdout);
}

static void step_io(const char *dir, long i) {
  char path[4096];
  snprintf(path, sizeof path, "%s/posix-%ld", dir, i);
  const int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
  if (fd >= 0) {
    if (write(fd, "step\n", 5) != 5) perror("write");
    close(fd);
  }
  snprintf(path, sizeof path, "%s/stdio-%ld", dir, i);
  FILE *f = fopen(path, "w");
  if (f) {
    fputs("step\n", f);
    fclose(f);
  }
}

static atomic_int spin_stop;

/* The thread of `spin`: regions back to back, a little work between them. */
static void *spinner(void *node) {
  while (!atomic_load(&spin_stop)) {
    dftrace_region_t r = dftrace_region_begin((dftrace_node_t *)node);
    dftrace_region_end(r);
    for (volatile int k = 0; k < 200; ++k) {
    }
  }
  return NULL;
}

/* The child of `follow`: no dftrace_step, its parent's steps are the steps. */
static int follower(dftrace_node_t *work, int done_fd, int on_fd) {
  int seen_on = 0;
  long off_at = -1;
  for (long i = 0;; ++i) {
    const int on = dftrace_is_enabled();
    if (on && !seen_on) {
      seen_on = 1;
      say("on", i);
      if (on_fd >= 0 && write(on_fd, "o", 1) != 1) return 5;
    } else if (!on && seen_on && off_at < 0) {
      off_at = i;
      say("off", i);
    }
    dftrace_region_t r = dftrace_region_begin(work);
    dftrace_region_arg_int(r, "step", i);
    dftrace_region_end(r);
    if (i == 0) say("first", i); /* its first region made (in its ring, in ring mode) */
    if (off_at >= 0 && i >= off_at + 3) return 0;
    char c;
    if (read(done_fd, &c, 1) == 0) { /* the parent's loop is over */
      say("end", i);
      return 0;
    }
    struct timespec t = {0, 5 * 1000000L};
    nanosleep(&t, NULL);
  }
}

/* `spawn`: the copy of this program, its fd 3 the pipe's end that tells it the loop is over. */
static pid_t spawn_copy(const char *self, int done[2], int seen[2]) {
  posix_spawn_file_actions_t fa;
  pid_t pid = -1;
  char *argv[] = {(char *)self, "1000000", "-", "spawned", NULL};
  if (posix_spawn_file_actions_init(&fa) != 0) return -1;
  if (getenv("ATTACH_PROG_CHILD_OFF")) { /* (the parent's configuration was read at its init) */
    setenv("DFTRACE_ENABLE", "0", 1);
    setenv("DFTRACE_OUTPUT_MODE", "file", 1);
  }
  posix_spawn_file_actions_adddup2(&fa, done[0], 3);
  posix_spawn_file_actions_addclose(&fa, done[1]);
  posix_spawn_file_actions_adddup2(&fa, seen[1], 4);
  posix_spawn_file_actions_addclose(&fa, seen[0]);
  if (posix_spawn(&pid, self, &fa, NULL, argv, environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  const long max = atol(argv[1]);
  const char *dir = argc > 2 && strcmp(argv[2], "-") != 0 ? argv[2] : NULL;
  const int do_fork = argc > 3 && strcmp(argv[3], "fork") == 0;
  const int follow = argc > 3 && strcmp(argv[3], "follow") == 0;
  const int spin = argc > 3 && strcmp(argv[3], "spin") == 0;
  const int spawn = argc > 3 && strcmp(argv[3], "spawn") == 0;
  if (argc > 3 && strcmp(argv[3], "spawned") == 0) {
    dftrace_node_t *w = dftrace_node_child(dftrace_category("attach"), "work");
    dftrace_init(NULL); /* (waits for an attach: DFTRACE_ENABLE=0) */
    forked = 1;
    fcntl(3, F_SETFL, O_NONBLOCK);
    say("ready", 0);
    return follower(w, 3, 4);
  }
  pthread_t spin_thread;
  int done[2] = {-1, -1}, seen[2] = {-1, -1};
  const char *stop = getenv("ATTACH_PROG_STOP");
  const char *hold = getenv("ATTACH_PROG_HOLD");
  pid_t child = -1;
  dftrace_node_t *work = dftrace_node_child(dftrace_category("attach"), "work");
  int seen_on = 0;
  long off_at = -1;
  if (spin && pthread_create(&spin_thread, NULL, spinner,
                             dftrace_node_child(dftrace_category("attach"), "spin")) != 0)
    return 3;
  for (long i = 0; i < max; ++i) {
    const int on = dftrace_is_enabled();
    if (stop) {
      struct timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      printf("at %ld %lld\n", i, (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
      fflush(stdout);
    } else if (on && !seen_on) {
      seen_on = 1;
      say("on", i);
      /* (a hang guard, not a measure: a child that never sees it is the test's failure) */
      struct pollfd p = {seen[0], POLLIN, 0};
      if (spawn && poll(&p, 1, 120 * 1000) < 0) return 3;
    } else if (!on && seen_on && off_at < 0) {
      off_at = i;
      say("off", i);
    }
    dftrace_region_t r = dftrace_region_begin(work);
    dftrace_region_arg_int(r, "step", i);
    dftrace_region_end(r);
    if (dir) step_io(dir, i);
    if (i == 0) {
      if (do_fork) {
        fflush(stdout);
        forked = 1;
        child = fork();
        if (child < 0) return 3;
      } else if (follow) {
        if (pipe(done) != 0) return 3;
        fflush(stdout);
        forked = 1;
        child = fork();
        if (child < 0) return 3;
        if (child == 0) {
          close(done[1]);
          fcntl(done[0], F_SETFL, O_NONBLOCK);
          say("ready", i);
          return follower(work, done[0], -1);
        }
        close(done[0]);
      } else if (spawn) {
        if (pipe(done) != 0 || pipe(seen) != 0) return 3;
        fflush(stdout);
        forked = 1;
        child = spawn_copy(argv[0], done, seen);
        if (child < 0) return 3;
        close(done[0]);
        close(seen[1]);
      }
      say("ready", i);
    }
    struct timespec t = {0, 5 * 1000000L};
    nanosleep(&t, NULL);
    dftrace_step();
    if (off_at >= 0 && i >= off_at + 3) break;
    if (stop && access(stop, F_OK) == 0) break;
    /* (a hang guard, not a measure: the test removes the file when it saw what it waits for) */
    for (int n = 0; hold && access(hold, F_OK) == 0 && n < 120 * 1000; ++n) {
      struct timespec h = {0, 1000000L};
      nanosleep(&h, NULL);
    }
  }
  if (spin) {
    atomic_store(&spin_stop, 1);
    pthread_join(spin_thread, NULL);
  }
  if (done[1] >= 0) close(done[1]);
  if (child > 0) {
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      return 4;
  }
  say("done", 0);
  return 0;
}
