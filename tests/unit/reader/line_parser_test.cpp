// line_parser_test.cpp: the trace-line scanner: strict JSON, the keys it records, numbers.
#include <gtest/gtest.h>

#include "reader/line_parser.hpp"

using namespace dftrace::detail;

TEST(LineParser, RecordsTopLevelKeysAndArgs) {
  parsed_line pl;
  const std::string line =
      R"({"id":12,"name":"forward","cat":"compute","pid":4242,"tid":4243,"ts":1795262848109106,"dur":187,"ph":"X","args":{"hhash":7386335834152862147,"epoch":1,"s":"a\"b","nested":{"x":[1,2,{"y":null}]},"level":2,"p_idx":11}})";
  ASSERT_TRUE(parse_line(line, pl)) << pl.error;
  EXPECT_EQ(pl.name.text, "forward");
  EXPECT_EQ(pl.cat.text, "compute");
  EXPECT_EQ(pl.ph.text, "X");
  uint64_t ts = 0;
  ASSERT_TRUE(value_u64(pl.ts, &ts));
  EXPECT_EQ(ts, 1795262848109106ull);
  EXPECT_EQ(pl.nargs, 6);
  ASSERT_NE(pl.arg_value("p_idx"), nullptr);
  EXPECT_EQ(pl.arg_value("p_idx")->text, "11");
  EXPECT_EQ(pl.arg_value("s")->text, "a\\\"b");
  EXPECT_EQ(pl.arg_value("nested")->type, jtype::object);
  EXPECT_EQ(pl.arg_value("hhash")->text, "7386335834152862147");
  EXPECT_FALSE(pl.duplicate_key);
}

TEST(LineParser, QuotedNumbersAreRecognised) {
  parsed_line pl;
  ASSERT_TRUE(parse_line(R"( {"id":"3","pid":"0","ts":"1698352095942658","dur":"60.5"})", pl));
  uint64_t v = 0;
  bool quoted = false;
  ASSERT_TRUE(value_u64(pl.ts, &v, &quoted));
  EXPECT_TRUE(quoted);
  EXPECT_EQ(v, 1698352095942658ull);
  ASSERT_TRUE(value_u64(pl.dur, &v, &quoted));
  EXPECT_EQ(v, 60u);
  EXPECT_FALSE(value_is_integer(pl.pid));  // a string, not a bare integer
}

TEST(LineParser, RejectsInvalidJson) {
  parsed_line pl;
  const char *bad[] = {
      R"({"a":1,})",       R"({"a":01})",
      R"({"a":"x)",        R"({"a":1} x)",
      R"({a:1})",          R"({"a":tru})",
      R"({"a":[1,]})",     R"({"a":1.})",
      R"({"a":"\q"})",     "{\"a\":\"\x01\"}",
      "{\"a\":\"\xff\"}",  R"([1,2])",
      R"({"a":NaN})",      "",
      R"({"a":1}{"b":2})", R"({"a":-})",
  };
  for (const char *b : bad) {
    EXPECT_FALSE(parse_line(b, pl)) << b;
    EXPECT_NE(pl.error, nullptr) << b;
  }
}

TEST(LineParser, AcceptsValidJsonCorners) {
  parsed_line pl;
  const char *good[] = {
      R"({})",
      R"({"a":-0.5e+3,"b":[],"c":{},"d":"\u00e9\n","e":true,"f":false,"g":null})",
      "{\"u\":\"caf\xc3\xa9 \xf0\x9f\x98\x80\"}",
      R"(  {"a" : 1 }  )",
  };
  for (const char *g : good)
    EXPECT_TRUE(parse_line(g, pl)) << g << ": " << (pl.error ? pl.error : "");
}

TEST(LineParser, DuplicateKeysAndHashKeys) {
  parsed_line pl;
  ASSERT_TRUE(parse_line(R"({"ts":1,"ts":2})", pl));
  EXPECT_TRUE(pl.duplicate_key);
  EXPECT_TRUE(is_hash_ref_key("hhash"));
  EXPECT_TRUE(is_hash_ref_key("fhash"));
  EXPECT_TRUE(is_hash_ref_key("exec_hash"));
  EXPECT_FALSE(is_hash_ref_key("hash"));
  EXPECT_FALSE(is_hash_ref_key("epoch"));
}

TEST(LineParser, IntegerLimits) {
  parsed_line pl;
  ASSERT_TRUE(parse_line(R"({"id":18446744073709551616,"pid":-5,"tid":9223372036854775807})", pl));
  uint64_t u = 0;
  int64_t i = 0;
  EXPECT_FALSE(value_u64(pl.id, &u));  // 2^64 does not fit
  ASSERT_TRUE(value_i64(pl.pid, &i));
  EXPECT_EQ(i, -5);
  ASSERT_TRUE(value_i64(pl.tid, &i));
  EXPECT_EQ(i, INT64_MAX);
}

TEST(LineParser, CanonicalNumberGivesValidJsonOrRefuses) {
  std::string out;
  const std::pair<const char *, const char *> good[] = {
      {"0677792", "677792"}, {"+5", "5"},  {"1e5", "1e5"},         {"1E+05", "1e05"},
      {".5", "0.5"},         {"5.", "5"},  {"-007.250", "-7.250"}, {"0", "0"},
      {"000", "0"},          {"-0", "-0"}, {"12e-3", "12e-3"}};
  for (const auto &g : good) {
    ASSERT_TRUE(canonical_number(g.first, &out)) << g.first;
    EXPECT_EQ(out, g.second) << g.first;
  }
  for (const char *bad : {"0x10", "", "+", "-", ".", "1e", "1e+", "inf", "nan", " 5", "5 ", "1.2.3",
                          "--5", "+-5", "5a", "\\u0035"})
    EXPECT_FALSE(canonical_number(bad, &out)) << bad;
}
