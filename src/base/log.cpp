// log.cpp: stderr diagnostics with a level threshold and once-only messages.
#include "base/log.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

namespace dftrace::detail {

namespace {
std::atomic<int> g_level{static_cast<int>(log_level::warn)};
const char *const k_names[] = {"error", "warning", "info", "debug"};

void vlog(log_level level, const char *fmt, va_list ap) {
  char line[1024];
  int n = std::snprintf(line, sizeof line, "dftrace: %s: ", k_names[static_cast<int>(level)]);
  if (n < 0) return;
  int m = std::vsnprintf(line + n, sizeof line - static_cast<size_t>(n) - 1, fmt, ap);
  if (m < 0) return;
  size_t len = std::min(sizeof line - 2, static_cast<size_t>(n + m));
  line[len++] = '\n';
  ssize_t w = ::write(2, line, len);
  (void)w;
}
}  // namespace

void set_log_level(log_level level) { g_level.store(static_cast<int>(level)); }
bool log_enabled(log_level level) { return static_cast<int>(level) <= g_level.load(); }

void log(log_level level, const char *fmt, ...) {
  if (!log_enabled(level)) return;
  va_list ap;
  va_start(ap, fmt);
  vlog(level, fmt, ap);
  va_end(ap);
}

void log_once(log_level level, const char *once_key, const char *fmt, ...) {
  if (!log_enabled(level)) return;
  static std::mutex mu;
  static auto *seen = new std::set<std::string>;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!seen->insert(once_key).second) return;
  }
  va_list ap;
  va_start(ap, fmt);
  vlog(level, fmt, ap);
  va_end(ap);
}

}  // namespace dftrace::detail
