// char_buffer.hpp: a growable byte buffer that does not zero what it grows by (std::string's
// resize does). Per-use arguments are appended to one on the event path, and the writer formats
// members' text straight into one.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>

namespace dftrace::detail {

// Not thread-safe; moves, does not copy.
class char_buffer {
 public:
  size_t size() const { return n_; }
  const char *data() const { return p_.get(); }
  bool empty() const { return n_ == 0; }
  void clear() { n_ = 0; }
  void reserve(size_t k) {
    if (k > cap_) grow(k);
  }
  void resize(size_t k) {  // shrinks, or grows with unspecified bytes
    if (k > cap_) grow(k);
    n_ = k;
  }
  // Room for k more bytes at the end, now counted in size().
  char *extend(size_t k) {
    if (__builtin_expect(n_ + k > cap_, 0)) grow(n_ + k);
    char *q = p_.get() + n_;
    n_ += k;
    return q;
  }
  // Room for up to k more bytes at the end, not counted yet: set_end() says where they end.
  char *room(size_t k) {
    if (n_ + k > cap_) grow(n_ + k);
    return p_.get() + n_;
  }
  void set_end(const char *end) { n_ = static_cast<size_t>(end - p_.get()); }
  void append(const char *s, size_t k) { std::memcpy(extend(k), s, k); }

 private:
  void grow(size_t need) {
    const size_t c = std::max(need, cap_ ? 2 * cap_ : size_t{256});
    std::unique_ptr<char[]> q(new char[c]);
    if (n_) std::memcpy(q.get(), p_.get(), n_);
    p_ = std::move(q);
    cap_ = c;
  }
  std::unique_ptr<char[]> p_;
  size_t n_ = 0, cap_ = 0;
};

}  // namespace dftrace::detail
