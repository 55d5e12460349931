// comm_group.hpp: a communicator's `comm_group` id, the same on all its ranks: its members'
// MPI_COMM_WORLD ranks written as torch.distributed's events write a group's ("0-3", "0,2"),
// computed once per communicator and cached on it in an MPI attribute (the text: group_id.hpp).
// See README.md.
#pragma once

#include <mpi.h>

#include "group_id.hpp"

namespace dftrace::mpi {

// Creates the attribute key (once, after MPI_Init, on every rank when any rank traces). Until
// then, and when that fails, communicators have no id. Not thread-safe: call it from MPI_Init.
void comm_group_setup();

// The id of `c` (computed on first use, then one MPI_Comm_get_attr), or null when it has none:
// an intercommunicator, a communicator with processes outside MPI_COMM_WORLD, MPI_COMM_NULL,
// or no attribute key. Valid until `c` is freed. Safe from any thread for distinct
// communicators (as MPI's attribute calls are under MPI_THREAD_MULTIPLE).
const char *comm_group_of(MPI_Comm c);

}  // namespace dftrace::mpi
