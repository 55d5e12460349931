// path_pattern.hpp: an io.exclude pattern, matched on every open of a file (README.md, "Which
// files"). Header-only and free of the rest of the library, so that a unit test holds it to
// fnmatch.
#pragma once

#include <fnmatch.h>
#include <string.h>

#include <string>
#include <utility>

namespace dftrace::io {

// Matches as fnmatch(pattern, path, 0) does (without FNM_PATHNAME a '*' matches '/' too). The
// shapes the default exclusions use are decided without fnmatch: "*TEXT" (the path ends with
// TEXT), "TEXT*" (begins with it), "*TEXT*" (contains it), where TEXT holds no wildcard,
// bracket or backslash; any other pattern goes to fnmatch.
class path_pattern {
 public:
  explicit path_pattern(std::string p) : whole_(std::move(p)) {
    const size_t n = whole_.size();
    const bool lead = n > 1 && whole_[0] == '*', trail = n > 1 && whole_[n - 1] == '*';
    text_ = whole_.substr(lead ? 1 : 0, n - (lead ? 1 : 0) - (trail ? 1 : 0));
    if (text_.empty() || text_.find_first_of("*?[\\") != std::string::npos)
      shape_ = general;
    else
      shape_ = lead && trail ? contains : lead ? ends : trail ? begins : general;
  }
  // `path` has n bytes and ends with a NUL.
  bool matches(const char *path, size_t n) const {
    const size_t k = text_.size();
    switch (shape_) {
      case ends: return n >= k && memcmp(path + n - k, text_.data(), k) == 0;
      case begins: return n >= k && memcmp(path, text_.data(), k) == 0;
      case contains: return memmem(path, n, text_.data(), k) != nullptr;
      default: return fnmatch(whole_.c_str(), path, 0) == 0;
    }
  }

 private:
  enum { ends, begins, contains, general } shape_;
  std::string whole_, text_;
};

}  // namespace dftrace::io
