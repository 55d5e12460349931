// log.hpp: dftrace's own diagnostics, one line each on stderr with a "dftrace:" prefix.
#pragma once

namespace dftrace::detail {

enum class log_level { error = 0, warn = 1, info = 2, debug = 3 };

void set_log_level(log_level level);
bool log_enabled(log_level level);
// printf-style; never throws, never allocates more than one line.
void log(log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Same, but only the first time this `once_key` is seen in the process.
void log_once(log_level level, const char *once_key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

}  // namespace dftrace::detail
