/* ungetc_prog.c A B C D: reads file A once to its end through a mixture of reading calls and
 * ungetc (bzip2's probe for the end: fgetc, ungetc, fread; getc, ungetc, fgets; fread, ungetc,
 * getc; getline, ungetc, fgetc; a byte pushed back before the first read, which is no byte of
 * the file), then B and C: 10 bytes by fread, one pushed back and discarded (rewind on B,
 * fseek on C), then the whole file by fgetc; D by bzip2's loop alone (fgetc, ungetc, fread of
 * 100 bytes), pausing 1.1 s after its first probe, so that the 256th fgetc finds its slot's
 * interval over and the fread after its ungetc follows that emission. Prints on stderr the bytes of
 * each file its calls returned, less those ungetc pushed back (what it took out of the file): "A
 * n", "B n", "C n", "D n", then "ungetc_prog: ok". Built at -O0 (every call as written). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned long long taken;

static void push(int c, FILE *f) {
  if (ungetc(c, f) == EOF) {
    fprintf(stderr, "ungetc failed\n");
    exit(1);
  }
  --taken;
}

static int one(int c) {
  if (c != EOF) ++taken;
  return c;
}

static void read_mixed(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    exit(1);
  }
  char buf[800];
  char *line = NULL;
  size_t room = 0;
  /* a byte pushed back before any read: not the file's (fgetc gives it back) */
  if (ungetc('#', f) == EOF || fgetc(f) != '#') {
    fprintf(stderr, "pushback before the first read\n");
    exit(1);
  }
  for (unsigned i = 0;; ++i) {
    int c = one(fgetc(f)); /* bzip2's myfeof */
    if (c == EOF) break;
    push(c, f);
    switch (i % 4) {
      case 0: taken += fread(buf, 1, 700, f); break;
      case 1:
        c = one(getc(f));
        if (c != EOF) push(c, f);
        if (fgets(buf, 60, f)) taken += strlen(buf);
        break;
      case 2: {
        const size_t n = fread(buf, 1, 300, f);
        taken += n;
        if (n) {
          push((unsigned char)buf[n - 1], f);
          one(getc(f));
        }
        break;
      }
      default: {
        const ssize_t n = getline(&line, &room, f);
        if (n > 0) {
          taken += (unsigned long long)n;
          push((unsigned char)line[n - 1], f);
          one(fgetc(f));
        }
        break;
      }
    }
  }
  free(line);
  fclose(f);
}

/* 10 bytes, one pushed back and discarded by rewind (or fseek), then the whole file. */
static void read_discarding(const char *path, int use_fseek) {
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    exit(1);
  }
  char buf[10];
  const size_t n = fread(buf, 1, sizeof buf, f);
  taken += n;
  if (n) ungetc((unsigned char)buf[n - 1], f); /* discarded below: the 10 bytes stay taken */
  if (use_fseek)
    fseek(f, 0, SEEK_SET);
  else
    rewind(f);
  while (one(fgetc(f)) != EOF) {
  }
  fclose(f);
}

/* bzip2's compressStream: myfeof (fgetc, ungetc), then fread. */
static void read_probing(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    exit(1);
  }
  char buf[100];
  for (unsigned i = 0;; ++i) {
    const int c = one(fgetc(f));
    if (c == EOF) break;
    push(c, f);
    taken += fread(buf, 1, sizeof buf, f);
    if (i == 0) usleep(1100000);
  }
  fclose(f);
}

int main(int argc, char **argv) {
  if (argc < 5) return 2;
  taken = 0;
  read_mixed(argv[1]);
  fprintf(stderr, "A %llu\n", taken);
  taken = 0;
  read_discarding(argv[2], 0);
  fprintf(stderr, "B %llu\n", taken);
  taken = 0;
  read_discarding(argv[3], 1);
  fprintf(stderr, "C %llu\n", taken);
  taken = 0;
  read_probing(argv[4]);
  fprintf(stderr, "D %llu\n", taken);
  fprintf(stderr, "ungetc_prog: ok\n");
  return 0;
}
