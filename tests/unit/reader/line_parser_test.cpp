// line_parser_test.cpp: the trace-line scanner: strict JSON, the keys it records, numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "reader/line_parser.hpp"
#include "trace_support.hpp"

using namespace dftrace::detail;

namespace {

// parse_line (straight path for common lines, with each structural scan this CPU has) and the
// whole grammar agree on line: same verdict, same values. Returns whether the line is valid.
bool agrees(const std::string &line) {
  parsed_line fast, whole;
  const bool ok = parse_line(line, fast);
  EXPECT_EQ(ok, parse_line_general(line, whole)) << line;
  if (ok) {
    EXPECT_TRUE(same_parse(fast, whole)) << line;
  }
  for (const line_scan s :
       {line_scan::portable, line_scan::sse2, line_scan::avx2, line_scan::avx512}) {
    if (!line_scan_supported(s)) continue;
    // a copy of its own: the vector loads of each scan see only the line
    const std::string copy = line;
    EXPECT_EQ(parse_line_with(copy, fast, s), ok) << int(s) << ": " << line;
    if (ok) {
      parse_line_general(copy, whole);
      EXPECT_TRUE(same_parse(fast, whole)) << int(s) << ": " << line;
    }
  }
  return ok;
}

}  // namespace

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
  // The longest numbers: 19 digits always fit, 20 only up to 2^64 - 1.
  for (const char *fits :
       {"18446744073709551615", "9999999999999999999", "00000000000000000000012"}) {
    ASSERT_TRUE(value_u64(jvalue{jtype::number, fits}, &u)) << fits;
    EXPECT_EQ(std::to_string(u),
              std::string(fits).substr(std::string(fits).find_first_not_of('0')));
  }
  for (const char *too_big :
       {"18446744073709551616", "99999999999999999999", "123456789012345678901"})
    EXPECT_FALSE(value_u64(jvalue{jtype::number, too_big}, &u)) << too_big;
  EXPECT_FALSE(value_i64(jvalue{jtype::number, "9223372036854775808"}, &i));
  ASSERT_TRUE(value_i64(jvalue{jtype::number, "-9223372036854775808"}, &i));
  EXPECT_EQ(i, INT64_MIN);
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

TEST(LineParser, StraightPathAgreesWithTheWholeGrammar) {
  std::vector<std::string> lines = {
      R"({"id":9,"name":"fetch","cat":"dataloader","pid":1000,"tid":1000,"ts":1795262848000021,"dur":9,"ph":"X","args":{"hhash":10436887516153130459,"epoch":0,"level":2,"p_idx":8}})",
      R"({"id":1,"name":"HH","cat":"dftracer","pid":1000,"tid":1000,"ph":"M","args":{"name":"node6","value":10436887516153130459}})",
      R"({"id":2,"name":"openat","cat":"POSIX","type":3,"pid":33,"tid":33,"ts":17,"dur":21,"ph":1,"args":{"hhash":"83f8066a9f45661e","fhash":"736947895804f538","flags":0,"ok":true,"x":null,"f":-1.5e-3}})",
      R"({"name":"i","ph":"i","s":"t","ts":"12.250","args":{}})",
      R"({"id":3,"args":{"nested":{"a":[1,2]}},"name":"n"})",
      R"({"id":4,"name":"caf\u00e9","args":{"k\"q":1}})",
  };
  std::string many = R"({"name":"many","args":{)";
  for (int k = 0; k < parsed_line::k_max_args + 2; ++k)
    many += (k ? ",\"a" : "\"a") + std::to_string(k) + "\":" + std::to_string(k);
  lines.push_back(many + "}}");
  for (const auto &l : lines) EXPECT_TRUE(agrees(l)) << l;
  // Every line broken at every byte: removed, replaced, or with a blank or quote inserted.
  const char subst[] = {'"',  ',', ':', '}', '{', '[',    ' ',
                        '\\', '1', '-', '.', 'x', '\x01', '\xc3'};
  for (const auto &l : lines) {
    for (size_t i = 0; i < l.size(); ++i) {
      agrees(l.substr(0, i) + l.substr(i + 1));
      agrees(l.substr(0, i) + " " + l.substr(i));
      agrees(l.substr(0, i) + "\"" + l.substr(i));
      for (char c : subst) agrees(l.substr(0, i) + c + l.substr(i + 1));
    }
    for (size_t n = 0; n <= l.size(); ++n) agrees(l.substr(0, n));
  }
  // The lines that dftrace and DFTracer write take the straight path with every scan.
  for (const auto &l : lines) {
    if (l.find('\\') != std::string::npos || l.find("nested") != std::string::npos ||
        l.find("many") != std::string::npos)
      continue;
    for (const line_scan s :
         {line_scan::portable, line_scan::sse2, line_scan::avx2, line_scan::avx512}) {
      parsed_line pl;
      if (line_scan_supported(s)) {
        EXPECT_TRUE(parse_line_with(l, pl, s, false)) << int(s) << l;
      }
    }
  }
#if defined(__x86_64__)
  // x86-64 always has a vector scan (SSE2), unless DFTRACE_LINE_SCAN asked for the portable one
  if (!std::getenv("DFTRACE_LINE_SCAN")) {
    EXPECT_NE(line_scan_in_use(), line_scan::portable);
  }
#endif
  // The samples of DFTracer 1.x and 2.x, line by line.
  for (const char *f : {"/tests/data/dftracer/cm1-DEFAULT-3537780-preload.pfw.gz",
                        "/tests/data/dftracer-v2/v2-sample.pfw"})
    for (const auto &l : dftrace::test::read_lines(std::string(DFTRACE_SOURCE_DIR) + f)) agrees(l);
}

TEST(LineParser, DftracerTracesTakeTheStraightPath) {
  // DFTracer 1.x's and 2.0.2's key order and the 2.x sample: every object line is read without the
  // whole grammar, with the scan this CPU uses (the reader's rate on them depends on it).
  size_t objects = 0;
  for (int rank = 0; rank < 8; ++rank) {
    const std::string f = std::string(DFTRACE_SOURCE_DIR) +
                          "/tests/data/dftracer/cm1-DEFAULT-353778" + std::to_string(rank) +
                          "-preload.pfw.gz";
    for (const auto &l : dftrace::test::read_lines(f)) {
      if (l.empty() || l[0] != '{') continue;
      parsed_line pl;
      EXPECT_TRUE(parse_line_with(l, pl, line_scan_in_use(), false)) << f << ": " << l;
      ++objects;
    }
  }
  EXPECT_GT(objects, 50000u);
  // DFTracer 2.0.2's traces (its key order, its hash definitions with hhash) and the 2.x sample
  size_t v2 = 0;
  for (const char *f : {"a1_cpp_macros.pfw.gz", "a2_cpp_macros_meta.pfw.gz",
                        "a4_c_macros_meta.pfw.gz", "a5_c_macros.pfw", "b1_python_ai_meta.pfw.gz",
                        "b2_python_ai.pfw", "c1_preload_dd_meta.pfw.gz", "c2_preload_dd.pfw",
                        "c4_preload_pread_meta.pfw.gz", "d2_preload_pread_agg_meta.pfw.gz",
                        "d4_cpp_macros_agg_meta.pfw.gz", "../dftracer-v2/v2-sample.pfw"})
    for (const auto &l : dftrace::test::read_lines(std::string(DFTRACE_SOURCE_DIR) +
                                                   "/tests/data/dftracer-2.0.2/" + f)) {
      if (l.empty() || l[0] != '{') continue;
      // objects inside args (the 2.x sample's `end` record: one a file) are the whole grammar's
      if (std::count(l.begin(), l.end(), '{') > 2) continue;
      parsed_line pl;
      EXPECT_TRUE(parse_line_with(l, pl, line_scan_in_use(), false)) << f << ": " << l;
      ++v2;
    }
  EXPECT_GT(v2, 4500u);
}
