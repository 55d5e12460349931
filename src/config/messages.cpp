// messages.cpp: the capped messages of one configuration load.
#include "config/messages.hpp"

#include <cstdarg>
#include <cstdio>

#include "base/log.hpp"

namespace dftrace::detail {

void config_messages::say(int level, const char *fmt, va_list ap) {
  const log_level l = static_cast<log_level>(level);
  if (!log_enabled(l)) return;
  if (full()) {
    ++held_back_;
    return;
  }
  char text[1024];
  std::vsnprintf(text, sizeof text, fmt, ap);
  ++shown_;
  log(l, "%s", text);
}

void config_messages::error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  say(static_cast<int>(log_level::error), fmt, ap);
  va_end(ap);
}

void config_messages::warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  say(static_cast<int>(log_level::warn), fmt, ap);
  va_end(ap);
}

void config_messages::info(const char *fmt, ...) {
  // Kept for finish(), which knows the configured level; past the cap only counted.
  if (shown_ + info_.size() >= cap_) {
    ++held_info_;
    return;
  }
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  info_.emplace_back(text);
}

void config_messages::finish(int level) {
  const bool show_info = level >= static_cast<int>(log_level::info) || log_enabled(log_level::info);
  size_t more = held_back_ + (show_info ? held_info_ : 0);
  if (show_info && !info_.empty()) {
    // The load asked for info lines; the level in force stays as it was for everything else.
    log_level was = log_level::error;
    for (log_level l : {log_level::warn, log_level::info, log_level::debug})
      if (log_enabled(l)) was = l;
    set_log_level(log_level::debug);
    for (const std::string &line : info_) {
      if (full()) {
        ++more;
        continue;
      }
      ++shown_;
      log(log_level::info, "%s", line.c_str());
    }
    set_log_level(was);
  }
  if (more > 0)
    log(log_level::warn,
        "%zu more configuration message%s not shown (the first %zu are above; `dftrace config` "
        "prints the effective value of every key and where it came from)",
        more, more == 1 ? "" : "s", cap_);
  info_.clear();
  held_back_ = held_info_ = 0;
}

}  // namespace dftrace::detail
