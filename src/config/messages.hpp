// messages.hpp: what one load of the configuration says, capped so that a file of many mistakes
// never floods stderr nor stalls the program's first region.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <string>
#include <vector>

namespace dftrace::detail {

// Collects the messages of one load_config(). Warnings and errors are printed as they come, the
// first `cap` of them; info lines (which key of which layer won over another) wait until the
// configured log_level is known. finish() prints the info lines that fit under the cap and one
// line with the count of what was not shown. Not thread-safe: one load, one thread.
class config_messages {
 public:
  static constexpr size_t k_default_cap = 10;
  explicit config_messages(size_t cap = k_default_cap) : cap_(cap) {}
  config_messages(const config_messages &) = delete;
  config_messages &operator=(const config_messages &) = delete;

  void error(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
  void warn(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
  void info(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
  // True once the cap is reached: a caller may skip work that only makes a message better
  // (the "did you mean" of an unknown key).
  bool full() const { return shown_ >= cap_; }
  // Prints the waiting info lines when `log_level` (error=0 ... debug=3) shows info, then the
  // count of the messages held back. Call once, at the end of the load.
  void finish(int log_level);

 private:
  void say(int level, const char *fmt, va_list ap);
  size_t cap_;
  size_t shown_ = 0;
  size_t held_back_ = 0;  // warnings and errors past the cap
  size_t held_info_ = 0;  // info lines past the cap
  std::vector<std::string> info_;
};

}  // namespace dftrace::detail
