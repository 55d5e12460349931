/* stdio_app_prog.c DIR: the application mode (dftrace_init, no preloading) and a stream's
 * character calls around dftrace_finalize: 300 fputc before (written by the finalisation, the
 * stream still open), 1000 after (not traced, and dftrace is not started again). */
#include <dftrace/dftrace.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  if (dftrace_init(NULL) != DFTRACE_OK) return 1;
  char path[4096];
  snprintf(path, sizeof path, "%s/a.txt", argv[1]);
  FILE *f = fopen(path, "w");
  if (!f) return 1;
  for (int i = 0; i < 300; ++i)
    if (fputc('a', f) == EOF) return 1;
  if (dftrace_finalize() != DFTRACE_OK) return 1;
  for (int i = 0; i < 1000; ++i)
    if (fputc('b', f) == EOF) return 1;
  if (fclose(f) != 0) return 1;
  printf("stdio_app_prog: ok\n");
  return 0;
}
