// convert.hpp: what cmd_convert.cpp hands to convert_dialect.cpp.
#pragma once

#include "args.hpp"

namespace dftrace::tools {

// The dialects convert writes besides Perfetto's: dftrace's own (DFTracer 1.x's lines), what
// DFTracer 2.0.2 writes (string ph, 16-hex hashes, aggregated records as counters) and the form
// DFTracer's newer documentation describes (integer ph, a type key, no brackets).
enum class dialect { dftrace, v2_0_2, v2_typed };
// convert --to dftracer | dftracer-2.0.2 | dftracer-2-typed.
int convert_dialect(const args_t &a, dialect to);

}  // namespace dftrace::tools
