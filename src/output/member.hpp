// member.hpp: one gzip member to be: its lines of text, what its DT field says, and its
// compressed form; and the list of closed members a compressor_pool works through.
#pragma once

#include <cstddef>
#include <vector>

#include "base/char_buffer.hpp"
#include "base/gzip_member.hpp"

namespace dftrace::detail {

struct text_member {
  char_buffer text;
  member_stats stats;
  bool has_ts = false;
  std::vector<char> out;
  bool ok = false;  // compressed
};

// Members closed and waiting to be compressed, in file order.
class member_list {
 public:
  virtual size_t closed() const = 0;
  virtual text_member &at(size_t i) = 0;

 protected:
  ~member_list() = default;
};

}  // namespace dftrace::detail
