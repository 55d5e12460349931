// config_table.hpp: the key table (private to src/config): one entry a key, how to set it from
// text and how to print it, and the small text helpers of the values' parsers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace dftrace::detail::keys {

// One configuration key: how to set it from text, how to print it.
struct entry {
  key_info info;
  bool dftracer_inverted;  // DFTRACER_DISABLE_* mean the opposite of the key
  std::function<bool(config &, const std::string &, std::string &why)> set;
  std::function<std::string(const config &)> get;
  // The unit of a bare number under the DFTracer name (DFTRACER_TRACE_INTERVAL_MS: "ms").
  const char *dftracer_unit = nullptr;
};

// Every key, in the order `dftrace config` prints them. Never destroyed: an initialisation
// during the process's exit would otherwise read it after its destructor (the runtime refuses
// to initialise then, and this keeps any later reader safe too).
const std::vector<entry> &table();
const entry *find_entry(const std::string &key);  // nullptr: no such key

std::string lower(std::string s);
std::string trim(const std::string &s);
// A count from 0 to 10^12: digits only, blanks around them allowed.
bool parse_count(const std::string &text, uint64_t *out);

}  // namespace dftrace::detail::keys
