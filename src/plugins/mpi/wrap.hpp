// wrap.hpp: what the C and Fortran wrappers of libdftrace_mpi share: the comm nodes, the
// argument helpers and the traced-call templates (over plugins/common/call_event.hpp). Only the
// C ABI and MPI.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>

#include "comm_group.hpp"
#include "dftrace/dftrace.h"
#include "plugins/common/call_event.hpp"

namespace dftrace::mpi {

// Node handles, looked up once when the library loads (libdftrace is loaded first: it is a
// dependency). Handles live until exit, so the wrappers read them without locking.
struct comm_nodes {
  dftrace_node_t *root = nullptr, *mpi_init = nullptr, *mpi_finalize = nullptr;
  dftrace_node_t *send = nullptr, *receive = nullptr, *barrier = nullptr, *bcast = nullptr;
  dftrace_node_t *reduce = nullptr, *all_reduce = nullptr, *gather = nullptr, *all_gather = nullptr;
  dftrace_node_t *scatter = nullptr, *reduce_scatter = nullptr, *all_to_all = nullptr;
  dftrace_node_t *wait = nullptr, *test = nullptr, *sendrecv = nullptr;
  // non-blocking: derived "<op>.post" nodes, so that switching an operation off covers both
  dftrace_node_t *send_post = nullptr, *receive_post = nullptr, *barrier_post = nullptr;
  dftrace_node_t *bcast_post = nullptr, *reduce_post = nullptr, *all_reduce_post = nullptr;
  dftrace_node_t *gather_post = nullptr, *all_gather_post = nullptr, *scatter_post = nullptr;
  dftrace_node_t *reduce_scatter_post = nullptr, *all_to_all_post = nullptr;
};
// The comm nodes every wrapper records on, filled once when the library loads (dftrace_mpi.cpp).
extern comm_nodes nodes;

using plugin::no_args;
using plugin::region_around;
inline constexpr dftrace_arg_t arg(const char *key, int64_t v) { return plugin::arg_i(key, v); }

inline int64_t bytes_of(int64_t count, MPI_Datatype t) {
  int size = 0;
  if (count <= 0 || t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &size) != MPI_SUCCESS) return 0;
  return count * size;
}

inline int size_of(MPI_Comm c) {
  int n = 0;
  if (c == MPI_COMM_NULL || PMPI_Comm_size(c, &n) != MPI_SUCCESS) return 0;
  return n;
}

inline int rank_in(MPI_Comm c) {
  int r = 0;
  if (c == MPI_COMM_NULL || PMPI_Comm_rank(c, &r) != MPI_SUCCESS) return 0;
  return r;
}

inline int64_t sum_of(const int *counts, int n) {
  int64_t s = 0;
  if (counts)
    for (int i = 0; i < n; ++i) s += counts[i];
  return s;
}

// The per-use arguments of each shape of call, shared by the blocking and non-blocking C
// wrappers and the Fortran ones, so that one operation writes the same keys from each.
inline std::array<dftrace_arg_t, 4> peer_args(int64_t bytes, int peer, int tag, int comm_size) {
  return {arg("bytes", bytes), arg("peer", peer), arg("tag", tag), arg("comm_size", comm_size)};
}

// bcast, reduce, gather and scatter: one rank is the root.
inline std::array<dftrace_arg_t, 3> rooted_args(int64_t bytes, int root, int comm_size) {
  return {arg("bytes", bytes), arg("root", root), arg("comm_size", comm_size)};
}

// all_reduce, all_gather, reduce_scatter and all_to_all.
inline std::array<dftrace_arg_t, 2> collective_args(int64_t bytes, int comm_size) {
  return {arg("bytes", bytes), arg("comm_size", comm_size)};
}

inline std::array<dftrace_arg_t, 1> comm_size_args(int comm_size) {
  return {arg("comm_size", comm_size)};
}

// A collective's arguments and, last, `comm_group` (the communicator's id, comm_group.hpp)
// when the communicator has one: what dftrace analyze matches instances by. An
// intercommunicator has none; its calls say `comm_remote_size` instead (comm_size is the local
// group's), and the analysis does not match them.
template <size_t N>
struct group_args {
  std::array<dftrace_arg_t, N + 1> args;
  size_t n;
  const dftrace_arg_t *data() const { return args.data(); }
  size_t size() const { return n; }
};
template <size_t N>
inline group_args<N> with_group(const std::array<dftrace_arg_t, N> &in, MPI_Comm c) {
  group_args<N> g{};
  for (size_t i = 0; i < N; ++i) g.args[i] = in[i];
  g.n = N;
  if (const char *id = comm_group_of(c)) {
    g.args[g.n++] = plugin::arg_s("comm_group", id);
  } else if (int remote = 0; c != MPI_COMM_NULL &&
                             PMPI_Comm_test_inter(c, &remote) == MPI_SUCCESS && remote &&
                             PMPI_Comm_remote_size(c, &remote) == MPI_SUCCESS) {
    g.args[g.n++] = arg("comm_remote_size", remote);
  }
  return g;
}

inline std::array<dftrace_arg_t, 1> requests_args(int requests) {
  return {arg("requests", requests)};
}

// The bytes of a Fortran count of a Fortran datatype handle (converted only here, when needed).
inline int64_t bytes_of(const MPI_Fint *count, const MPI_Fint *type) {
  return bytes_of(*count, PMPI_Type_f2c(*type));
}

// What a rank contributes to a gather: its send buffer, or in place its own block of the
// receive buffer (the same rule for scatter with send and receive exchanged). C counts and
// datatypes, or Fortran ones (MPI_Fint pointers).
template <typename Count, typename Type>
inline int64_t contributed_bytes(bool in_place, Count send_count, Type send_type, Count recv_count,
                                 Type recv_type) {
  return in_place ? bytes_of(recv_count, recv_type) : bytes_of(send_count, send_type);
}

// What a receive got, from the status MPI filled (`filled`: the caller's, or the wrapper's own
// when the caller passed MPI_STATUS_IGNORE): bytes, source and tag; 0 bytes and the posted
// source and tag when the call failed.
struct receipt {
  int64_t bytes;
  int source;
  int tag;
};

inline receipt received(int rc, const MPI_Status *filled, int posted_source, int posted_tag) {
  if (rc != MPI_SUCCESS) return {0, posted_source, posted_tag};
  int got = 0;
  if (PMPI_Get_count(filled, MPI_BYTE, &got) != MPI_SUCCESS || got == MPI_UNDEFINED) got = 0;
  return {got, filled->MPI_SOURCE, filled->MPI_TAG};
}

// One event around one PMPI call. The arguments are built only when the node records.
template <typename Args, typename Call>
inline int traced(dftrace_node_t *node, Args make_args, Call call) {
  return region_around(node, make_args, call, [](int) { return no_args(); });
}

// Test calls: one event per call (they are often polled: `comm.test: false` switches them
// off), with how many requests were asked about and how many completed.
template <typename Call>
inline int traced_test(int requests, Call call, int *completed) {
  return region_around(
      nodes.test, [&] { return std::array<dftrace_arg_t, 1>{arg("requests", requests)}; }, call,
      [&](int rc) {
        return std::array<dftrace_arg_t, 1>{arg("completed", rc == MPI_SUCCESS ? *completed : 0)};
      });
}

// The names of a receipt's arguments in the end event.
struct receipt_keys {
  const char *bytes, *source, *tag;
};

// One event around a call that receives: `in` is known before; what arrived (from the status MPI
// fills: the caller's, or a local one when it passed MPI_STATUS_IGNORE) is added at its end.
template <size_t N, typename Call>
int traced_receive(dftrace_node_t *node, const std::array<dftrace_arg_t, N> &in, int source,
                   int tag, receipt_keys keys, MPI_Status *status, Call call) {
  MPI_Status local;
  MPI_Status *filled = status == MPI_STATUS_IGNORE ? &local : status;
  return region_around(
      node, [&] { return in; }, [&] { return call(filled); },
      [&](int rc) {
        const receipt got = received(rc, filled, source, tag);
        return std::array<dftrace_arg_t, 3>{arg(keys.bytes, got.bytes),
                                            arg(keys.source, got.source), arg(keys.tag, got.tag)};
      });
}

// all_to_all: this rank sends `count` items of `type` to each of comm_size ranks (its receive
// counts when in place).
inline std::array<dftrace_arg_t, 2> all_to_all_args(bool in_place, int sc, MPI_Datatype st, int rc,
                                                    MPI_Datatype rt, int comm_size) {
  const int64_t per_rank = in_place ? rc : sc;
  return collective_args(bytes_of(per_rank * comm_size, in_place ? rt : st), comm_size);
}

// Sendrecv(_replace): what is sent is known before, what arrived only after.
template <typename Call>
int traced_sendrecv(int64_t bytes, int dest, int sendtag, int source, int recvtag, MPI_Comm comm,
                    MPI_Status *status, Call call) {
  if (!dftrace_node_active_fast(nodes.sendrecv)) return call(status);
  return traced_receive(nodes.sendrecv, peer_args(bytes, dest, sendtag, size_of(comm)), source,
                        recvtag, {"recv_bytes", "source", "recv_tag"}, status, call);
}

// Collectives whose bytes are what this rank contributes (contributed_bytes), with a root or not.
template <typename Count, typename Type>
inline std::array<dftrace_arg_t, 3> rooted_contribution(bool in_place, Count c1, Type t1, Count c2,
                                                        Type t2, int root, int comm_size) {
  return rooted_args(contributed_bytes(in_place, c1, t1, c2, t2), root, comm_size);
}
template <typename Count, typename Type>
inline std::array<dftrace_arg_t, 2> collective_contribution(bool in_place, Count c1, Type t1,
                                                            Count c2, Type t2, int comm_size) {
  return collective_args(contributed_bytes(in_place, c1, t1, c2, t2), comm_size);
}

// After a successful MPI_Init (from C or Fortran): rank, size, clock offset, affinity.
void after_init();
// The MPI_Init event (also starts tracing when the environment enables it).
dftrace_region_t begin_init();

}  // namespace dftrace::mpi
