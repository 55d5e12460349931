// mpi_comms.cpp: collectives on communicators made in the other ways MPI offers, for
// mpi_test.py's "comms" scenario (4 ranks, libdftrace_mpi linked in):
//   - the halves {0,1} and {2,3} of MPI_Comm_split, duplicated before any collective on them by
//     MPI_Comm_idup, then by MPI_Comm_dup (freed at once), and the idup's duplicate; the odd and
//     even ranks, duplicated before any collective by MPI_Comm_dup_with_info;
//   - an intercommunicator between the halves (MPI_Intercomm_create), a duplicate of it, and
//     their merge (MPI_Intercomm_merge, the upper half first); one between {0} and {1,2,3};
//   - MPI_Comm_create_group of {3,0} (called by ranks 0 and 3 only) and MPI_Comm_create of
//     {2,1} (called by all);
//   - a communicator freed on a second thread, which then makes a new one (likely at the freed
//     one's handle) that the main thread calls a collective on: the id must be the new one's,
//     not the one the main thread kept from its last call; then two threads at once, each on its
//     own new communicator.
// Usage: mpi_comms <rounds>
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <thread>

namespace {

void allreduce_rounds(MPI_Comm c, int rounds) {
  long mine = 1, sum = 0;
  for (int r = 0; r < rounds; ++r) MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, c);
}

// The main thread's barrier on `first` leaves it in that thread's cache; a second thread frees
// it and splits the world again (odd and even ranks); the main thread's barrier on the new one.
// Returns whether the new communicator got the freed one's handle.
bool freed_on_another_thread(int rank) {
  MPI_Comm first, second = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &first);
  MPI_Barrier(first);
  const MPI_Comm old = first;
  std::thread other([&] {
    MPI_Comm_free(&first);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &second);
  });
  other.join();
  MPI_Barrier(second);
  const bool reused = second == old;
  MPI_Comm_free(&second);
  return reused;
}

// Two threads at once (MPI_THREAD_MULTIPLE), each calling collectives on its own new
// communicator (the halves, the odd and even ranks): each thread's cached id stays its own.
void two_threads_at_once(int rank, int rounds) {
  MPI_Comm mine, theirs;
  MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &mine);
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &theirs);
  std::thread other([&] { allreduce_rounds(theirs, rounds); });
  allreduce_rounds(mine, rounds);
  other.join();
  MPI_Comm_free(&theirs);
  MPI_Comm_free(&mine);
}

}  // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;

  MPI_Comm half, idup, dup_of_idup, odd_even, with_info;
  MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &half);
  MPI_Request req;
  MPI_Comm_idup(half, &idup, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  MPI_Comm_dup(half, &dup_of_idup);  // (the second duplicate of half, for now)
  MPI_Comm_free(&dup_of_idup);
  MPI_Comm_dup(idup, &dup_of_idup);
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &odd_even);
  MPI_Comm_dup_with_info(odd_even, MPI_INFO_NULL, &with_info);
  for (MPI_Comm c : {half, idup, dup_of_idup, odd_even, with_info}) allreduce_rounds(c, rounds);

  MPI_Comm inter, inter_dup, merged;
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank < 2 ? 2 : 0, 99, &inter);
  MPI_Comm_dup(inter, &inter_dup);
  MPI_Intercomm_merge(inter, rank < 2 ? 1 : 0, &merged);  // {2,3} first
  for (int r = 0; r < rounds; ++r) {
    MPI_Barrier(inter);
    MPI_Barrier(inter_dup);
    MPI_Barrier(merged);
  }
  allreduce_rounds(inter, rounds);
  // An intercommunicator of unequal sides, {0} and {1,2,3}, rank 0 late: its three partners
  // wait for it, which a match of {1,2,3} alone would hide.
  MPI_Comm side, lopsided;
  MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : 1, rank, &side);
  MPI_Intercomm_create(side, 0, MPI_COMM_WORLD, rank == 0 ? 1 : 0, 98, &lopsided);
  for (int r = 0; r < rounds; ++r) {
    if (rank == 0) usleep(20000);
    MPI_Barrier(lopsided);
  }
  MPI_Comm_free(&lopsided);
  MPI_Comm_free(&side);

  MPI_Group world_group, pair;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  if (rank == 0 || rank == 3) {
    const int members[2] = {3, 0};
    MPI_Comm by_group;
    MPI_Group_incl(world_group, 2, members, &pair);
    MPI_Comm_create_group(MPI_COMM_WORLD, pair, 5, &by_group);
    allreduce_rounds(by_group, rounds);
    MPI_Comm_free(&by_group);
    MPI_Group_free(&pair);
  }
  const int middle[2] = {2, 1};
  MPI_Comm created;
  MPI_Group_incl(world_group, 2, middle, &pair);
  MPI_Comm_create(MPI_COMM_WORLD, pair, &created);  // MPI_COMM_NULL on ranks 0 and 3
  if (created != MPI_COMM_NULL) {
    allreduce_rounds(created, rounds);
    MPI_Comm_free(&created);
  }
  MPI_Group_free(&pair);
  MPI_Group_free(&world_group);

  // Threads need MPI_THREAD_SERIALIZED at least: the two threads' calls never overlap.
  const bool threads = provided >= MPI_THREAD_SERIALIZED;
  const bool reused = threads && freed_on_another_thread(rank);
  const bool multiple = provided >= MPI_THREAD_MULTIPLE;
  if (multiple) two_threads_at_once(rank, rounds);

  for (MPI_Comm *c :
       {&merged, &inter_dup, &inter, &with_info, &odd_even, &dup_of_idup, &idup, &half})
    MPI_Comm_free(c);
  std::printf("rank %d done (threads %d, handle reused %d, multiple %d)\n", rank, threads ? 1 : 0,
              reused ? 1 : 0, multiple ? 1 : 0);
  MPI_Finalize();
  return 0;
}
