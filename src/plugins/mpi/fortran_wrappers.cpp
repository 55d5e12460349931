// fortran_wrappers.cpp: libdftrace_mpi's wrappers of the Fortran MPI bindings (mpif.h and `use
// mpi`, gfortran's names: mpi_allreduce_ ...). The Fortran bindings of OpenMPI call PMPI_* in C
// directly, so the C wrappers never see Fortran calls: these record the same events around the
// PMPI Fortran entry points (pmpi_allreduce_ ...), which convert the handles and sentinels
// themselves. Handles are converted here only to compute the arguments. See README.md.
#include <mpi.h>

#include <array>
#include <cstdint>

#include "dftrace/dftrace.h"
#include "wrap.hpp"

using namespace dftrace::mpi;
using fint = MPI_Fint;  // a Fortran INTEGER as the MPI bindings pass it (by reference)

extern "C" {
// The PMPI Fortran entry points (libmpi_mpifh).
void pmpi_init_(fint *ierr);
void pmpi_init_thread_(fint *required, fint *provided, fint *ierr);
void pmpi_finalize_(fint *ierr);
void pmpi_send_(const void *buf, fint *count, fint *dt, fint *dest, fint *tag, fint *comm,
                fint *ierr);
void pmpi_recv_(void *buf, fint *count, fint *dt, fint *source, fint *tag, fint *comm, fint *status,
                fint *ierr);
void pmpi_isend_(const void *buf, fint *count, fint *dt, fint *dest, fint *tag, fint *comm,
                 fint *req, fint *ierr);
void pmpi_irecv_(void *buf, fint *count, fint *dt, fint *source, fint *tag, fint *comm, fint *req,
                 fint *ierr);
void pmpi_wait_(fint *req, fint *status, fint *ierr);
void pmpi_waitall_(fint *count, fint *reqs, fint *statuses, fint *ierr);
void pmpi_barrier_(fint *comm, fint *ierr);
void pmpi_bcast_(void *buf, fint *count, fint *dt, fint *root, fint *comm, fint *ierr);
void pmpi_reduce_(const void *sb, void *rb, fint *count, fint *dt, fint *op, fint *root, fint *comm,
                  fint *ierr);
void pmpi_allreduce_(const void *sb, void *rb, fint *count, fint *dt, fint *op, fint *comm,
                     fint *ierr);
void pmpi_gather_(const void *sb, fint *sc, fint *st, void *rb, fint *rc, fint *rt, fint *root,
                  fint *comm, fint *ierr);
void pmpi_allgather_(const void *sb, fint *sc, fint *st, void *rb, fint *rc, fint *rt, fint *comm,
                     fint *ierr);
void pmpi_scatter_(const void *sb, fint *sc, fint *st, void *rb, fint *rc, fint *rt, fint *root,
                   fint *comm, fint *ierr);
void pmpi_alltoall_(const void *sb, fint *sc, fint *st, void *rb, fint *rc, fint *rt, fint *comm,
                    fint *ierr);
void pmpi_comm_dup_(fint *comm, fint *newcomm, fint *ierr);
void pmpi_comm_dup_with_info_(fint *comm, fint *info, fint *newcomm, fint *ierr);
void pmpi_comm_idup_(fint *comm, fint *newcomm, fint *request, fint *ierr);
void pmpi_sendrecv_(const void *sb, fint *sc, fint *st, fint *dest, fint *stag, void *rb, fint *rc,
                    fint *rt, fint *source, fint *rtag, fint *comm, fint *status, fint *ierr);
// OpenMPI's Fortran MPI_IN_PLACE sentinel (weak: absent elsewhere, then never matched).
extern int mpi_fortran_in_place_ __attribute__((weak));
}

namespace {

inline MPI_Comm comm_of(const fint *c) { return PMPI_Comm_f2c(*c); }
inline MPI_Datatype type_of(const fint *t) { return PMPI_Type_f2c(*t); }
inline bool in_place(const void *p) {
  return &mpi_fortran_in_place_ != nullptr && p == &mpi_fortran_in_place_;
}

// Room for any MPI implementation's Fortran status (OpenMPI: 6 integers).
constexpr int k_status_room = 32;

// A Fortran call has no return value: ierr carries it.
template <typename Args, typename Call>
void traced_f(dftrace_node_t *node, Args make_args, Call call, fint *ierr) {
  traced(node, make_args, [&] {
    call();
    return static_cast<int>(*ierr);
  });
}

// received() from a Fortran status (converted to C first).
receipt received_f(const fint *filled, fint rc, int posted_source, int posted_tag) {
  MPI_Status c_status;
  if (rc != MPI_SUCCESS || PMPI_Status_f2c(filled, &c_status) != MPI_SUCCESS)
    return {0, posted_source, posted_tag};
  return received(MPI_SUCCESS, &c_status, posted_source, posted_tag);
}

// traced_receive (wrap.hpp) for a Fortran call: its status is a Fortran one (the wrapper's own
// when the caller passed MPI_F_STATUS_IGNORE), and ierr carries the result.
template <size_t N, typename Call>
void traced_receive_f(dftrace_node_t *node, const std::array<dftrace_arg_t, N> &in, int source,
                      int tag, receipt_keys keys, fint *status, fint *ierr, Call call) {
  fint local[k_status_room];
  fint *filled = status == MPI_F_STATUS_IGNORE ? local : status;
  region_around(
      node, [&] { return in; },
      [&] {
        call(filled);
        return static_cast<int>(*ierr);
      },
      [&](int rc) {
        const receipt got = received_f(filled, rc, source, tag);
        return std::array<dftrace_arg_t, 3>{arg(keys.bytes, got.bytes),
                                            arg(keys.source, got.source), arg(keys.tag, got.tag)};
      });
}

}  // namespace

extern "C" {

// ---------------------------------------------------------------- set-up

void mpi_init_(fint *ierr) {
  const dftrace_region_t r = begin_init();
  pmpi_init_(ierr);
  dftrace_region_end(r);
  if (*ierr == MPI_SUCCESS) after_init();
}

void mpi_init_thread_(fint *required, fint *provided, fint *ierr) {
  const dftrace_region_t r = begin_init();
  if (r) dftrace_region_arg_int(r, "required", *required);
  pmpi_init_thread_(required, provided, ierr);
  if (r) dftrace_region_arg_int(r, "provided", *provided);
  dftrace_region_end(r);
  if (*ierr == MPI_SUCCESS) after_init();
}

void mpi_finalize_(fint *ierr) {
  const dftrace_region_t r = dftrace_region_begin(nodes.mpi_finalize);
  pmpi_finalize_(ierr);
  dftrace_region_end(r);
  if (dftrace_is_enabled()) dftrace_flush();
}

// ---------------------------------------------------------------- duplicates

// Not traced: as MPI_Comm_dup in C, the parent gets its id first, so that the duplicate's is
// "<parent>+k" (comm_group.cpp).
void mpi_comm_dup_(fint *comm, fint *newcomm, fint *ierr) {
  comm_group_of(comm_of(comm));
  pmpi_comm_dup_(comm, newcomm, ierr);
}

void mpi_comm_dup_with_info_(fint *comm, fint *info, fint *newcomm, fint *ierr) {
  comm_group_of(comm_of(comm));
  pmpi_comm_dup_with_info_(comm, info, newcomm, ierr);
}

void mpi_comm_idup_(fint *comm, fint *newcomm, fint *request, fint *ierr) {
  comm_group_of(comm_of(comm));
  pmpi_comm_idup_(comm, newcomm, request, ierr);
}

// ---------------------------------------------------------------- point to point

void mpi_send_(const void *buf, fint *count, fint *dt, fint *dest, fint *tag, fint *comm,
               fint *ierr) {
  traced_f(
      nodes.send,
      [&] { return peer_args(bytes_of(count, dt), *dest, *tag, size_of(comm_of(comm))); },
      [&] { pmpi_send_(buf, count, dt, dest, tag, comm, ierr); }, ierr);
}

void mpi_recv_(void *buf, fint *count, fint *dt, fint *source, fint *tag, fint *comm, fint *status,
               fint *ierr) {
  if (!dftrace_node_active_fast(nodes.receive))
    return pmpi_recv_(buf, count, dt, source, tag, comm, status, ierr);
  traced_receive_f(nodes.receive, comm_size_args(size_of(comm_of(comm))), *source, *tag,
                   {"bytes", "peer", "tag"}, status, ierr, [&](fint *filled) {
                     pmpi_recv_(buf, count, dt, source, tag, comm, filled, ierr);
                   });
}

void mpi_isend_(const void *buf, fint *count, fint *dt, fint *dest, fint *tag, fint *comm,
                fint *req, fint *ierr) {
  traced_f(
      nodes.send_post,
      [&] { return peer_args(bytes_of(count, dt), *dest, *tag, size_of(comm_of(comm))); },
      [&] { pmpi_isend_(buf, count, dt, dest, tag, comm, req, ierr); }, ierr);
}

void mpi_irecv_(void *buf, fint *count, fint *dt, fint *source, fint *tag, fint *comm, fint *req,
                fint *ierr) {
  traced_f(
      nodes.receive_post,
      [&] { return peer_args(bytes_of(count, dt), *source, *tag, size_of(comm_of(comm))); },
      [&] { pmpi_irecv_(buf, count, dt, source, tag, comm, req, ierr); }, ierr);
}

void mpi_wait_(fint *req, fint *status, fint *ierr) {
  traced_f(
      nodes.wait, [&] { return requests_args(1); }, [&] { pmpi_wait_(req, status, ierr); }, ierr);
}

void mpi_waitall_(fint *count, fint *reqs, fint *statuses, fint *ierr) {
  traced_f(
      nodes.wait, [&] { return requests_args(*count); },
      [&] { pmpi_waitall_(count, reqs, statuses, ierr); }, ierr);
}

void mpi_sendrecv_(const void *sb, fint *sc, fint *st, fint *dest, fint *stag, void *rb, fint *rc,
                   fint *rt, fint *source, fint *rtag, fint *comm, fint *status, fint *ierr) {
  if (!dftrace_node_active_fast(nodes.sendrecv))
    return pmpi_sendrecv_(sb, sc, st, dest, stag, rb, rc, rt, source, rtag, comm, status, ierr);
  traced_receive_f(
      nodes.sendrecv, peer_args(bytes_of(sc, st), *dest, *stag, size_of(comm_of(comm))), *source,
      *rtag, {"recv_bytes", "source", "recv_tag"}, status, ierr, [&](fint *filled) {
        pmpi_sendrecv_(sb, sc, st, dest, stag, rb, rc, rt, source, rtag, comm, filled, ierr);
      });
}

// ---------------------------------------------------------------- collectives

void mpi_barrier_(fint *comm, fint *ierr) {
  traced_f(
      nodes.barrier,
      [&] { return with_group(comm_size_args(size_of(comm_of(comm))), comm_of(comm)); },
      [&] { pmpi_barrier_(comm, ierr); }, ierr);
}

void mpi_bcast_(void *buf, fint *count, fint *dt, fint *root, fint *comm, fint *ierr) {
  traced_f(
      nodes.bcast,
      [&] {
        return with_group(rooted_args(bytes_of(count, dt), *root, size_of(comm_of(comm))),
                          comm_of(comm));
      },
      [&] { pmpi_bcast_(buf, count, dt, root, comm, ierr); }, ierr);
}

void mpi_reduce_(const void *sb, void *rb, fint *count, fint *dt, fint *op, fint *root, fint *comm,
                 fint *ierr) {
  traced_f(
      nodes.reduce,
      [&] {
        return with_group(rooted_args(bytes_of(count, dt), *root, size_of(comm_of(comm))),
                          comm_of(comm));
      },
      [&] { pmpi_reduce_(sb, rb, count, dt, op, root, comm, ierr); }, ierr);
}

void mpi_allreduce_(const void *sb, void *rb, fint *count, fint *dt, fint *op, fint *comm,
                    fint *ierr) {
  traced_f(
      nodes.all_reduce,
      [&] {
        return with_group(collective_args(bytes_of(count, dt), size_of(comm_of(comm))),
                          comm_of(comm));
      },
      [&] { pmpi_allreduce_(sb, rb, count, dt, op, comm, ierr); }, ierr);
}

void mpi_gather_(const void *sb, fint *sc, fint *st, void *rb, fint *rc, fint *rt, fint *root,
                 fint *comm, fint *ierr) {
  traced_f(
      nodes.gather,
      [&] {
        return with_group(
            rooted_contribution(in_place(sb), sc, st, rc, rt, *root, size_of(comm_of(comm))),
            comm_of(comm));
      },
      [&] { pmpi_gather_(sb, sc, st, rb, rc, rt, root, comm, ierr); }, ierr);
}

void mpi_allgather_(const void *sb, fint *sc, fint *st, void *rb, fint *rc, fint *rt, fint *comm,
                    fint *ierr) {
  traced_f(
      nodes.all_gather,
      [&] {
        return with_group(
            collective_contribution(in_place(sb), sc, st, rc, rt, size_of(comm_of(comm))),
            comm_of(comm));
      },
      [&] { pmpi_allgather_(sb, sc, st, rb, rc, rt, comm, ierr); }, ierr);
}

void mpi_scatter_(const void *sb, fint *sc, fint *st, void *rb, fint *rc, fint *rt, fint *root,
                  fint *comm, fint *ierr) {
  traced_f(
      nodes.scatter,
      [&] {
        return with_group(
            rooted_contribution(in_place(rb), rc, rt, sc, st, *root, size_of(comm_of(comm))),
            comm_of(comm));
      },
      [&] { pmpi_scatter_(sb, sc, st, rb, rc, rt, root, comm, ierr); }, ierr);
}

void mpi_alltoall_(const void *sb, fint *sc, fint *st, void *rb, fint *rc, fint *rt, fint *comm,
                   fint *ierr) {
  traced_f(
      nodes.all_to_all,
      [&] {
        return with_group(all_to_all_args(in_place(sb), *sc, type_of(st), *rc, type_of(rt),
                                          size_of(comm_of(comm))),
                          comm_of(comm));
      },
      [&] { pmpi_alltoall_(sb, sc, st, rb, rc, rt, comm, ierr); }, ierr);
}

}  // extern "C"
