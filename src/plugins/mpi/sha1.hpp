// sha1.hpp: the SHA-1 digest (FIPS 180-4) of a short text, for comm_group ids that must equal
// the ones Python's hashlib gives torch.distributed's events (group_id.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace dftrace::mpi {

// SHA-1 of `data`. Thread-safe (no state); allocates a padded copy of the input.
std::array<uint8_t, 20> sha1(std::string_view data);

}  // namespace dftrace::mpi
