/* h5_prog.c: HDF5 I/O of a program never built with dftrace (Debian's serial libhdf5): a file
 * with one dataset of 1000 doubles written, closed, opened again and read back; then 10 of them
 * read through a file selection (memory H5S_ALL: HDF5 uses the file's selection for memory),
 * and a read that fails (a bad memory type), whose HDF5 error stack must still be there for the
 * program after the tracer's event. Traced by `dftrace run` (libdftrace_io's H5 events, with
 * HDF5's POSIX calls inside). */
#include <hdf5.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* h5_prog DIR relative: a file created by a relative name in DIR, written after a chdir away
 * (HDF5 gives back the name as it was opened: the events must still name DIR/rel.h5). */
static int relative(const char *dir) {
  double v[10] = {0};
  hsize_t dims[1] = {10};
  if (chdir(dir) != 0) return 1;
  hid_t f = H5Fcreate("rel.h5", H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t space = H5Screate_simple(1, dims, NULL);
  hid_t d = H5Dcreate(f, "v", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  int ok = f >= 0 && d >= 0 && chdir("/") == 0;
  ok = ok && H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0;
  ok = ok && H5Dclose(d) >= 0 && H5Sclose(space) >= 0 && H5Fclose(f) >= 0;
  printf("h5_prog: %s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  if (argc > 2 && strcmp(argv[2], "relative") == 0) return relative(argv[1]);
  char path[4096];
  snprintf(path, sizeof path, "%s/values.h5", argv[1]);
  double out[1000], in[1000];
  for (int i = 0; i < 1000; ++i) out[i] = i * 0.5;
  hsize_t dims[1] = {1000};
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t space = H5Screate_simple(1, dims, NULL);
  hid_t d = H5Dcreate(f, "values", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  int ok = f >= 0 && d >= 0;
  ok = ok && H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0;
  ok = ok && H5Dclose(d) >= 0 && H5Sclose(space) >= 0 && H5Fclose(f) >= 0;
  f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  d = H5Dopen(f, "values", H5P_DEFAULT);
  ok = ok && f >= 0 && d >= 0;
  ok = ok && H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, in) >= 0;
  hid_t fs = H5Dget_space(d);
  hsize_t start[1] = {100}, count[1] = {10};
  ok = ok && fs >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0;
  ok = ok && H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, fs, H5P_DEFAULT, in) >= 0;
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* the failure below is expected: not printed */
  ok = ok && H5Dread(d, (hid_t)-1, H5S_ALL, H5S_ALL, H5P_DEFAULT, in) < 0;
  if (ok && H5Eget_num(H5E_DEFAULT) <= 0) {
    puts("h5_prog: the failed read's error stack is gone");
    ok = 0;
  }
  ok = ok && H5Sclose(fs) >= 0 && H5Dclose(d) >= 0 && H5Fclose(f) >= 0;
  for (int i = 0; ok && i < 1000; ++i) ok = in[i] == out[i];
  printf("h5_prog: %s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
