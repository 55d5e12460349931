// group_id.cpp: the text of a comm_group id (group_id.hpp).
#include "group_id.hpp"

#include <array>
#include <cstdint>
#include <cstdio>

#include "sha1.hpp"

namespace dftrace::mpi {

std::string short_id(std::string text) {
  if (text.size() <= 64) return text;
  const std::array<uint8_t, 20> d = sha1(text);
  char hex[18] = "h";
  for (int i = 0; i < 8; ++i) std::snprintf(hex + 1 + 2 * i, 3, "%02x", d[i]);
  return hex;
}

std::string ranks_id(const int *ranks, size_t n) {
  std::string text;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j + 1 < n && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += std::to_string(ranks[i]);
    if (j > i) text += '-' + std::to_string(ranks[j]);
    i = j + 1;
  }
  return short_id(std::move(text));
}

}  // namespace dftrace::mpi
