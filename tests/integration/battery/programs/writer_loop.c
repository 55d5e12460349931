/* writer_loop: writes a file in a loop until a signal ends it (the battery sends SIGTERM).
 *
 * Usage: writer_loop OUT
 * Creates `started` after its first write, so that the battery knows when to send the signal;
 * gives up after 60 s (exit status 3) if no signal came. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return 4;
  static const char line[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n";
  time_t t0 = time(NULL);
  for (long i = 0;; ++i) {
    if (write(fd, line, sizeof line - 1) < 0) return 5;
    if (i == 0) close(open("started", O_WRONLY | O_CREAT, 0644));
    if ((i & 255) == 0) {
      struct timespec t = {0, 1000000L};
      nanosleep(&t, NULL);
      if (time(NULL) - t0 > 60) return 3;
    }
  }
}
