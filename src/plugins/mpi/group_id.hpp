// group_id.hpp: the text of a `comm_group` id, as torch.distributed's events write a group's
// (bindings/python/dftrace/torch/distributed.py, _ranks_id): no MPI here (comm_group.hpp asks
// MPI for the members).
#pragma once

#include <cstddef>
#include <string>

namespace dftrace::mpi {

// Members' ranks in the group's rank order as "first-last" runs of consecutive increasing
// ranks joined by "," ("0-3", "0,2", "4-7,12", "3,0"); longer than 64 characters, "h" and the
// first 16 hex digits of the SHA-1 of that text.
std::string ranks_id(const int *ranks, size_t n);

// `text`, or "h" and 16 hex digits of its SHA-1 when it is longer than 64 characters.
std::string short_id(std::string text);

}  // namespace dftrace::mpi
