// json_string_test.cpp: JSON string escapes decoded exactly (RFC 8259 section 7), and the
// aggregated records of dftrace and of DFTracer 2.0.2 read as the calls they fold.
#include "reader/json_string.hpp"

#include <gtest/gtest.h>

#include <string>

#include "reader/aggregated.hpp"

using namespace dftrace::detail;

namespace {

std::string dec(std::string_view escaped) {
  std::string out;
  json_unescape_append(escaped, &out);
  return out;
}

jvalue str(const char *t) { return jvalue{jtype::string, t}; }

}  // namespace

TEST(JsonString, SimpleEscapes) {
  EXPECT_EQ(dec(R"(a\"b\\c)"), "a\"b\\c");
  EXPECT_EQ(dec(R"(nl\nname)"), "nl\nname");
  EXPECT_EQ(dec(R"(\/\b\f\r\t)"), "/\b\f\r\t");
  EXPECT_EQ(dec("plain"), "plain");
}

TEST(JsonString, UnicodeEscapes) {
  EXPECT_EQ(dec(R"(\u0066orward)"), "forward");
  EXPECT_EQ(dec(R"(\u00e9t\u00E9)"), "\xc3\xa9t\xc3\xa9");
  EXPECT_EQ(dec(R"(\u20ac)"), "\xe2\x82\xac");
  EXPECT_EQ(dec(R"(\u0000)"), std::string(1, '\0'));
  EXPECT_EQ(dec(R"(\ud83d\ude00)"), "\xf0\x9f\x98\x80");  // a pair: one character
}

TEST(JsonString, LoneSurrogatesBecomeTheReplacementCharacter) {
  EXPECT_EQ(dec(R"(\ud800x)"), "\xef\xbf\xbdx");
  EXPECT_EQ(dec(R"(\udc00)"), "\xef\xbf\xbd");
  EXPECT_EQ(dec(R"(\ud800\u0041)"),
            "\xef\xbf\xbd"
            "A");
  EXPECT_EQ(dec(R"(\ud800\ud800\udc00)"), "\xef\xbf\xbd\xf0\x90\x80\x80");
}

TEST(JsonString, ViewsAndComparisons) {
  std::string scratch;
  const jvalue plain = str("forward");
  EXPECT_EQ(string_text(plain, &scratch).data(), plain.text.data());  // no copy
  EXPECT_EQ(string_text(str(R"(\u0066orward)"), &scratch), "forward");
  EXPECT_TRUE(text_equals(str(R"(\u0066orward)"), "forward"));
  EXPECT_FALSE(text_equals(str(R"(\u0066orwar)"), "forward"));
  EXPECT_EQ(decoded(jvalue{jtype::number, "12"}), "12");
}

TEST(JsonString, EscapedPhase) {
  parsed_line pl;
  ASSERT_TRUE(parse_line(R"({"name":"a","ph":"\u0058"})", pl));
  EXPECT_EQ(phase(pl), 'X');
  ASSERT_TRUE(parse_line(R"({"name":"a","ph":"\u0043"})", pl));
  EXPECT_EQ(phase(pl), 'C');
}

TEST(Aggregated, DftraceAndTypedRecords) {
  parsed_line pl;
  uint64_t n = 0, d = 0;
  ASSERT_TRUE(parse_line(R"({"name":"f","ph":"A","ts":1,"args":{"dft_cnt":4,"dur_sum":10}})", pl));
  ASSERT_TRUE(aggregated_calls(pl, time_unit::us, &n, &d));
  EXPECT_EQ(n, 4u);
  EXPECT_EQ(d, 10000u);
  ASSERT_TRUE(parse_line(R"({"name":"f","ph":3,"ts":1,"args":{"dft_cnt":4,"dur":3}})", pl));
  ASSERT_TRUE(aggregated_calls(pl, time_unit::us, &n, &d));
  EXPECT_EQ(n, 4u);
  EXPECT_EQ(d, 12000u);
}

TEST(Aggregated, DurTimesCountHeldAt2To64) {
  // 3 calls of 2^63-1 ns: their total, past 2^64-1, is held there (it wrapped to 2^63-3).
  parsed_line pl;
  uint64_t n = 0, d = 0;
  for (bool general : {false, true}) {
    ASSERT_TRUE(parse_line(
        R"({"name":"f","ph":"A","ts":1,"args":{"dft_cnt":3,"dur":9223372036854775807}})", pl));
    ASSERT_TRUE(general ? aggregated_calls_general(pl, time_unit::ns, &n, &d)
                        : aggregated_calls(pl, time_unit::ns, &n, &d));
    EXPECT_EQ(n, 3u);
    EXPECT_EQ(d, UINT64_MAX);
  }
  ASSERT_TRUE(parse_line(
      R"({"name":"f","ph":"A","ts":1,"args":{"dft_cnt":2,"dur":9223372036854775807}})", pl));
  ASSERT_TRUE(aggregated_calls(pl, time_unit::ns, &n, &d));
  EXPECT_EQ(d, UINT64_MAX - 1);  // 2^64-2: exact
}

TEST(Aggregated, Dftracer202Counters) {
  parsed_line pl;
  uint64_t n = 0, d = 0;
  // count is the call count
  ASSERT_TRUE(parse_line(
      R"({"name":"open","ph":"C","ts":1,"args":{"dur_min":1,"dur_max":3,"dur_sum":5,"count":2,"flags":0,"flags_sum":0}})",
      pl));
  EXPECT_TRUE(is_counter_aggregate(pl));
  ASSERT_TRUE(aggregated_calls(pl, time_unit::us, &n, &d));
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(d, 5000u);
  // count is pread's own argument: count_sum / count calls
  ASSERT_TRUE(parse_line(
      R"({"name":"pread","ph":"C","ts":1,"args":{"dur_min":1,"dur_max":2,"dur_sum":3,"count":4096,"count_sum":8192,"count_min":4096,"count_max":4096}})",
      pl));
  ASSERT_TRUE(aggregated_calls(pl, time_unit::us, &n, &d));
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(d, 3000u);
  // count 0 (a read of nothing): another argument tells
  ASSERT_TRUE(parse_line(
      R"({"name":"read","ph":"C","ts":1,"args":{"dur_sum":3,"dur_min":1,"dur_max":2,"count":0,"count_sum":0,"offset":0,"offset_sum":0,"fd":5,"fd_sum":15}})",
      pl));
  ASSERT_TRUE(aggregated_calls(pl, time_unit::us, &n, &d));
  EXPECT_EQ(n, 3u);
  // a counter of dftrace's is none
  ASSERT_TRUE(parse_line(R"({"name":"mem","ph":"C","ts":1,"args":{"bytes":5}})", pl));
  EXPECT_FALSE(is_counter_aggregate(pl));
  EXPECT_FALSE(aggregated_calls(pl, time_unit::us, &n, &d));
}

TEST(JsonString, EscapedArgumentKeys) {
  parsed_line pl;
  ASSERT_TRUE(parse_line(R"({"name":"a","ph":"X","args":{"d\u0066t_cnt":3,"x":1}})", pl));
  const jvalue *v = pl.arg_value("dft_cnt");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->text, "3");
  EXPECT_EQ(pl.arg_value("nope"), nullptr);
}
