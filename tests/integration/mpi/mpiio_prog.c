/* mpiio_prog.c: every rank writes its block of one shared file with MPI-IO (collective and
 * independent calls), syncs, and reads it back; built with plain MPI (no dftrace), traced by
 * `dftrace run --mpi` (libdftrace_mpi's MPIIO events, libdftrace_io's POSIX ones underneath).
 * Usage: mpiio_prog DIR. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

enum { k_block = 1 << 16 };

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2) MPI_Abort(MPI_COMM_WORLD, 2);
  char path[4096];
  snprintf(path, sizeof path, "%s/shared.bin", argv[1]);
  static char out[k_block], in[k_block];
  memset(out, 'a' + rank, sizeof out);
  MPI_File fh;
  int ok = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                         &fh) == MPI_SUCCESS;
  const MPI_Offset at = (MPI_Offset)rank * 2 * k_block;
  ok =
      ok && MPI_File_write_at_all(fh, at, out, k_block, MPI_CHAR, MPI_STATUS_IGNORE) == MPI_SUCCESS;
  ok = ok && MPI_File_seek(fh, at + k_block, MPI_SEEK_SET) == MPI_SUCCESS;
  ok = ok && MPI_File_write(fh, out, k_block / 4, MPI_INT, MPI_STATUS_IGNORE) == MPI_SUCCESS;
  ok = ok && MPI_File_sync(fh) == MPI_SUCCESS;
  MPI_Barrier(MPI_COMM_WORLD);
  ok = ok && MPI_File_read_at_all(fh, at, in, k_block, MPI_CHAR, MPI_STATUS_IGNORE) == MPI_SUCCESS;
  ok = ok && memcmp(in, out, sizeof in) == 0;
  ok = ok && MPI_File_close(&fh) == MPI_SUCCESS;
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == 0) printf("mpiio_prog: %s\n", all ? "ok" : "FAILED");
  MPI_Finalize();
  return all ? 0 : 1;
}
