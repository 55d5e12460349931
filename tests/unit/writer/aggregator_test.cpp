// aggregator_test.cpp: aggregation's records: counts, minima, maxima and sums per interval, and
// the fatal-signal path's take_one, after which a record starts afresh (nothing counted twice).
#include "writer/aggregator.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "dftrace/dftrace.h"

using namespace dftrace::detail;

namespace {

const std::string k_name_cat = ",\"name\":\"forward\",\"cat\":\"compute\"";

// A complete event of k_name_cat on thread 2, from start_us to end_us, with an integer "size"
// argument unless size < 0.
std::vector<uint64_t> event(uint64_t start_us, uint64_t end_us, int64_t size) {
  std::string raw;
  if (size >= 0) {
    const raw_arg h{DFTRACE_ARG_INT, 0, 4, 8};
    raw.append(reinterpret_cast<const char *>(&h), sizeof h);
    raw += "size";
    raw.append(reinterpret_cast<const char *>(&size), 8);
  }
  std::vector<uint64_t> buf(rec_size(raw.size()) / 8);
  rec *r = new (buf.data()) rec{};
  r->size = static_cast<uint32_t>(rec_size(raw.size()));
  r->type = rec_type::complete;
  r->aggregate = 1;
  r->name_cat = &k_name_cat;
  r->start = start_us * 1000;
  r->end = end_us * 1000;
  r->tid = 2;
  r->use_args_len = static_cast<uint32_t>(raw.size());
  std::memcpy(const_cast<char *>(r->use_args()), raw.data(), raw.size());
  return buf;
}

void add(aggregator &a, const line_format &f, uint64_t start_us, uint64_t end_us, int64_t size) {
  const std::vector<uint64_t> e = event(start_us, end_us, size);
  a.add(f, *reinterpret_cast<const rec *>(e.data()));
}

line_format format() {
  line_format f;
  f.pid = 7;
  f.hhash_field = "\"hhash\":9";
  f.aggregate_interval_ns = 1000000000;  // 1 s
  return f;
}

bool has(const std::string &line, const std::string &field) {
  return line.find(field) != std::string::npos;
}

}  // namespace

TEST(Aggregator, FoldsAnIntervalIntoOneRecord) {
  aggregator a;
  const line_format f = format();
  add(a, f, 10, 12, 1);
  add(a, f, 20, 25, 5);
  add(a, f, 30, 33, 3);
  add(a, f, 1000010, 1000011, 4);  // the next interval
  std::string out;
  member_stats st;
  EXPECT_EQ(a.take(f, 0, true, &out, &st), 4u);
  EXPECT_EQ(st.lines, 2u);
  const std::string first = out.substr(0, out.find('\n') + 1);
  EXPECT_EQ(first,
            "{\"name\":\"forward\",\"cat\":\"compute\",\"pid\":7,\"tid\":2,\"ts\":0,\"ph\":\"A\","
            "\"args\":{\"hhash\":9,\"dft_cnt\":3,\"dur_min\":2,\"dur_max\":5,\"dur_sum\":10,"
            "\"size_min\":1,\"size_max\":5,\"size_sum\":9}}\n");
  EXPECT_TRUE(has(out.substr(first.size()), "\"ts\":1000000,"));
  EXPECT_TRUE(a.empty());
}

// Events whose arguments are a prepared layout's values (leaf events, I/O) fold their numbers
// as raw entries do.
TEST(Aggregator, FoldsPreparedArgumentsAsRawOnes) {
  std::string keys;
  const raw_arg h{DFTRACE_ARG_INT, 0, 4, 8};
  keys.append(reinterpret_cast<const char *>(&h), sizeof h);
  keys += "size";
  keys.append(8, '\0');
  const std::unique_ptr<prepared_args> prep = prepare_args(keys);
  const line_format f = format();
  std::string outs[2];
  for (int prepared = 0; prepared < 2; ++prepared) {
    aggregator a;
    for (int64_t size : {1, 5, 3}) {
      std::vector<uint64_t> e = event(10, 12 + static_cast<uint64_t>(size), size);
      if (prepared) {  // the same record, its per-use part replaced by the layout and the value
        rec *r = reinterpret_cast<rec *>(e.data());
        const prepared_args *p = prep.get();
        r->use_args_kind = args_kind::prepared;
        r->use_args_len = 16;
        std::memcpy(const_cast<char *>(r->use_args()), &p, 8);
        std::memcpy(const_cast<char *>(r->use_args()) + 8, &size, 8);
      }
      a.add(f, *reinterpret_cast<const rec *>(e.data()));
    }
    member_stats st;
    EXPECT_EQ(a.take(f, 0, true, &outs[prepared], &st), 3u);
  }
  EXPECT_EQ(outs[1], outs[0]);
  EXPECT_TRUE(has(outs[0], "\"size_min\":1,\"size_max\":5,\"size_sum\":9}}")) << outs[0];
}

TEST(Aggregator, TheSignalPathTakesEachOpenRecordOnceWithoutCountingItTwice) {
  aggregator a;
  const line_format f = format();
  add(a, f, 10, 12, 1);
  add(a, f, 20, 25, 5);
  char buf[1024];
  uint64_t ts = 0, events = 0;
  EXPECT_EQ(a.take_one(f, buf, 40, &ts, &events), nullptr);  // does not fit: left as it is
  char *end = a.take_one(f, buf, sizeof buf, &ts, &events);
  ASSERT_NE(end, nullptr);
  const std::string line(buf, end);
  EXPECT_EQ(events, 2u);
  EXPECT_TRUE(has(line,
                  "\"dft_cnt\":2,\"dur_min\":2,\"dur_max\":5,\"dur_sum\":7,\"size_min\":1,"
                  "\"size_max\":5,\"size_sum\":6}}\n"))
      << line;
  EXPECT_EQ(a.take_one(f, buf, sizeof buf, &ts, &events), nullptr);  // written: nothing left
  // The process survived the signal: later events of the same interval start a new record,
  // without the old one's values; an argument no later event has is left out.
  add(a, f, 40, 41, -1);
  add(a, f, 50, 53, -1);
  std::string out;
  member_stats st;
  EXPECT_EQ(a.take(f, 0, true, &out, &st), 2u);
  EXPECT_TRUE(has(out, "\"dft_cnt\":2,\"dur_min\":1,\"dur_max\":3,\"dur_sum\":4}}\n")) << out;
  EXPECT_FALSE(has(out, "size"));
  add(a, f, 60, 62, 9);
  out.clear();
  EXPECT_EQ(a.take(f, 0, true, &out, &st), 1u);
  EXPECT_TRUE(has(out, "\"size_min\":9,\"size_max\":9,\"size_sum\":9}}")) << out;
  // A record the signal path wrote and no event followed is dropped by the next take.
  add(a, f, 70, 71, 1);
  ASSERT_NE(a.take_one(f, buf, sizeof buf, &ts, &events), nullptr);
  out.clear();
  EXPECT_EQ(a.take(f, 0, false, &out, &st), 0u);
  EXPECT_EQ(out, "");
  EXPECT_TRUE(a.empty());
}

namespace {

// A complete event of k_name_cat on thread 2 at 10-12 us with unsigned arguments (key, value).
std::vector<uint64_t> event_with(const std::vector<std::pair<std::string, uint64_t>> &args) {
  std::string raw;
  for (const auto &kv : args) {
    const raw_arg h{DFTRACE_ARG_UINT, 0, static_cast<uint16_t>(kv.first.size()), 8};
    raw.append(reinterpret_cast<const char *>(&h), sizeof h);
    raw += kv.first;
    raw.append(reinterpret_cast<const char *>(&kv.second), 8);
  }
  std::vector<uint64_t> buf = event(10, 12, -1);
  buf.resize(rec_size(raw.size()) / 8);
  rec *r = reinterpret_cast<rec *>(buf.data());
  r->size = static_cast<uint32_t>(rec_size(raw.size()));
  r->use_args_len = static_cast<uint32_t>(raw.size());
  std::memcpy(const_cast<char *>(r->use_args()), raw.data(), raw.size());
  return buf;
}

}  // namespace

// An I/O call's file (fhash) and a copy's two ends (from_hash, to_hash) identify its record:
// calls on other files, or with another set of ends, are other records, and each record writes
// its hashes as the calls' lines do (the analysis counts a copy's bytes read from the one and
// written to the other), never as _min, _max and _sum.
TEST(Aggregator, KeysRecordsByTheirFileHashes) {
  aggregator a;
  const line_format f = format();
  using args = std::vector<std::pair<std::string, uint64_t>>;
  const uint64_t big = 18000000000000000000ull;  // above INT64_MAX: written unsigned
  const args both{{"fhash", 11}, {"from_hash", 11}, {"to_hash", big}, {"ret", 100}};
  const args other_target{{"fhash", 11}, {"from_hash", 11}, {"to_hash", 33}, {"ret", 7}};
  const args source_only{{"fhash", 11}, {"from_hash", 11}, {"ret", 5}};
  const args target_only{{"fhash", 11}, {"to_hash", 11}, {"ret", 3}};
  for (const args *e : {&both, &other_target, &both, &source_only, &target_only}) {
    const std::vector<uint64_t> buf = event_with(*e);
    a.add(f, *reinterpret_cast<const rec *>(buf.data()));
  }
  std::string out;
  member_stats st;
  EXPECT_EQ(a.take(f, 0, true, &out, &st), 5u);
  EXPECT_EQ(st.lines, 4u) << out;
  EXPECT_TRUE(has(out,
                  "\"hhash\":9,\"fhash\":11,\"from_hash\":11,\"to_hash\":18000000000000000000,"
                  "\"dft_cnt\":2,\"dur_min\":2,\"dur_max\":2,\"dur_sum\":4,\"ret_min\":100,"
                  "\"ret_max\":100,\"ret_sum\":200}}\n"))
      << out;
  EXPECT_TRUE(has(out, "\"fhash\":11,\"from_hash\":11,\"to_hash\":33,\"dft_cnt\":1,")) << out;
  EXPECT_TRUE(has(out, "\"fhash\":11,\"from_hash\":11,\"dft_cnt\":1,")) << out;
  EXPECT_TRUE(has(out, "\"fhash\":11,\"to_hash\":11,\"dft_cnt\":1,")) << out;
  EXPECT_FALSE(has(out, "hash_min")) << out;
  EXPECT_FALSE(has(out, "hash_sum")) << out;
}

// Each argument is sorted once, whatever its place: a file hash given twice keys the record by
// its last value (signed as given), a double under a hash's key is folded like any other
// number, a key given twice is folded twice, a reserved key and a string are left out.
TEST(Aggregator, SortsEachArgumentOnce) {
  struct typed {
    uint8_t type;
    std::string key;
    std::string value;
  };
  auto i64 = [](int64_t v) { return std::string(reinterpret_cast<const char *>(&v), 8); };
  auto f64 = [](double v) { return std::string(reinterpret_cast<const char *>(&v), 8); };
  const std::vector<typed> args{
      {DFTRACE_ARG_UINT, "fhash", i64(5)},      {DFTRACE_ARG_INT, "size", i64(10)},
      {DFTRACE_ARG_UINT, "level", i64(3)},      {DFTRACE_ARG_DOUBLE, "fhash", f64(2.5)},
      {DFTRACE_ARG_STRING, "name", "abcdefgh"}, {DFTRACE_ARG_INT, "size", i64(4)},
      {DFTRACE_ARG_INT, "fhash", i64(-6)}};
  std::string raw;
  for (const typed &a : args) {
    const raw_arg h{a.type, 0, static_cast<uint16_t>(a.key.size()),
                    static_cast<uint32_t>(a.value.size())};
    raw.append(reinterpret_cast<const char *>(&h), sizeof h);
    raw += a.key + a.value;
  }
  std::vector<uint64_t> buf = event(10, 12, -1);
  buf.resize(rec_size(raw.size()) / 8);
  rec *r = reinterpret_cast<rec *>(buf.data());
  r->size = static_cast<uint32_t>(rec_size(raw.size()));
  r->use_args_len = static_cast<uint32_t>(raw.size());
  std::memcpy(const_cast<char *>(r->use_args()), raw.data(), raw.size());
  aggregator a;
  const line_format f = format();
  a.add(f, *r);
  a.add(f, *r);
  std::string out;
  member_stats st;
  EXPECT_EQ(a.take(f, 0, true, &out, &st), 2u);
  EXPECT_TRUE(has(out,
                  "\"hhash\":9,\"fhash\":-6,\"dft_cnt\":2,\"dur_min\":2,\"dur_max\":2,"
                  "\"dur_sum\":4,\"size_min\":4,\"size_max\":10,\"size_sum\":28,"
                  "\"fhash_min\":2.5,\"fhash_max\":2.5,\"fhash_sum\":5}}\n"))
      << out;
  EXPECT_FALSE(has(out, "level")) << out;
  EXPECT_FALSE(has(out, "name_")) << out;
}

// A key that JSON escapes is one argument of its record, however many events carry it.
TEST(Aggregator, FoldsAnEscapedKeyIntoOneArgument) {
  aggregator a;
  const line_format f = format();
  for (int i = 0; i < 3; ++i) {
    const std::vector<uint64_t> buf = event_with({{"a\"b", 5}});
    a.add(f, *reinterpret_cast<const rec *>(buf.data()));
  }
  std::string out;
  member_stats st;
  EXPECT_EQ(a.take(f, 0, true, &out, &st), 3u);
  EXPECT_TRUE(has(out, "\"dur_sum\":6,\"a\\\"b_min\":5,\"a\\\"b_max\":5,\"a\\\"b_sum\":15}}\n"))
      << out;
}
