// mpi_subcomm.cpp: collectives on two sub-communicators of one size ({0,1} and {2,3}), on two
// duplicates of each, and on MPI_COMM_WORLD and a duplicate of it, with rank 3 late in its
// sub-communicator only and rank 1 late in its second duplicate only (mpi_test.py's "subcomm"
// scenario: each instance is matched within its own communicator). Then a chain of 40
// duplicates, each of the one before, whose id grows past 64 characters and is hashed, and
// a split into {0,2} and {1,3}.
// Usage: mpi_subcomm <rounds> <sleep_ms>   (4 ranks, libdftrace_mpi linked in)
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  const useconds_t sleep_us = static_cast<useconds_t>((argc > 2 ? std::atoi(argv[2]) : 50) * 1000);

  MPI_Comm half, dup_a, dup_b, world_dup;
  MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &half);
  MPI_Comm_dup(half, &dup_a);
  MPI_Comm_dup(half, &dup_b);
  MPI_Comm_dup(MPI_COMM_WORLD, &world_dup);
  long mine = rank + 1, sum = 0, total = 0;
  for (int r = 0; r < rounds; ++r) {
    if (rank == size - 1) usleep(sleep_us);  // late in its half, {2,3}, only
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, half);
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    total += sum;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, dup_a);
    if (rank == 1) usleep(sleep_us);  // late in dup_b of {0,1} only
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, dup_b);
    MPI_Barrier(world_dup);
  }
  MPI_Comm chain = half;
  for (int i = 0; i < 40; ++i) {
    MPI_Comm next;
    MPI_Comm_dup(chain, &next);
    if (chain != half) MPI_Comm_free(&chain);
    chain = next;
  }
  MPI_Barrier(chain);
  MPI_Comm_free(&chain);
  // A new communicator, likely at the freed one's address: its own id ({0,2} and {1,3}).
  MPI_Comm odd_even;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &odd_even);
  MPI_Barrier(odd_even);
  MPI_Comm_free(&odd_even);
  MPI_Comm_free(&world_dup);
  MPI_Comm_free(&dup_b);
  MPI_Comm_free(&dup_a);
  MPI_Comm_free(&half);
  std::printf("rank %d done (%ld)\n", rank, total);
  MPI_Finalize();
  return 0;
}
