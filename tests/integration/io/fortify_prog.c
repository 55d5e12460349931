/* fortify_prog.c: built with -O2 -D_FORTIFY_SOURCE=2, its open (flags not known at compile time)
 * and read (into a buffer of known size) become glibc's checked __open_2 and __read_chk; the
 * interposer records them as open and read. Usage: fortify_prog FILE FLAGS */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  const int flags = atoi(argv[2]);
  int fd = open(argv[1], flags);
  if (fd < 0) return 3;
  char buf[64];
  size_t want = (size_t)(argc + 30);
  ssize_t got = read(fd, buf, want);
  close(fd);
  printf("fortify_prog: read %zd\n", got);
  return got >= 0 ? 0 : 4;
}
