// extensions.hpp: loads optional components built as separate libraries (libdftrace_cupti)
// when the configuration asks for them, and stops them before the trace is closed.
#pragma once

#include "config/config.hpp"

namespace dftrace::detail {

// Called by runtime::init once tracing records. Loads what `cfg` switches on (gpu.cupti),
// beside this library first, then through the loader's search path; a component that can
// not be loaded or started is reported in one line and tracing goes on without it.
void start_extensions(const config &cfg);

// Called by runtime::finalize before it takes its lock: components write what they still
// hold (GPU activity buffered by CUPTI) while the trace is open. Never throws.
void stop_extensions() noexcept;

}  // namespace dftrace::detail
