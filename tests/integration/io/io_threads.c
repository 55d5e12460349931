/* io_threads.c: 8 threads doing I/O at once, each on its own file in the directory given
 * (argv[1]); then the program reads its own trace (the newest *.pfw.gz in argv[2] with its
 * pid in the name) while it runs, as a monitoring tool inside an application would.
 * test_io.py checks that every call is traced once, on its thread, with its file. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { k_threads = 8, k_writes = 50, k_block = 4096 };
static const char *g_dir;

static void *work(void *arg) {
  const long i = (long)arg;
  char path[4096], buf[k_block];
  memset(buf, 'a' + (int)i, sizeof buf);
  snprintf(path, sizeof path, "%s/thread-%ld.bin", g_dir, i);
  int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
  if (fd < 0) return (void *)1;
  for (int w = 0; w < k_writes; ++w)
    if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) return (void *)1;
  for (int r = 0; r < k_writes; ++r)
    if (pread(fd, buf, sizeof buf, (off_t)r * k_block) != (ssize_t)sizeof buf || buf[0] != 'a' + i)
      return (void *)1;
  return close(fd) == 0 ? NULL : (void *)1;
}

/* Reads every byte of this process's trace file as it stands (the writer appends whole gzip
 * members; a reader sees a prefix of them). */
static long read_own_trace(const char *dir) {
  char needle[64];
  snprintf(needle, sizeof needle, "-%d-", (int)getpid());
  for (int attempt = 0; attempt < 100; ++attempt) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *e;
    char path[4096] = "";
    while ((e = readdir(d)))
      if (strstr(e->d_name, needle) && strstr(e->d_name, ".pfw"))
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    closedir(d);
    if (*path) {
      FILE *f = fopen(path, "rb");
      if (!f) return -1;
      char buf[65536];
      long total = 0;
      size_t n;
      while ((n = fread(buf, 1, sizeof buf, f)) > 0) total += (long)n;
      fclose(f);
      return total;
    }
    usleep(50 * 1000); /* the first member is written within the flush interval */
  }
  return -1;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  g_dir = argv[1];
  pthread_t t[k_threads];
  for (long i = 0; i < k_threads; ++i) pthread_create(&t[i], NULL, work, (void *)i);
  int failed = 0;
  for (int i = 0; i < k_threads; ++i) {
    void *r;
    pthread_join(t[i], &r);
    failed |= r != NULL;
  }
  if (failed) {
    fprintf(stderr, "io_threads: a thread's I/O failed\n");
    return 1;
  }
  const long own = read_own_trace(argv[2]);
  printf("io_threads: ok, read %ld bytes of its own trace\n", own);
  return own > 0 ? 0 : 1;
}
