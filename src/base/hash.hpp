// hash.hpp: the string hash shared with DFTracer 1.0.8 (MD5, high nibbles, decimal).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace dftrace::detail {

// RFC 1321 MD5 digest of data.
std::array<uint8_t, 16> md5(std::string_view data);

// DFTracer's hash: the high 4 bits of each MD5 byte, in order, as 16 hex digits read as an
// unsigned 64-bit integer. Slow (an MD5 per call): callers cache it.
uint64_t dftracer_hash(std::string_view s);

}  // namespace dftrace::detail
