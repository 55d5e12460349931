/* mpi_ranks: every rank writes its own file and the sum of the ranks is printed by rank 0. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char name[64];
  snprintf(name, sizeof name, "rank_%d.txt", rank);
  FILE *f = fopen(name, "w");
  if (!f) return 4;
  for (int i = 0; i < 1000; ++i) fprintf(f, "rank %d line %d\n", rank, i);
  fclose(f);
  int sum = 0;
  MPI_Reduce(&rank, &sum, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("ranks %d sum %d\n", size, sum);
  MPI_Finalize();
  return 0;
}
