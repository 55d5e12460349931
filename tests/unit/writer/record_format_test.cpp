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

namespace {

// A per-use argument as a test writes it: key, type, value bits.
struct use_arg {
  std::string key;
  uint8_t type;
  uint64_t bits;
};

std::string raw_of(const std::vector<use_arg> &args) {
  std::string raw;
  for (const use_arg &a : args) {
    const raw_arg h{a.type, 0, static_cast<uint16_t>(a.key.size()), 8};
    raw.append(reinterpret_cast<const char *>(&h), sizeof h);
    raw += a.key;
    raw.append(reinterpret_cast<const char *>(&a.bits), 8);
  }
  return raw;
}

// The line of a complete event with the node fragment `node_args` and per-use `args`, stored
// raw, or as a prepared layout's values (`prep`, made from the same keys).
std::string line_with(const std::string &node_args, const std::vector<use_arg> &args,
                      const prepared_args *prep, format_cache *cache = nullptr, int64_t tid = 2,
                      int64_t pid = 1) {
  std::string use;
  args_kind kind = args_kind::raw;
  if (prep) {
    kind = args_kind::prepared;
    use.append(reinterpret_cast<const char *>(&prep), sizeof prep);
    for (const use_arg &a : args) use.append(reinterpret_cast<const char *>(&a.bits), 8);
  } else {
    use = raw_of(args);
  }
  std::vector<uint64_t> buf(rec_size(node_args.size() + use.size()) / 8);
  rec *r = new (buf.data()) rec{};
  static const std::string name_cat = ",\"name\":\"pread\",\"cat\":\"POSIX\"";
  r->size = static_cast<uint32_t>(rec_size(node_args.size() + use.size()));
  r->type = rec_type::complete;
  r->use_args_kind = kind;
  r->name_cat = &name_cat;
  r->id = 9;
  r->start = 1000;
  r->end = 3000;
  r->parent_id = 4;
  r->tid = tid;
  r->level = 2;
  r->node_args_len = static_cast<uint32_t>(node_args.size());
  r->use_args_len = static_cast<uint32_t>(use.size());
  std::memcpy(const_cast<char *>(r->node_args()), node_args.data(), node_args.size());
  std::memcpy(const_cast<char *>(r->use_args()), use.data(), use.size());
  line_format f;
  f.pid = pid;
  f.hhash_field = "\"hhash\":7";
  f.cache = cache;
  std::string out(line_bound(*r), '\0');
  uint64_t ts = 0;
  out.resize(static_cast<size_t>(format_record(f, *r, out.data(), &ts) - out.data()));
  return out;
}

uint64_t bits_of(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}

}  // namespace

// A prepared layout (dftrace_arg_layout: the keys escaped once, each event only its values)
// writes exactly the line its raw entries write: types, a key given twice (the later wins), a
// reserved key (renamed), a key that needs escaping, node arguments replaced by a per-use key
// of the same name and kept otherwise.
TEST(PreparedArgs, WriteTheSameLineAsTheirRawEntries) {
  const std::vector<use_arg> args = {
      {"fhash", DFTRACE_ARG_UINT, 18446744073709551557ull},
      {"offset", DFTRACE_ARG_INT, static_cast<uint64_t>(int64_t{-42})},
      {"ratio", DFTRACE_ARG_DOUBLE, bits_of(0.25)},
      {"level", DFTRACE_ARG_INT, 3},
      {"q\"uote\\d", DFTRACE_ARG_INT, 1},
      {"offset", DFTRACE_ARG_INT, 4096},
      {"a_key_longer_than_sixteen_bytes", DFTRACE_ARG_UINT, 0}};
  const std::unique_ptr<prepared_args> prep = prepare_args(raw_of(args));
  ASSERT_EQ(prep->slots.size(), args.size());
  for (const std::string &node_args : {std::string(), std::string("\"epoch\":1,\"step\":2"),
                                       std::string("\"epoch\":1,\"offset\":7,\"step\":\"s\""),
                                       std::string("\"ratio\":9,\"fhash\":1")}) {
    const std::string raw_line = line_with(node_args, args, nullptr);
    EXPECT_EQ(line_with(node_args, args, prep.get()), raw_line) << node_args;
    EXPECT_EQ(raw_line.find("\"offset\":-42"), std::string::npos) << raw_line;
    EXPECT_NE(raw_line.find("\"user_level\":3"), std::string::npos) << raw_line;
    EXPECT_NE(raw_line.find("\"q\\\"uote\\\\d\":1"), std::string::npos) << raw_line;
  }
  EXPECT_NE(line_with("\"epoch\":1,\"offset\":7", args, prep.get()).find("\"epoch\":1,\"fhash\""),
            std::string::npos);
}

// The writer's cache (the pid and tid prefix, the digits of large numbers) changes no line: a
// sequence of events of changing threads, processes and hashes (some sharing a cache slot)
// formats the same with and without it.
TEST(FormatCache, ChangesNoLine) {
  std::vector<use_arg> args = {{"fhash", DFTRACE_ARG_UINT, 0}, {"count", DFTRACE_ARG_INT, 4096}};
  const std::unique_ptr<prepared_args> prep = prepare_args(raw_of(args));
  format_cache cache;
  uint64_t x = 0x9e3779b97f4a7c15ull;
  std::vector<uint64_t> hashes;
  for (int i = 0; i < 200; ++i) {  // more than the cache's 64 slots: collisions and reuse
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    hashes.push_back(x);
  }
  hashes.push_back(10000000000ull);  // the smallest number cached
  hashes.push_back(9999999999ull);   // and the largest not
  for (int i = 0; i < 2000; ++i) {
    args[0].bits = hashes[(static_cast<size_t>(i) * 7919u) % hashes.size()];
    const int64_t tid = 100 + (i / 3) % 5, pid = i < 1000 ? 7 : 8;
    ASSERT_EQ(line_with("", args, prep.get(), &cache, tid, pid),
              line_with("", args, prep.get(), nullptr, tid, pid))
        << i;
  }
}

namespace {

// A prepared leaf's line with every formatting choice given (the template's key and what it
// bakes in: name, layout, pid, tid, the hhash text, metadata; the precision it does not).
struct leaf_case {
  const std::string *name_cat;
  const prepared_args *prep;
  std::vector<uint64_t> values;
  int64_t pid, tid;
  bool metadata, ns;
  std::string hhash;
  uint64_t id, start, end;
};

std::string leaf_line(const leaf_case &c, format_cache *cache) {
  std::string use(reinterpret_cast<const char *>(&c.prep), sizeof c.prep);
  for (uint64_t v : c.values) use.append(reinterpret_cast<const char *>(&v), 8);
  std::vector<uint64_t> buf(rec_size(use.size()) / 8);
  rec *r = new (buf.data()) rec{};
  r->size = static_cast<uint32_t>(rec_size(use.size()));
  r->type = rec_type::complete;
  r->use_args_kind = args_kind::prepared;
  r->name_cat = c.name_cat;
  r->id = c.id;
  r->start = c.start;
  r->end = c.end;
  r->parent_id = static_cast<int64_t>(c.id % 3) - 1;
  r->tid = c.tid;
  r->level = static_cast<uint32_t>(c.id % 4);
  r->use_args_len = static_cast<uint32_t>(use.size());
  std::memcpy(const_cast<char *>(r->use_args()), use.data(), use.size());
  line_format f;
  f.pid = c.pid;
  f.metadata = c.metadata;
  f.ns_precision = c.ns;
  f.epoch_offset_ns = 1795262848000000000ull;
  f.hhash_field = c.hhash;
  f.cache = cache;
  std::string out(line_bound(*r), '\0');
  uint64_t ts = 0;
  out.resize(static_cast<size_t>(format_record(f, *r, out.data(), &ts) - out.data()));
  return out;
}

}  // namespace

// A prepared leaf (every I/O event) is written from a line template the cache keeps per node,
// layout, process and thread: its lines equal the general formatter's for layouts that differ
// (one key, many, a repeated key, a reserved key, errno, a double: not templated), names,
// threads and processes sharing cache slots, values of every width and sign, at microsecond
// and nanosecond precision, with and without metadata.
TEST(FormatCache, LineTemplatesChangeNoLine) {
  const std::string names[] = {
      ",\"name\":\"pread\",\"cat\":\"POSIX\"", ",\"name\":\"fread\",\"cat\":\"STDIO\"",
      ",\"name\":\"a_name_long_enough_for_a_head_of_over_64_bytes\",\"cat\":\"POSIX\""};
  const std::vector<std::vector<use_arg>> layouts = {
      {{"fhash", DFTRACE_ARG_UINT, 0},
       {"fd", DFTRACE_ARG_INT, 0},
       {"count", DFTRACE_ARG_INT, 0},
       {"offset", DFTRACE_ARG_INT, 0},
       {"ret", DFTRACE_ARG_INT, 0}},
      {{"fhash", DFTRACE_ARG_UINT, 0}, {"ret", DFTRACE_ARG_INT, 0}, {"errno", DFTRACE_ARG_INT, 0}},
      {{"ret", DFTRACE_ARG_INT, 0}},
      {{"offset", DFTRACE_ARG_INT, 0},
       {"level", DFTRACE_ARG_INT, 0},
       {"offset", DFTRACE_ARG_INT, 0}},
      {{"fhash", DFTRACE_ARG_UINT, 0}, {"ratio", DFTRACE_ARG_DOUBLE, 0}},
      {{"k1", DFTRACE_ARG_INT, 0},
       {"k2", DFTRACE_ARG_INT, 0},
       {"k3", DFTRACE_ARG_INT, 0},
       {"k4", DFTRACE_ARG_INT, 0},
       {"k5", DFTRACE_ARG_INT, 0},
       {"k6", DFTRACE_ARG_INT, 0},
       {"k7", DFTRACE_ARG_INT, 0},
       {"k8", DFTRACE_ARG_INT, 0},
       {"k9", DFTRACE_ARG_INT, 0},
       {"k10", DFTRACE_ARG_INT, 0},
       {"k11", DFTRACE_ARG_INT, 0},
       {"k12", DFTRACE_ARG_INT, 0},
       {"k13", DFTRACE_ARG_INT, 0}}};
  std::vector<std::unique_ptr<prepared_args>> preps;
  for (const auto &l : layouts) preps.push_back(prepare_args(raw_of(l)));
  const uint64_t values[] = {0,
                             7,
                             9999,
                             10000,
                             99999999,
                             100000000,
                             9999999999ull,
                             10000000000ull,
                             18446744073709551615ull,
                             static_cast<uint64_t>(int64_t{-1}),
                             static_cast<uint64_t>(int64_t{-4096}),
                             bits_of(0.5)};
  format_cache cache;
  uint64_t x = 0x9e3779b97f4a7c15ull;
  int templated = 0;
  for (int i = 0; i < 4000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    leaf_case c;
    c.name_cat = &names[x % 3];
    const size_t l = (x >> 8) % preps.size();
    c.prep = preps[l].get();
    for (size_t k = 0; k < layouts[l].size(); ++k)
      c.values.push_back(values[(x >> (12 + 3 * k)) % (sizeof values / sizeof values[0])]);
    c.pid = i < 2000 ? 7 : 8;
    c.tid = 100 + static_cast<int64_t>((x >> 40) % 41);  // sets shared, ways evicted
    c.metadata = ((x >> 50) % 5) != 0;
    c.ns = ((x >> 53) % 4) == 0;
    c.hhash = c.metadata ? "\"hhash\":7386335834152862147" : "";
    c.id = (x >> 20) % 3 ? static_cast<uint64_t>(i) : x;
    c.start = 1000000 + static_cast<uint64_t>(i) * 1733;
    c.end = c.start + (x >> 44) % 5000;
    const std::string with = leaf_line(c, &cache);
    ASSERT_EQ(with, leaf_line(c, nullptr)) << i;
    templated += l != 4 && l != 5;
  }
  EXPECT_GT(templated, 2000);
  bool any = false;  // the cache holds templates (the path was taken)
  for (const auto &set : cache.templates)
    for (const auto &t : set) any |= t.name_cat != nullptr && t.templated;
  EXPECT_TRUE(any);
}

// A line that a template can not hold (here a double among the arguments) is remembered as
// such in the cache under its key: it is formatted the general way from then on, without a
// template being tried again (and another evicted) on every line.
TEST(FormatCache, ALineNoTemplateHoldsIsRememberedSo) {
  const std::string name = ",\"name\":\"step\",\"cat\":\"POSIX\"";
  const std::unique_ptr<prepared_args> prep =
      prepare_args(raw_of({{"fhash", DFTRACE_ARG_UINT, 0}, {"ratio", DFTRACE_ARG_DOUBLE, 0}}));
  format_cache cache;
  for (uint64_t i = 0; i < 3; ++i) {
    leaf_case c;
    c.name_cat = &name;
    c.prep = prep.get();
    c.values = {12345678901ull + i, bits_of(0.5)};
    c.pid = 7;
    c.tid = 100;
    c.metadata = true;
    c.ns = false;
    c.hhash = "\"hhash\":1";
    c.id = i;
    c.start = 1000 + i;
    c.end = 2000 + i;
    ASSERT_EQ(leaf_line(c, &cache), leaf_line(c, nullptr)) << i;
  }
  int entries = 0;
  for (const auto &set : cache.templates)
    for (const auto &t : set)
      if (t.name_cat == &name) {
        ++entries;
        EXPECT_FALSE(t.templated);
        EXPECT_EQ(t.layout, prep.get());
      }
  EXPECT_EQ(entries, 1);
}
