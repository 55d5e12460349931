/* fptr_table_lib.c: a library that calls the C library through its own table of function
 * pointers, filled by the loader (absolute relocations, as SQLite's aSyscall[]), not through its
 * global offset table: a writable table, and a read-only pointer (RELRO, made read-only by the
 * loader after relocation). One more entry points one byte into pread (an addend): it must be
 * left as the loader wrote it. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
/* Exported, as SQLite's is reachable through sqlite3_vfs: the compiler can not turn the calls
 * through them into direct ones. */
struct table_entry {
  const char *name;
  void (*call)(void);
};
struct table_entry fptr_table[] = {{"pread", (void (*)(void))pread},
                                   {"pwrite", (void (*)(void))pwrite}};
int (*const fptr_relro_fsync)(int) = fsync;
const char *fptr_inside_pread = (const char *)pread + 1;
static const char *as_loaded; /* its value before dftrace bound anything */
__attribute__((constructor)) static void remember(void) { as_loaded = fptr_inside_pread; }

/* Writes and reads back n blocks of 100 bytes at `path` through the table; 0 when all went
 * well and the entry with an addend is still the loader's. */
int table_io(const char *path, int n) {
  if (fptr_inside_pread != as_loaded) return 3;
  const int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
  if (fd < 0) return 1;
  char buf[100] = {0};
  for (int i = 0; i < n; ++i)
    if (((pwrite_fn)fptr_table[1].call)(fd, buf, sizeof buf, (off_t)i * 100) != 100) return 2;
  /* (read from memory: the compiler would call the constant's value directly) */
  int (*relro_fsync)(int) = *(int (*const volatile *)(int)) & fptr_relro_fsync;
  if (relro_fsync(fd) != 0) return 2;
  for (int i = 0; i < n; ++i)
    if (((pread_fn)fptr_table[0].call)(fd, buf, sizeof buf, (off_t)i * 100) != 100) return 2;
  return close(fd) == 0 ? 0 : 1;
}
