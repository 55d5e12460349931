/* io_worker.c: a DLIO-like worker in C: a forked child loads N small files the way numpy.load
 * does (open, fstat, lseek, read of the whole file, read at the end, close) and leaves with
 * exit, or with _exit as a PyTorch DataLoader worker does (third argument "_exit": a build
 * older than the _exit interposer then loses the child's buffered events instead of writing
 * them); the parent waits for it. Under callgrind the counters are zeroed just before the
 * fork, so the child's profile holds only what the child did (its fork handlers included):
 * io_worker_instructions.sh compares it traced and not.
 * Usage: io_worker DIR N [_exit]   (DIR holds N files named f00000 ...; made if missing) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_ZERO_STATS
#endif

static char buf[1 << 16];

static int load(const char *dir, int i) {
  char path[4096];
  snprintf(path, sizeof path, "%s/f%05d", dir, i);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  int ok = fstat(fd, &st) == 0 && lseek(fd, 0, SEEK_CUR) == 0 &&
           read(fd, buf, sizeof buf) == st.st_size && read(fd, buf, 1) == 0;
  return close(fd) == 0 && ok ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  const int n = atoi(argv[2]);
  for (int i = 0; i < n; ++i) { /* the files (16 KiB each), and a first load in the parent */
    char path[4096];
    snprintf(path, sizeof path, "%s/f%05d", argv[1], i);
    const int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd >= 0 && (write(fd, buf, 16384) != 16384 || close(fd) != 0)) return 1;
  }
  if (n > 0 && load(argv[1], 0) != 0) return 1;
  CALLGRIND_ZERO_STATS;
  const pid_t pid = fork();
  if (pid == 0) {
    const int quick = argc > 3 && strcmp(argv[3], "_exit") == 0;
    for (int i = 0; i < n; ++i)
      if (load(argv[1], i) != 0) _exit(1);
    if (quick) _exit(0);
    exit(0);
  }
  int status;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status)
             ? 0
             : 1;
}
