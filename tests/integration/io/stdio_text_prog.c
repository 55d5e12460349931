/* stdio_text_prog.c DIR N: the character and line calls of stdio on a file in DIR, each many
 * times (N characters one at a time), then read back with each reading call; stdout (printf,
 * puts, putchar) and stdin (getchar) are whatever the caller made them. Prints on stderr, per
 * call, the calls made and the bytes they moved, as the calls' own results say:
 * "name calls bytes" lines, then "stdio_text_prog: ok". With a third argument, `threads` or
 * `fork` (below). Built twice: plain (-O0, every call as
 * written) and with _FORTIFY_SOURCE (the __*_chk forms). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum {
  FGETC,
  GETC,
  GETCHAR,
  FGETS,
  GETLINE,
  GETDELIM,
  FREAD,
  FPUTC,
  PUTC,
  PUTCHAR,
  FPUTS,
  PUTS,
  FPRINTF,
  VFPRINTF,
  PRINTF,
  FWRITE,
  KINDS
};
static const char *names[KINDS] = {
    "fgetc", "getc",    "getchar", "fgets", "getline", "getdelim", "fread",  "fputc",
    "putc",  "putchar", "fputs",   "puts",  "fprintf", "vfprintf", "printf", "fwrite"};
static unsigned long long calls[KINDS], bytes[KINDS];

static void count(int kind, long long moved) {
  ++calls[kind];
  if (moved > 0) bytes[kind] += (unsigned long long)moved;
}

static int my_vfprintf(FILE *f, const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  const int r = vfprintf(f, format, ap);
  va_end(ap);
  return r;
}

static void fail(const char *what) {
  perror(what);
  exit(1);
}

/* threads: 4 threads each put N/4 characters to a file of their own (DIR/tK.txt) and end
 * without flushing it: their counts are written as each thread ends. */
static const char *g_dir;
static long g_n;
static FILE *g_files[4];
static void *put_chars(void *arg) {
  const long k = (long)arg;
  for (long i = 0; i < g_n / 4; ++i)
    if (fputc('t', g_files[k]) == EOF) return arg;
  return NULL;
}
static int threads(void) {
  pthread_t t[4];
  for (long k = 0; k < 4; ++k) {
    char path[4096];
    snprintf(path, sizeof path, "%s/t%ld.txt", g_dir, k);
    if (!(g_files[k] = fopen(path, "w"))) fail("fopen");
  }
  for (long k = 0; k < 4; ++k)
    if (pthread_create(&t[k], NULL, put_chars, (void *)k) != 0) fail("pthread_create");
  for (long k = 0; k < 4; ++k) {
    void *r;
    if (pthread_join(t[k], &r) != 0 || r) fail("thread");
  }
  for (long k = 0; k < 4; ++k)
    if (fclose(g_files[k]) != 0) fail("fclose");
  fprintf(stderr, "stdio_text_prog: ok\n");
  return 0;
}

/* fork: 1000 characters put to DIR/fork.txt, not flushed, then a child puts 500 more and
 * leaves with exit: its trace has its 500, the parent's its 1000 (the child's buffer holds the
 * parent's 1000 too, which its exit writes: the file has 2500 bytes). */
static int forked(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/fork.txt", g_dir);
  FILE *f = fopen(path, "w");
  if (!f) fail("fopen");
  for (int i = 0; i < 1000; ++i) fputc('p', f);
  const pid_t pid = fork();
  if (pid == 0) {
    for (int i = 0; i < 500; ++i) fputc('c', f);
    exit(0);
  }
  int status;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0) fail("child");
  if (fclose(f) != 0) fail("fclose");
  fprintf(stderr, "stdio_text_prog: ok\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4) {
    g_dir = argv[1];
    g_n = atol(argv[2]);
    return strcmp(argv[3], "threads") == 0 ? threads() : forked();
  }
  if (argc != 3) return 2;
  const long n = atol(argv[2]);
  char path[4096];
  snprintf(path, sizeof path, "%s/text.txt", argv[1]);
  FILE *f = fopen(path, "w");
  if (!f) fail("fopen w");
  for (long i = 0; i < n; ++i) count(FPUTC, fputc('a' + i % 26, f) == EOF ? 0 : 1);
  for (long i = 0; i < n / 10; ++i) count(FPUTC, fputc_unlocked('b', f) == EOF ? 0 : 1);
  for (long i = 0; i < n / 10; ++i) count(PUTC, putc('\n', f) == EOF ? 0 : 1);
  for (long i = 0; i < n / 10; ++i) count(PUTC, putc_unlocked('c', f) == EOF ? 0 : 1);
  for (long i = 0; i < 1000; ++i) {
    const char *line = i % 2 ? "a line of text\n" : "another, longer line of text\n";
    count(FPUTS, fputs(line, f) == EOF ? 0 : (long long)strlen(line));
    count(FPUTS, fputs_unlocked(line, f) == EOF ? 0 : (long long)strlen(line));
    count(FPRINTF, fprintf(f, "line %ld: %s\n", i, "formatted"));
    count(VFPRINTF, my_vfprintf(f, "%ld %ld\n", i, i * i));
  }
  count(FWRITE, (long long)fwrite_unlocked("tail\n", 1, 5, f));
  if (fclose(f) != 0) fail("fclose w");

  f = fopen(path, "r");
  if (!f) fail("fopen r");
  for (long i = 0; i < n; ++i) count(FGETC, fgetc(f) == EOF ? 0 : 1);
  for (long i = 0; i < n / 10; ++i) count(FGETC, fgetc_unlocked(f) == EOF ? 0 : 1);
  for (long i = 0; i < n / 10; ++i) count(GETC, getc(f) == EOF ? 0 : 1);
  for (long i = 0; i < n / 10; ++i) count(GETC, getc_unlocked(f) == EOF ? 0 : 1);
  char buf[256];
  for (int i = 0; i < 500; ++i) {
    char *r = fgets(buf, sizeof buf, f);
    count(FGETS, r ? (long long)strlen(r) : 0);
    r = fgets_unlocked(buf, sizeof buf, f);
    count(FGETS, r ? (long long)strlen(r) : 0);
  }
  char *line = NULL;
  size_t room = 0;
  for (int i = 0; i < 500; ++i) {
    count(GETLINE, getline(&line, &room, f));
    count(GETDELIM, getdelim(&line, &room, ':', f));
  }
  free(line);
  char block[4096];
  size_t got;
  do {  // the rest, and one call at the end of the file
    got = fread_unlocked(block, 1, sizeof block, f);
    count(FREAD, (long long)got);
  } while (got > 0);
  if (fclose(f) != 0) fail("fclose r");

  /* stdout and stdin, as the caller redirected them */
  for (int i = 0; i < 1000; ++i) {
    count(PRINTF, printf("%d,%s\n", i, "printed"));
    count(PUTS, puts("put") == EOF ? 0 : 4);
    count(PUTCHAR, putchar('x') == EOF ? 0 : 1);
  }
  int c;
  do {
    c = getchar();
    count(GETCHAR, c == EOF ? 0 : 1);
  } while (c != EOF);
  if (fflush(stdout) != 0) fail("fflush");
  for (int k = 0; k < KINDS; ++k) fprintf(stderr, "%s %llu %llu\n", names[k], calls[k], bytes[k]);
  fprintf(stderr, "stdio_text_prog: ok\n");
  return 0;
}
