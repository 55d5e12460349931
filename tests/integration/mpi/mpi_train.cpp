// mpi_train.cpp: a training-like MPI program for the tests: every step does compute under the
// AI tree, point-to-point and collectives with byte counts that depend on the rank, so that the
// checker (check_mpi_trace.py) can recompute what each rank's trace must hold.
// Usage: mpi_train <epochs> <steps>   (run under mpirun with libdftrace_mpi linked in)
#include <mpi.h>

#include <dftrace/dftrace.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

double work(int n) {
  double x = 0;
  for (int i = 0; i < n; ++i) x += std::sqrt(static_cast<double>(i));
  return x;
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 2;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 3;
  using dftrace::ai;

  const int grad_n = 1024;  // floats: all_reduce of 4096 bytes
  std::vector<float> grad(grad_n, 1.0f), sum(grad_n);
  std::vector<double> halo(64 + rank);  // blocking exchange: 8 * (64 + rank) bytes sent
  std::vector<double> halo_in(64 + size);
  std::vector<int> ring_out(100 + rank), ring_in(100 + size);  // ring: 4 * (100 + rank)
  std::vector<int> a2a_out(3 * size), a2a_in(3 * size);
  std::vector<long> gathered(static_cast<size_t>(2 * size)), scattered(5);
  std::vector<long> scatter_src(static_cast<size_t>(5 * size));
  std::vector<float> rs_in(static_cast<size_t>(7 * size)), rs_out(7);
  double checksum = 0;

  for (int e = 0; e < epochs; ++e) {
    auto ep = ai.pipeline.epoch.scope();
    ai.update("epoch", e);
    int config[4] = {e, steps, 0, 0};
    MPI_Bcast(config, 4, MPI_INT, 0, MPI_COMM_WORLD);  // 16 bytes from root 0
    for (int s = 0; s < steps; ++s) {
      ai.update("step", s);
      {
        auto f = ai.compute.forward.scope();
        checksum += work(20000);
      }
      {
        auto b = ai.compute.backward.scope();
        checksum += work(20000);
      }
      MPI_Allreduce(grad.data(), sum.data(), grad_n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      // Blocking pairwise exchange with rank ^ 1 (even sends first).
      const int partner = rank ^ 1;
      if (partner < size) {
        MPI_Status st;
        if (rank % 2 == 0) {
          MPI_Send(halo.data(), static_cast<int>(halo.size()), MPI_DOUBLE, partner, 1000 + s,
                   MPI_COMM_WORLD);
          MPI_Recv(halo_in.data(), static_cast<int>(halo_in.size()), MPI_DOUBLE, MPI_ANY_SOURCE,
                   1000 + s, MPI_COMM_WORLD, &st);
        } else {
          MPI_Recv(halo_in.data(), static_cast<int>(halo_in.size()), MPI_DOUBLE, partner, 1000 + s,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          MPI_Send(halo.data(), static_cast<int>(halo.size()), MPI_DOUBLE, partner, 1000 + s,
                   MPI_COMM_WORLD);
        }
      }
      // Non-blocking ring: post the receive and the send, then wait for both.
      MPI_Request reqs[2];
      MPI_Irecv(ring_in.data(), static_cast<int>(ring_in.size()), MPI_INT, (rank + size - 1) % size,
                20, MPI_COMM_WORLD, &reqs[0]);
      MPI_Isend(ring_out.data(), static_cast<int>(ring_out.size()), MPI_INT, (rank + 1) % size, 20,
                MPI_COMM_WORLD, &reqs[1]);
      MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
      // An overlapped all_reduce: post, compute, wait.
      MPI_Request ar;
      MPI_Iallreduce(MPI_IN_PLACE, grad.data(), 256, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &ar);
      {
        auto st = ai.compute.step.scope();
        checksum += work(5000);
      }
      MPI_Wait(&ar, MPI_STATUS_IGNORE);
      std::fill(grad.begin(), grad.end(), 1.0f);
    }
    // Once per epoch: the other collectives.
    long mine[2] = {rank, e};
    MPI_Gather(mine, 2, MPI_LONG, gathered.data(), 2, MPI_LONG, 0, MPI_COMM_WORLD);  // 16 bytes
    MPI_Allgather(mine, 2, MPI_LONG, gathered.data(), 2, MPI_LONG, MPI_COMM_WORLD);  // 16 bytes
    MPI_Scatter(scatter_src.data(), 5, MPI_LONG, scattered.data(), 5, MPI_LONG, size - 1,
                MPI_COMM_WORLD);  // 40 bytes
    double local = rank, total = 0;
    MPI_Reduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, 1 % size, MPI_COMM_WORLD);  // 8 bytes
    MPI_Reduce_scatter_block(rs_in.data(), rs_out.data(), 7, MPI_FLOAT, MPI_SUM,
                             MPI_COMM_WORLD);                                             // 28*size
    MPI_Alltoall(a2a_out.data(), 3, MPI_INT, a2a_in.data(), 3, MPI_INT, MPI_COMM_WORLD);  // 12*size
    MPI_Barrier(MPI_COMM_WORLD);
    // Send and receive in one call around the ring (24 bytes each way), then a polled
    // non-blocking barrier: MPI_Test until it completes.
    int sr_out[6] = {rank, e, 1, 2, 3, 4}, sr_in[6] = {0};
    MPI_Sendrecv(sr_out, 6, MPI_INT, (rank + 1) % size, 30, sr_in, 6, MPI_INT,
                 (rank + size - 1) % size, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    checksum += sr_in[0];
    MPI_Request ib;
    MPI_Ibarrier(MPI_COMM_WORLD, &ib);
    int flag = 0;
    while (!flag) MPI_Test(&ib, &flag, MPI_STATUS_IGNORE);
  }
  std::printf("rank %d of %d done (checksum %.0f)\n", rank, size, checksum);
  MPI_Finalize();
  return 0;
}
