// record_format_test.cpp: the reserved argument keys (base/format.hpp) are exactly the keys the
// line formatter writes itself, and a user's argument of a reserved name is renamed, never doubled.
#include "writer/record.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "base/format.hpp"
#include "dftrace/dftrace.h"

using namespace dftrace::detail;

namespace {

// The line of one complete event with per-use integer arguments `use_args` (stored raw, as the
// application thread stores them) and no node arguments.
std::string line_of(const std::vector<std::pair<std::string, int64_t>> &use_args, bool metadata) {
  std::string raw;
  for (const auto &[key, value] : use_args) {
    const raw_arg h{DFTRACE_ARG_INT, 0, static_cast<uint16_t>(key.size()), 8};
    raw.append(reinterpret_cast<const char *>(&h), sizeof h);
    raw += key;
    raw.append(reinterpret_cast<const char *>(&value), 8);
  }
  std::vector<uint64_t> buf(rec_size(raw.size()) / 8);
  rec *r = new (buf.data()) rec{};
  static const std::string name_cat = ",\"name\":\"forward\",\"cat\":\"compute\"";
  r->size = static_cast<uint32_t>(rec_size(raw.size()));
  r->type = rec_type::complete;
  r->name_cat = &name_cat;
  r->id = 1;
  r->start = 1000;
  r->end = 3000;
  r->parent_id = -1;
  r->tid = 2;
  r->level = 1;
  r->use_args_len = static_cast<uint32_t>(raw.size());
  std::memcpy(const_cast<char *>(r->use_args()), raw.data(), raw.size());
  line_format f;
  f.pid = 1;
  f.metadata = metadata;
  f.hhash_field = metadata ? "\"hhash\":7" : "";
  std::string out(line_bound(*r), '\0');
  uint64_t ts = 0;
  out.resize(static_cast<size_t>(format_record(f, *r, out.data(), &ts) - out.data()));
  return out;
}

// The keys of the line's "args" object, in order (keys without escapes, integer values).
std::vector<std::string> arg_keys(const std::string &line) {
  std::vector<std::string> keys;
  size_t p = line.find("\"args\":{");
  if (p == std::string::npos) return keys;
  p += 8;
  while (p < line.size() && line[p] == '"') {
    const size_t end = line.find('"', p + 1);
    keys.push_back(line.substr(p + 1, end - p - 1));
    p = line.find_first_of(",}", end);
    if (p == std::string::npos || line[p] == '}') break;
    ++p;
  }
  return keys;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

// (count = 0: iter events' `count` is not reserved, see base/format.hpp.)
TEST(ReservedArgKeys, AreTheKeysTheFormatterWritesItself) {
  std::vector<std::string> reserved(std::begin(k_reserved_arg_keys), std::end(k_reserved_arg_keys));
  EXPECT_EQ(sorted(arg_keys(line_of({}, true))), sorted(reserved));
  EXPECT_TRUE(arg_keys(line_of({}, false)).empty());
}

TEST(ReservedArgKeys, UserKeysOfThoseNamesAreRenamed) {
  for (std::string_view key : k_reserved_arg_keys) {
    const std::string k(key), renamed = std::string(k_reserved_arg_prefix) + k;
    const auto keys = arg_keys(line_of({{k, 5}, {"epoch", 3}}, true));
    EXPECT_EQ(std::count(keys.begin(), keys.end(), k), 1) << line_of({{k, 5}}, true);
    EXPECT_EQ(std::count(keys.begin(), keys.end(), renamed), 1) << line_of({{k, 5}}, true);
    EXPECT_EQ(std::count(keys.begin(), keys.end(), "epoch"), 1);
    EXPECT_TRUE(is_reserved_arg_key(k));
  }
  EXPECT_FALSE(is_reserved_arg_key("epoch"));
  EXPECT_FALSE(is_reserved_arg_key("user_level"));
  EXPECT_FALSE(is_reserved_arg_key("levels"));
}
