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
    // The byte a search for TEXT looks for first: not a separator, which every path is full of.
    const size_t a = text_.find_first_not_of("/.");
    anchor_ = a == std::string::npos ? 0 : a;
  }
  // `path` has n bytes and ends with a NUL.
  bool matches(const char *path, size_t n) const {
    const size_t k = text_.size();
    switch (shape_) {
      case ends: return n >= k && memcmp(path + n - k, text_.data(), k) == 0;
      case begins: return n >= k && memcmp(path, text_.data(), k) == 0;
      case contains: return found(path, n);
      default: return fnmatch(whole_.c_str(), path, 0) == 0;
    }
  }

 private:
  // Whether TEXT is in path: its anchor byte found with memchr, then the whole compared (a
  // general search, memmem, prepares more than a short path repays).
  bool found(const char *path, size_t n) const {
    const size_t k = text_.size();
    if (n < k) return false;
    const char *p = path + anchor_, *const last = path + (n - k) + anchor_;
    while (p <= last) {
      p = static_cast<const char *>(memchr(p, text_[anchor_], static_cast<size_t>(last - p) + 1));
      if (!p) return false;
      if (memcmp(p - anchor_, text_.data(), k) == 0) return true;
      ++p;
    }
    return false;
  }

  enum { ends, begins, contains, general } shape_;
  std::string whole_, text_;
  size_t anchor_ = 0;
};

}  // namespace dftrace::io
