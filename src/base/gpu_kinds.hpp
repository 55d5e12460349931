// gpu_kinds.hpp: the gpu.kinds vocabulary, defined once: the configuration checks and
// normalises the key with it, and libdftrace_cupti (which links none of the core's code)
// turns the normalised list into the activity it records. Header-only for that reason.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace dftrace::detail {

// One bit per kind; src/plugins/gpu/README.md says what each records.
enum gpu_kind_bits : unsigned {
  k_gpu_kernel = 1u << 0,
  k_gpu_memcpy = 1u << 1,
  k_gpu_memset = 1u << 2,
  k_gpu_sync = 1u << 3,
  k_gpu_runtime = 1u << 4,
  k_gpu_driver = 1u << 5,
  k_gpu_api_all = 1u << 6,
  k_gpu_all = (1u << 7) - 1,
};

struct gpu_kind_name {
  std::string_view name;
  unsigned bits;
};
inline constexpr gpu_kind_name k_gpu_kind_names[] = {
    {"kernel", k_gpu_kernel},   {"memcpy", k_gpu_memcpy},   {"memset", k_gpu_memset},
    {"sync", k_gpu_sync},       {"runtime", k_gpu_runtime}, {"driver", k_gpu_driver},
    {"api_all", k_gpu_api_all}, {"all", k_gpu_all}};

// Parses "kernel,memcpy", "[kernel, memcpy]" or "all" (any case; blanks and empty items
// ignored). On success: the kinds' bits to *mask and the lower-case comma-separated list to
// *normalised (either may be null). On an unknown word: false, and *error says which.
inline bool parse_gpu_kinds(std::string_view text, unsigned *mask, std::string *normalised,
                            std::string *error) {
  unsigned bits = 0;
  std::string norm;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string item;  // brackets dropped, lower case, blanks trimmed
    for (size_t i = pos; i < end; ++i) {
      const unsigned char ch = static_cast<unsigned char>(text[i]);
      if (ch != '[' && ch != ']') item += static_cast<char>(std::tolower(ch));
    }
    pos = end + 1;
    const size_t first = item.find_first_not_of(" \t\r\n");
    item = first == std::string::npos
               ? std::string()
               : item.substr(first, item.find_last_not_of(" \t\r\n") - first + 1);
    if (item.empty()) continue;
    unsigned found = 0;
    for (const gpu_kind_name &k : k_gpu_kind_names)
      if (item == k.name) found = k.bits;
    if (!found) {
      if (error) {
        *error = "has unknown kind '" + item + "' (known: ";
        for (const gpu_kind_name &k : k_gpu_kind_names)
          *error += std::string(k.name) + (k.bits == k_gpu_all ? ")" : ", ");
      }
      return false;
    }
    bits |= found;
    norm += (norm.empty() ? "" : ",") + item;
  }
  if (mask) *mask = bits;
  if (normalised) *normalised = norm;
  return true;
}

}  // namespace dftrace::detail
