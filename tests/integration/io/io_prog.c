/* io_prog.c: a program that was never built with dftrace doing POSIX and STDIO I/O in the
 * directory given as its argument; traced by preloading libdftrace_io (test_io.py). It checks
 * what the application must see unchanged: results and errno. */
#define _GNU_SOURCE /* statx, the *at forms */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#ifdef IO_PROG_INIT
#include <dftrace/dftrace.h>
#endif

#define CHECK(c)                                                        \
  do {                                                                  \
    if (!(c)) {                                                         \
      fprintf(stderr, "io_prog: %s failed at line %d\n", #c, __LINE__); \
      return 1;                                                         \
    }                                                                   \
  } while (0)

int main(int argc, char **argv) {
  if (argc < 2) return 2;
#ifdef IO_PROG_INIT
  /* The application mode: the program initialises dftrace itself (no preloading). */
  CHECK(dftrace_init(NULL) == DFTRACE_OK);
#endif
  char path[4096], dir[4096];
  snprintf(path, sizeof path, "%s/data.bin", argv[1]);
  snprintf(dir, sizeof dir, "%s/sub", argv[1]);
  char buf[4096];
  memset(buf, 'x', sizeof buf);

  int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  CHECK(fd >= 0);
  for (int i = 0; i < 3; ++i) CHECK(write(fd, buf, 1000) == 1000);
  CHECK(pwrite(fd, buf, 10, 5000) == 10);
  CHECK(fsync(fd) == 0);
  CHECK(ftruncate(fd, 4000) == 0);
  CHECK(close(fd) == 0);

  fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  CHECK(read(fd, buf, 1500) == 1500);
  CHECK(lseek(fd, 100, SEEK_SET) == 100);
  CHECK(pread(fd, buf, 50, 3990) == 10);
  CHECK(close(fd) == 0);

  struct stat st;
  CHECK(stat(path, &st) == 0 && st.st_size == 4000);
  CHECK(access(path, R_OK) == 0);
  CHECK(mkdir(dir, 0755) == 0);
  CHECK(rmdir(dir) == 0);

  FILE *f = fopen(path, "r+");
  CHECK(f != NULL);
  CHECK(fread(buf, 1, 100, f) == 100);
  CHECK(fseek(f, 0, SEEK_END) == 0);
  CHECK(ftell(f) == 4000);
  CHECK(fwrite(buf, 10, 3, f) == 3);
  CHECK(fflush(f) == 0);
  CHECK(fclose(f) == 0);

  /* Vectored transfers, a duplicated descriptor, properties and names. */
  fd = open(path, O_RDWR);
  CHECK(fd >= 0);
  struct iovec v[2] = {{buf, 100}, {buf, 50}};
  CHECK(writev(fd, v, 2) == 150);
  CHECK(lseek(fd, 0, SEEK_SET) == 0);
  CHECK(readv(fd, v, 2) == 150);
  int fd2 = dup(fd);
  CHECK(fd2 >= 0);
  CHECK(close(fd) == 0);
  CHECK(write(fd2, buf, 5) == 5);
  CHECK(close(fd2) == 0);
  CHECK(chmod(path, 0600) == 0);
  char moved[4200];
  snprintf(moved, sizeof moved, "%s.moved", path);
  CHECK(rename(path, moved) == 0);
  CHECK(rename(moved, path) == 0);

  /* Vectored transfers at offsets, the *at forms, statx, links. */
  fd = open(path, O_RDWR);
  CHECK(fd >= 0);
  CHECK(pwritev(fd, v, 2, 10) == 150);
  CHECK(preadv(fd, v, 2, 10) == 150);
  CHECK(close(fd) == 0);
  struct stat sb;
  CHECK(fstatat(AT_FDCWD, path, &sb, 0) == 0 && sb.st_size >= 160);
  CHECK(faccessat(AT_FDCWD, path, R_OK, 0) == 0);
  struct statx sx;
  CHECK(statx(AT_FDCWD, path, 0, STATX_SIZE, &sx) == 0 && (off_t)sx.stx_size == sb.st_size);
  char ln[4200];
  snprintf(ln, sizeof ln, "%s.link", path);
  CHECK(symlink(path, ln) == 0);
  char target[4200];
  CHECK(readlink(ln, target, sizeof target) == (ssize_t)strlen(path));
  CHECK(unlink(ln) == 0);
  CHECK(linkat(AT_FDCWD, path, AT_FDCWD, ln, 0) == 0);
  CHECK(unlink(ln) == 0);

  /* A stream on a descriptor, and a stream reopened. */
  fd = open(path, O_RDWR);
  CHECK(fd >= 0);
  FILE *s = fdopen(fd, "r+");
  CHECK(s != NULL);
  CHECK(fwrite(buf, 1, 8, s) == 8);
  CHECK(fclose(s) == 0);
  s = fopen(path, "r");
  CHECK(s != NULL);
  s = freopen(path, "a", s);
  CHECK(s != NULL);
  CHECK(fwrite(buf, 2, 2, s) == 2);
  CHECK(fclose(s) == 0);

  /* fcntl (a duplicate by F_DUPFD is its file), a map of the file, a directory's entries. */
  fd = open(path, O_RDWR);
  CHECK(fd >= 0);
  int fd3 = fcntl(fd, F_DUPFD, 10);
  CHECK(fd3 >= 10);
  CHECK(fcntl(fd3, F_GETFL) >= 0);
  void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  CHECK(m != MAP_FAILED);
  ((char *)m)[0] = 'y';
  CHECK(msync(m, 4096, MS_SYNC) == 0);
  CHECK(munmap(m, 4096) == 0);
  CHECK(close(fd3) == 0);
  CHECK(close(fd) == 0);
  DIR *d = opendir(argv[1]);
  CHECK(d != NULL);
  int entries = 0;
  while (readdir(d)) ++entries;
  CHECK(entries == 3); /* ".", "..", data.bin */
  CHECK(closedir(d) == 0);

  /* Failures keep their errno through the interposer. */
  errno = 0;
  CHECK(open("/nonexistent-dftrace-dir/x", O_RDONLY) == -1 && errno == ENOENT);
  errno = 0;
  CHECK(read(-1, buf, 1) == -1 && errno == EBADF);
  CHECK(unlink(path) == 0);
  printf("io_prog: ok\n");
  return 0;
}
