/* schedule_fork.c: a child forked while the parent's step schedule is in its skip phase, and
 * counting no step of its own, records what it does during the parent's active steps only.
 * Usage: schedule_fork STEPS. The parent ends STEPS steps; after each (and once before the
 * first) the child, told over a pipe, records one data.item with the parent's step under way
 * as `i` and prints "child step I phase P" (P: dftrace_step_phase()). */
#include <dftrace/dftrace.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void region(const char *path, int i) {
  dftrace_arg_t a = DFTRACE_ARG_I("i", i);
  dftrace_region_t r = dftrace_region_begin_ex(dftrace_node_find(path), -1, &a, 1);
  dftrace_region_end(r);
}

static int child(int from_parent, int to_parent, int steps) {
  for (int k = -1; k < steps; ++k) { /* k: the steps the parent has ended */
    int ended = -1;
    if (k >= 0 && read(from_parent, &ended, sizeof ended) != (ssize_t)sizeof ended) return 1;
    const int phase = dftrace_step_phase();
    region("data.item", k + 1);
    printf("child step %d phase %d\n", k + 1, phase);
    fflush(stdout);
    if (write(to_parent, &k, sizeof k) != (ssize_t)sizeof k) return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  const int steps = argc > 1 ? atoi(argv[1]) : 6;
  int down[2], up[2];
  if (pipe(down) || pipe(up)) return 1;
  region("compute.step", -1); /* starts tracing before the fork */
  const pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) exit(child(down[0], up[1], steps)); /* exit: the trace is finalized */
  int ack = 0;
  if (read(up[0], &ack, sizeof ack) != (ssize_t)sizeof ack) return 1;
  for (int i = 0; i < steps; ++i) {
    region("compute.step", i);
    dftrace_step();
    if (write(down[1], &i, sizeof i) != (ssize_t)sizeof i) return 1;
    if (read(up[0], &ack, sizeof ack) != (ssize_t)sizeof ack) return 1;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  printf("parent %d child %d status %d\n", (int)getpid(), (int)pid, status);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
