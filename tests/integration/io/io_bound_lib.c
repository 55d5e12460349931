/* io_bound_lib.c: a library io_bound_prog dlopens after dftrace initialised: the address its own
 * global offset table holds for pread. */
#include <unistd.h>

void *io_bound_lib_pread(void) {
  ssize_t (*volatile f)(int, void *, size_t, off_t) = pread;
  return (void *)f;
}
