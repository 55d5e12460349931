// activity_record.hpp: a zeroed CUPTI activity record of a kind, with its correlation id and time
// span, as CUPTI hands them to the translator. For the translator's tests and benchmark, which
// build records by hand (no GPU here).
#pragma once

#include <cupti.h>

#include <cstdint>
#include <cstring>

namespace dftrace::gpu {

template <typename Record>
Record activity(CUpti_ActivityKind kind, uint32_t correlation = 0, uint64_t start = 0,
                uint64_t end = 0) {
  Record r;
  std::memset(&r, 0, sizeof r);
  r.kind = kind;
  r.correlationId = correlation;
  r.start = start;
  r.end = end;
  return r;
}

}  // namespace dftrace::gpu
