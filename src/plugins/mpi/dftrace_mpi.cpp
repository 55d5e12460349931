// dftrace_mpi.cpp: the PMPI wrappers of libdftrace_mpi: rank and size at MPI_Init, clock
// alignment to rank 0, the affinity check across ranks, and one comm event per MPI call.
// Written only against dftrace.h (the C ABI) and MPI; see README.md for the event table.
#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "comm_group.hpp"
#include "dftrace/dftrace.h"
#include "wrap.hpp"

namespace dftrace::mpi {

comm_nodes nodes;

namespace {

// One member per built-in event of the tree's one table (dftrace/ai_tree.def), so that
// BUILTIN_COMM(send) names "send" only if the table has comm.send, and fails to compile otherwise.
struct builtin_events {
#define DFTRACE_AI_EVENT(c, e) char c##_##e;
#include "dftrace/ai_tree.def"
};
#define BUILTIN_COMM(e) (static_cast<void>(sizeof(builtin_events::comm_##e)), #e)

dftrace_node_t *op_node(dftrace_node_t *comm, const char *name, dftrace_node_t **post) {
  dftrace_node_t *n = dftrace_node_child(comm, name);
  if (post) *post = n ? dftrace_node_derive(n, "post") : nullptr;
  return n;
}

__attribute__((constructor)) void on_load() {
  nodes.root = dftrace_node_root();
  dftrace_node_t *comm = dftrace_category("comm");
  if (!comm) return;
  nodes.mpi_init = dftrace_node_child(comm, "mpi_init");
  nodes.mpi_finalize = dftrace_node_child(comm, "mpi_finalize");
  nodes.wait = dftrace_node_child(comm, "wait");
  nodes.test = dftrace_node_child(comm, "test");
  nodes.sendrecv = dftrace_node_child(comm, "sendrecv");
  nodes.send = op_node(comm, BUILTIN_COMM(send), &nodes.send_post);
  nodes.receive = op_node(comm, BUILTIN_COMM(receive), &nodes.receive_post);
  nodes.barrier = op_node(comm, BUILTIN_COMM(barrier), &nodes.barrier_post);
  nodes.bcast = op_node(comm, BUILTIN_COMM(bcast), &nodes.bcast_post);
  nodes.reduce = op_node(comm, BUILTIN_COMM(reduce), &nodes.reduce_post);
  nodes.all_reduce = op_node(comm, BUILTIN_COMM(all_reduce), &nodes.all_reduce_post);
  nodes.gather = op_node(comm, BUILTIN_COMM(gather), &nodes.gather_post);
  nodes.all_gather = op_node(comm, BUILTIN_COMM(all_gather), &nodes.all_gather_post);
  nodes.scatter = op_node(comm, BUILTIN_COMM(scatter), &nodes.scatter_post);
  nodes.reduce_scatter = op_node(comm, BUILTIN_COMM(reduce_scatter), &nodes.reduce_scatter_post);
  nodes.all_to_all = op_node(comm, BUILTIN_COMM(all_to_all), &nodes.all_to_all_post);
}

bool env_flag(const char *name, bool fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v) return fallback;
  const std::string s(v);
  if (s == "0" || s == "false" || s == "False" || s == "FALSE" || s == "no" || s == "off")
    return false;
  return true;
}

int env_int(const char *name, int fallback, int lo, int hi) {
  const char *v = std::getenv(name);
  if (!v || !*v) return fallback;
  char *end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end || x < lo || x > hi) {
    std::fprintf(stderr, "dftrace: %s=%s is not an integer in %d..%d; using %d\n", name, v, lo, hi,
                 fallback);
    return fallback;
  }
  return static_cast<int>(x);
}

// Estimates this rank's offset to rank 0's trace clock: rank 0 answers each other rank's
// pings in turn with its trace time; the round with the shortest round trip wins.
void align_clocks(MPI_Comm world, int rank, int size, int rounds) {
  MPI_Comm sync;
  if (PMPI_Comm_dup(world, &sync) != MPI_SUCCESS) return;
  const int tag = 7001;
  int64_t best_offset = 0, best_rtt = -1;
  if (rank == 0) {
    for (int r = 1; r < size; ++r) {
      for (int k = 0; k < rounds; ++k) {
        int64_t ping = 0;
        PMPI_Recv(&ping, 1, MPI_INT64_T, r, tag, sync, MPI_STATUS_IGNORE);
        const int64_t now = static_cast<int64_t>(dftrace_trace_time_ns());
        PMPI_Send(&now, 1, MPI_INT64_T, r, tag, sync);
      }
    }
    best_rtt = 0;
  } else {
    for (int k = 0; k < rounds; ++k) {
      const int64_t t0 = static_cast<int64_t>(dftrace_trace_time_ns());
      PMPI_Send(&t0, 1, MPI_INT64_T, 0, tag, sync);
      int64_t remote = 0;
      PMPI_Recv(&remote, 1, MPI_INT64_T, 0, tag, sync, MPI_STATUS_IGNORE);
      const int64_t t1 = static_cast<int64_t>(dftrace_trace_time_ns());
      const int64_t rtt = t1 - t0;
      if (best_rtt < 0 || rtt < best_rtt) {
        best_rtt = rtt;
        best_offset = remote - (t0 + rtt / 2);
      }
    }
  }
  PMPI_Comm_free(&sync);
  dftrace_process_property_int("clock_offset_ns", best_offset);
  dftrace_process_property_int("clock_offset_uncertainty_ns", (best_rtt + 1) / 2);
  dftrace_process_property_int("clock_sync_rounds", rank == 0 ? 0 : rounds);
}

std::string cpu_text(const cpu_set_t &s) {
  std::string t;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &s)) t += (t.empty() ? "" : ",") + std::to_string(c);
  return t;
}

// Ranks on this host exchange their CPU masks; a bound rank that shares CPUs with another
// bound rank says so in a PR affinity_warning line.
void check_affinity(MPI_Comm world, int rank) {
  MPI_Comm local;
  if (PMPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local) != MPI_SUCCESS)
    return;
  int lrank = 0, lsize = 1;
  PMPI_Comm_rank(local, &lrank);
  PMPI_Comm_size(local, &lsize);
  dftrace_process_property_int("local_rank", lrank);
  dftrace_process_property_int("local_size", lsize);
  struct entry {
    int world_rank;
    cpu_set_t cpus;
  } mine{};
  mine.world_rank = rank;
  CPU_ZERO(&mine.cpus);
  const bool known = ::sched_getaffinity(0, sizeof mine.cpus, &mine.cpus) == 0;
  std::vector<entry> all(static_cast<size_t>(lsize));
  if (PMPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, local) ==
          MPI_SUCCESS &&
      known) {
    long online = ::sysconf(_SC_NPROCESSORS_ONLN);
    auto bound = [online](const cpu_set_t &s) {
      return CPU_COUNT(&s) > 0 && CPU_COUNT(&s) < online;
    };
    if (bound(mine.cpus)) {
      std::string others;
      cpu_set_t shared;
      CPU_ZERO(&shared);
      for (int i = 0; i < lsize; ++i) {
        if (i == lrank || !bound(all[i].cpus)) continue;
        cpu_set_t both;
        CPU_AND(&both, &mine.cpus, &all[i].cpus);
        if (CPU_COUNT(&both) == 0) continue;
        CPU_OR(&shared, &shared, &both);
        others += (others.empty() ? "" : ",") + std::to_string(all[i].world_rank);
      }
      if (!others.empty())
        dftrace_process_property_string(
            "affinity_warning", ("rank " + std::to_string(rank) + " shares CPUs " +
                                 cpu_text(shared) + " with rank(s) " + others + " on this host")
                                    .c_str());
    }
  }
  PMPI_Comm_free(&local);
}

// The bytes this rank contributes to a vector collective: its own count, or (in place) its entry
// of the vector of counts.
int64_t vector_contribution(bool in_place, const int counts[], MPI_Datatype counts_type,
                            int own_count, MPI_Datatype own_type, MPI_Comm comm) {
  return in_place ? bytes_of(counts ? counts[rank_in(comm)] : 0, counts_type)
                  : bytes_of(own_count, own_type);
}

}  // namespace

// After a successful MPI_Init: rank, size, clock offset, affinity.
void after_init() {
  int rank = 0, size = 1;
  if (PMPI_Comm_rank(MPI_COMM_WORLD, &rank) != MPI_SUCCESS ||
      PMPI_Comm_size(MPI_COMM_WORLD, &size) != MPI_SUCCESS)
    return;
  dftrace_set_rank(rank, size);
  // The exchanges below are collective, so the ranks agree first: every rank takes part if
  // any rank traces; any rank switching the clock exchange off switches it off for all; the
  // largest number of rounds asked for wins.
  int mine[3] = {dftrace_is_enabled() ? 1 : 0, env_flag("DFTRACE_MPI_CLOCK_SYNC", true) ? 0 : 1,
                 env_int("DFTRACE_MPI_CLOCK_ROUNDS", 10, 1, 1000)};
  int all[3] = {0, 0, 0};
  if (PMPI_Allreduce(mine, all, 3, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS || !all[0])
    return;
  if (size > 1 && !all[1]) {
    align_clocks(MPI_COMM_WORLD, rank, size, all[2]);
  } else {
    dftrace_process_property_int("clock_offset_ns", 0);
    dftrace_process_property_int("clock_offset_uncertainty_ns", 0);
  }
  check_affinity(MPI_COMM_WORLD, rank);
  // After the private duplicate above: MPI_COMM_WORLD has no id yet, so the application's own
  // duplicates are counted from 1 on every rank.
  comm_group_setup();
}

// The MPI_Init event. Its first use also initialises tracing when the environment enables it,
// so that the PR lines written after MPI_Init land in the trace.
dftrace_region_t begin_init() {
  dftrace_region_t r = dftrace_region_begin(nodes.mpi_init);
  if (r && !dftrace_node_is_enabled(nodes.mpi_init)) {
    // That first use read the configuration, which switches this node off (e.g. "-comm").
    dftrace_region_cancel(r);
    r = 0;
  }
  if (!r && !dftrace_is_enabled() && dftrace_node_active_fast(nodes.root)) {
    // comm.mpi_init is switched off but tracing is on: start it through the root.
    dftrace_region_cancel(dftrace_region_begin(nodes.root));
  }
  return r;
}

}  // namespace dftrace::mpi

using namespace dftrace::mpi;

extern "C" {

// ---------------------------------------------------------------- set-up

int MPI_Init(int *argc, char ***argv) {
  const dftrace_region_t r = begin_init();
  const int rc = PMPI_Init(argc, argv);
  dftrace_region_end(r);
  if (rc == MPI_SUCCESS) after_init();
  return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  const dftrace_region_t r = begin_init();
  if (r) dftrace_region_arg_int(r, "required", required);
  const int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (r && provided) dftrace_region_arg_int(r, "provided", *provided);
  dftrace_region_end(r);
  if (rc == MPI_SUCCESS) after_init();
  return rc;
}

int MPI_Finalize(void) {
  const dftrace_region_t r = dftrace_region_begin(nodes.mpi_finalize);
  const int rc = PMPI_Finalize();
  dftrace_region_end(r);
  // What is buffered reaches the file before the launcher may tear the process down.
  if (dftrace_is_enabled()) dftrace_flush();
  return rc;
}

// ---------------------------------------------------------------- duplicates

// Not traced: the parent gets its id first (comm_group_of), so that MPI copies it to the
// duplicate as "<parent>+k" on every rank (comm_group.cpp), whichever rank traced the parent.

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) {
  comm_group_of(comm);
  return PMPI_Comm_dup(comm, newcomm);
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm) {
  comm_group_of(comm);
  return PMPI_Comm_dup_with_info(comm, info, newcomm);
}

int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *req) {
  comm_group_of(comm);
  return PMPI_Comm_idup(comm, newcomm, req);
}

#if MPI_VERSION >= 4  // (not in OpenMPI 4.1, which the tests here run)
int MPI_Comm_idup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm, MPI_Request *req) {
  comm_group_of(comm);
  return PMPI_Comm_idup_with_info(comm, info, newcomm, req);
}
#endif

// ---------------------------------------------------------------- point to point

int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) {
  return traced(
      nodes.send, [&] { return peer_args(bytes_of(count, dt), dest, tag, size_of(comm)); },
      [&] { return PMPI_Send(buf, count, dt, dest, tag, comm); });
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) {
  return traced(
      nodes.send, [&] { return peer_args(bytes_of(count, dt), dest, tag, size_of(comm)); },
      [&] { return PMPI_Ssend(buf, count, dt, dest, tag, comm); });
}

int MPI_Recv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
             MPI_Status *status) {
  if (!dftrace_node_active_fast(nodes.receive))
    return PMPI_Recv(buf, count, dt, source, tag, comm, status);
  // What arrived is known only afterwards: bytes, source and tag come from the status.
  return traced_receive(
      nodes.receive, comm_size_args(size_of(comm)), source, tag, {"bytes", "peer", "tag"}, status,
      [&](MPI_Status *filled) { return PMPI_Recv(buf, count, dt, source, tag, comm, filled); });
}

int MPI_Isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
              MPI_Request *req) {
  return traced(
      nodes.send_post, [&] { return peer_args(bytes_of(count, dt), dest, tag, size_of(comm)); },
      [&] { return PMPI_Isend(buf, count, dt, dest, tag, comm, req); });
}

int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
              MPI_Request *req) {
  return traced(
      nodes.receive_post,
      [&] { return peer_args(bytes_of(count, dt), source, tag, size_of(comm)); },
      [&] { return PMPI_Irecv(buf, count, dt, source, tag, comm, req); });
}

// ---------------------------------------------------------------- completion

int MPI_Wait(MPI_Request *req, MPI_Status *status) {
  return traced(
      nodes.wait, [&] { return requests_args(1); }, [&] { return PMPI_Wait(req, status); });
}

int MPI_Waitall(int count, MPI_Request reqs[], MPI_Status *statuses) {
  return traced(
      nodes.wait, [&] { return requests_args(count); },
      [&] { return PMPI_Waitall(count, reqs, statuses); });
}

int MPI_Waitany(int count, MPI_Request reqs[], int *index, MPI_Status *status) {
  return traced(
      nodes.wait, [&] { return requests_args(count); },
      [&] { return PMPI_Waitany(count, reqs, index, status); });
}

int MPI_Waitsome(int incount, MPI_Request reqs[], int *outcount, int indices[],
                 MPI_Status statuses[]) {
  return traced(
      nodes.wait, [&] { return requests_args(incount); },
      [&] { return PMPI_Waitsome(incount, reqs, outcount, indices, statuses); });
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status) {
  int done = 0;
  return traced_test(
      1,
      [&] {
        const int rc = PMPI_Test(req, flag, status);
        done = *flag ? 1 : 0;
        return rc;
      },
      &done);
}

int MPI_Testall(int count, MPI_Request reqs[], int *flag, MPI_Status statuses[]) {
  int done = 0;
  return traced_test(
      count,
      [&] {
        const int rc = PMPI_Testall(count, reqs, flag, statuses);
        done = *flag ? count : 0;
        return rc;
      },
      &done);
}

int MPI_Testany(int count, MPI_Request reqs[], int *index, int *flag, MPI_Status *status) {
  int done = 0;
  return traced_test(
      count,
      [&] {
        const int rc = PMPI_Testany(count, reqs, index, flag, status);
        done = *flag && *index != MPI_UNDEFINED ? 1 : 0;
        return rc;
      },
      &done);
}

int MPI_Testsome(int incount, MPI_Request reqs[], int *outcount, int indices[],
                 MPI_Status statuses[]) {
  int done = 0;
  return traced_test(
      incount,
      [&] {
        const int rc = PMPI_Testsome(incount, reqs, outcount, indices, statuses);
        done = *outcount == MPI_UNDEFINED ? 0 : *outcount;
        return rc;
      },
      &done);
}

// ---------------------------------------------------------------- send and receive in one

int MPI_Sendrecv(const void *sb, int sc, MPI_Datatype st, int dest, int sendtag, void *rb, int rc,
                 MPI_Datatype rt, int source, int recvtag, MPI_Comm comm, MPI_Status *status) {
  return traced_sendrecv(
      bytes_of(sc, st), dest, sendtag, source, recvtag, comm, status, [&](MPI_Status *s) {
        return PMPI_Sendrecv(sb, sc, st, dest, sendtag, rb, rc, rt, source, recvtag, comm, s);
      });
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype dt, int dest, int sendtag, int source,
                         int recvtag, MPI_Comm comm, MPI_Status *status) {
  return traced_sendrecv(
      bytes_of(count, dt), dest, sendtag, source, recvtag, comm, status, [&](MPI_Status *s) {
        return PMPI_Sendrecv_replace(buf, count, dt, dest, sendtag, source, recvtag, comm, s);
      });
}

// ---------------------------------------------------------------- collectives

int MPI_Barrier(MPI_Comm comm) {
  return traced(
      nodes.barrier, [&] { return with_group(comm_size_args(size_of(comm)), comm); },
      [&] { return PMPI_Barrier(comm); });
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
  return traced(
      nodes.bcast,
      [&] { return with_group(rooted_args(bytes_of(count, dt), root, size_of(comm)), comm); },
      [&] { return PMPI_Bcast(buf, count, dt, root, comm); });
}

int MPI_Reduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root,
               MPI_Comm comm) {
  return traced(
      nodes.reduce,
      [&] { return with_group(rooted_args(bytes_of(count, dt), root, size_of(comm)), comm); },
      [&] { return PMPI_Reduce(sb, rb, count, dt, op, root, comm); });
}

int MPI_Allreduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
  return traced(
      nodes.all_reduce,
      [&] { return with_group(collective_args(bytes_of(count, dt), size_of(comm)), comm); },
      [&] { return PMPI_Allreduce(sb, rb, count, dt, op, comm); });
}

int MPI_Gather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
               MPI_Comm comm) {
  return traced(
      nodes.gather,
      [&] {
        return with_group(
            rooted_contribution(sb == MPI_IN_PLACE, sc, st, rc, rt, root, size_of(comm)), comm);
      },
      [&] { return PMPI_Gather(sb, sc, st, rb, rc, rt, root, comm); });
}

int MPI_Gatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[],
                const int displs[], MPI_Datatype rt, int root, MPI_Comm comm) {
  return traced(
      nodes.gather,
      [&] {
        return with_group(
            rooted_args(vector_contribution(sb == MPI_IN_PLACE, rcs, rt, sc, st, comm), root,
                        size_of(comm)),
            comm);
      },
      [&] { return PMPI_Gatherv(sb, sc, st, rb, rcs, displs, rt, root, comm); });
}

int MPI_Allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                  MPI_Comm comm) {
  return traced(
      nodes.all_gather,
      [&] {
        return with_group(
            collective_contribution(sb == MPI_IN_PLACE, sc, st, rc, rt, size_of(comm)), comm);
      },
      [&] { return PMPI_Allgather(sb, sc, st, rb, rc, rt, comm); });
}

int MPI_Allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[],
                   const int displs[], MPI_Datatype rt, MPI_Comm comm) {
  return traced(
      nodes.all_gather,
      [&] {
        return with_group(
            collective_args(vector_contribution(sb == MPI_IN_PLACE, rcs, rt, sc, st, comm),
                            size_of(comm)),
            comm);
      },
      [&] { return PMPI_Allgatherv(sb, sc, st, rb, rcs, displs, rt, comm); });
}

int MPI_Scatter(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                int root, MPI_Comm comm) {
  return traced(
      nodes.scatter,
      [&] {
        return with_group(
            rooted_contribution(rb == MPI_IN_PLACE, rc, rt, sc, st, root, size_of(comm)), comm);
      },
      [&] { return PMPI_Scatter(sb, sc, st, rb, rc, rt, root, comm); });
}

int MPI_Scatterv(const void *sb, const int scs[], const int displs[], MPI_Datatype st, void *rb,
                 int rc, MPI_Datatype rt, int root, MPI_Comm comm) {
  return traced(
      nodes.scatter,
      [&] {
        return with_group(
            rooted_args(vector_contribution(rb == MPI_IN_PLACE, scs, st, rc, rt, comm), root,
                        size_of(comm)),
            comm);
      },
      [&] { return PMPI_Scatterv(sb, scs, displs, st, rb, rc, rt, root, comm); });
}

int MPI_Reduce_scatter(const void *sb, void *rb, const int rcs[], MPI_Datatype dt, MPI_Op op,
                       MPI_Comm comm) {
  return traced(
      nodes.reduce_scatter,
      [&] {
        const int comm_size = size_of(comm);
        return with_group(collective_args(bytes_of(sum_of(rcs, comm_size), dt), comm_size), comm);
      },
      [&] { return PMPI_Reduce_scatter(sb, rb, rcs, dt, op, comm); });
}

int MPI_Reduce_scatter_block(const void *sb, void *rb, int rc, MPI_Datatype dt, MPI_Op op,
                             MPI_Comm comm) {
  return traced(
      nodes.reduce_scatter,
      [&] {
        const int comm_size = size_of(comm);
        return with_group(
            collective_args(bytes_of(static_cast<int64_t>(rc) * comm_size, dt), comm_size), comm);
      },
      [&] { return PMPI_Reduce_scatter_block(sb, rb, rc, dt, op, comm); });
}

int MPI_Alltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                 MPI_Comm comm) {
  return traced(
      nodes.all_to_all,
      [&] {
        return with_group(all_to_all_args(sb == MPI_IN_PLACE, sc, st, rc, rt, size_of(comm)), comm);
      },
      [&] { return PMPI_Alltoall(sb, sc, st, rb, rc, rt, comm); });
}

int MPI_Alltoallv(const void *sb, const int scs[], const int sdispls[], MPI_Datatype st, void *rb,
                  const int rcs[], const int rdispls[], MPI_Datatype rt, MPI_Comm comm) {
  return traced(
      nodes.all_to_all,
      [&] {
        const int comm_size = size_of(comm);
        const int64_t bytes = sb == MPI_IN_PLACE ? bytes_of(sum_of(rcs, comm_size), rt)
                                                 : bytes_of(sum_of(scs, comm_size), st);
        return with_group(collective_args(bytes, comm_size), comm);
      },
      [&] { return PMPI_Alltoallv(sb, scs, sdispls, st, rb, rcs, rdispls, rt, comm); });
}

// ---------------------------------------------------------------- non-blocking collectives

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req) {
  return traced(
      nodes.barrier_post, [&] { return with_group(comm_size_args(size_of(comm)), comm); },
      [&] { return PMPI_Ibarrier(comm, req); });
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req) {
  return traced(
      nodes.bcast_post,
      [&] { return with_group(rooted_args(bytes_of(count, dt), root, size_of(comm)), comm); },
      [&] { return PMPI_Ibcast(buf, count, dt, root, comm, req); });
}

int MPI_Ireduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request *req) {
  return traced(
      nodes.reduce_post,
      [&] { return with_group(rooted_args(bytes_of(count, dt), root, size_of(comm)), comm); },
      [&] { return PMPI_Ireduce(sb, rb, count, dt, op, root, comm, req); });
}

int MPI_Iallreduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                   MPI_Request *req) {
  return traced(
      nodes.all_reduce_post,
      [&] { return with_group(collective_args(bytes_of(count, dt), size_of(comm)), comm); },
      [&] { return PMPI_Iallreduce(sb, rb, count, dt, op, comm, req); });
}

int MPI_Igather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                int root, MPI_Comm comm, MPI_Request *req) {
  return traced(
      nodes.gather_post,
      [&] {
        return with_group(
            rooted_contribution(sb == MPI_IN_PLACE, sc, st, rc, rt, root, size_of(comm)), comm);
      },
      [&] { return PMPI_Igather(sb, sc, st, rb, rc, rt, root, comm, req); });
}

int MPI_Iallgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                   MPI_Comm comm, MPI_Request *req) {
  return traced(
      nodes.all_gather_post,
      [&] {
        return with_group(
            collective_contribution(sb == MPI_IN_PLACE, sc, st, rc, rt, size_of(comm)), comm);
      },
      [&] { return PMPI_Iallgather(sb, sc, st, rb, rc, rt, comm, req); });
}

int MPI_Iscatter(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                 int root, MPI_Comm comm, MPI_Request *req) {
  return traced(
      nodes.scatter_post,
      [&] {
        return with_group(
            rooted_contribution(rb == MPI_IN_PLACE, rc, rt, sc, st, root, size_of(comm)), comm);
      },
      [&] { return PMPI_Iscatter(sb, sc, st, rb, rc, rt, root, comm, req); });
}

int MPI_Ireduce_scatter_block(const void *sb, void *rb, int rc, MPI_Datatype dt, MPI_Op op,
                              MPI_Comm comm, MPI_Request *req) {
  return traced(
      nodes.reduce_scatter_post,
      [&] {
        const int comm_size = size_of(comm);
        return with_group(
            collective_args(bytes_of(static_cast<int64_t>(rc) * comm_size, dt), comm_size), comm);
      },
      [&] { return PMPI_Ireduce_scatter_block(sb, rb, rc, dt, op, comm, req); });
}

int MPI_Ialltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                  MPI_Comm comm, MPI_Request *req) {
  return traced(
      nodes.all_to_all_post,
      [&] {
        return with_group(all_to_all_args(sb == MPI_IN_PLACE, sc, st, rc, rt, size_of(comm)), comm);
      },
      [&] { return PMPI_Ialltoall(sb, sc, st, rb, rc, rt, comm, req); });
}

}  // extern "C"
