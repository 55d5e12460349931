// mpi_idup_info.cpp: communicators made by MPI_Comm_idup_with_info (MPI 4.0), for mpi_test.py's
// "idup_info" scenario (4 ranks under MPICH, libdftrace_mpi built against it): the halves {0,1}
// and {2,3} of MPI_Comm_split, duplicated before any collective on them by
// MPI_Comm_idup_with_info (with an info key), and that duplicate duplicated again the same way
// (with MPI_INFO_NULL). Allreduces on each; the odd rank of each half is late on the first
// duplicate, so its partner waits there and nowhere else.
// Usage: mpi_idup_info <rounds> <late_us>
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <initializer_list>

namespace {

void allreduce_rounds(MPI_Comm c, int rounds, useconds_t late) {
  long mine = 1, sum = 0;
  for (int r = 0; r < rounds; ++r) {
    if (late) usleep(late);
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, c);
  }
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  const useconds_t late_us = argc > 2 ? static_cast<useconds_t>(std::atoi(argv[2])) : 20000;

  MPI_Comm half, dup, dup_of_dup;
  MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &half);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
  MPI_Request req;
  MPI_Comm_idup_with_info(half, info, &dup, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  MPI_Info_free(&info);
  MPI_Comm_idup_with_info(dup, MPI_INFO_NULL, &dup_of_dup, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);

  allreduce_rounds(half, rounds, 0);
  allreduce_rounds(dup, rounds, rank % 2 ? late_us : 0);
  allreduce_rounds(dup_of_dup, rounds, 0);

  for (MPI_Comm *c : {&dup_of_dup, &dup, &half}) MPI_Comm_free(c);
  std::printf("rank %d done\n", rank);
  MPI_Finalize();
  return 0;
}
