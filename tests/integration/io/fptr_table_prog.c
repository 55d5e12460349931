/* fptr_table_prog.c DIR: the application mode (dftrace_init, no preloading) with a library that
 * calls pread, pwrite and fsync through its own table of function pointers (fptr_table_lib.c). */
#include <dftrace/dftrace.h>
#include <stdio.h>

int table_io(const char *path, int n);

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  if (dftrace_init(NULL) != DFTRACE_OK) return 1;
  char path[4096];
  snprintf(path, sizeof path, "%s/table.bin", argv[1]);
  const int r = table_io(path, 7);
  if (r != 0) {
    fprintf(stderr, "fptr_table_prog: table_io returned %d\n", r);
    return 1;
  }
  printf("fptr_table_prog: ok\n");
  return dftrace_finalize() == DFTRACE_OK ? 0 : 1;
}
