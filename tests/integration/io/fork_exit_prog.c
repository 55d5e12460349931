/* fork_exit_prog.c: a program that initialises dftrace itself (the application mode: its I/O is
 * traced by binding, without preloading) and forks a child that writes a file and leaves with
 * _exit, as a server's worker does: the child's trace must still be finalized (test_io.py).
 * Usage: fork_exit_prog DIR */
#include <dftrace/dftrace.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static int write_file(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  const int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  return fd >= 0 && write(fd, "0123456789", 10) == 10 && close(fd) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc < 2 || dftrace_init(NULL) != DFTRACE_OK) return 2;
  if (write_file(argv[1], "parent") != 0) return 1;
  const pid_t pid = fork();
  if (pid == 0) _exit(write_file(argv[1], "child"));
  int status;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  puts("fork_exit_prog: ok");
  return 0;
}
