// format_test.cpp: JSON escaping, number formatting and the JSON value checker.
#include "base/format.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

using namespace dftrace::detail;

namespace {
std::string esc(const std::string &s) {
  std::string out(escaped_bound(s.size()), '\0');
  out.resize(static_cast<size_t>(escape_json(out.data(), s.data(), s.size()) - out.data()));
  return out;
}
std::string u64(uint64_t v) {
  char b[32];
  return std::string(b, write_u64(b, v));
}
std::string i64(int64_t v) {
  char b[32];
  return std::string(b, write_i64(b, v));
}
std::string dbl(double v) {
  char b[40];
  return std::string(b, write_double(b, v));
}
}  // namespace

TEST(Format, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(esc("plain"), "plain");
  EXPECT_EQ(esc("a\"b"), "a\\\"b");
  EXPECT_EQ(esc("back\\slash"), "back\\\\slash");
  EXPECT_EQ(esc("line\nbreak\ttab\rcr"), "line\\nbreak\\ttab\\rcr");
  EXPECT_EQ(esc(std::string("\x01\x1f\b\f", 4)), "\\u0001\\u001f\\b\\f");
  EXPECT_EQ(esc(std::string("nul\0in", 6)), "nul\\u0000in");
}

TEST(Format, KeepsValidUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(esc("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80"),
            "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80");
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_EQ(esc("\xff"), fffd);
  EXPECT_EQ(esc("a\xc3"), "a" + fffd);                            // truncated sequence
  EXPECT_EQ(esc("\xc0\xaf"), fffd + fffd);                        // overlong
  EXPECT_EQ(esc("\xed\xa0\x80"), fffd + fffd + fffd);             // surrogate
  EXPECT_EQ(esc("\xf4\x90\x80\x80"), fffd + fffd + fffd + fffd);  // above U+10FFFF
}

TEST(Format, EscapedOutputIsAlwaysValidJson) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  EXPECT_TRUE(is_valid_json_value("\"" + esc(all) + "\""));
  EXPECT_TRUE(is_valid_json_value(json_quote(all)));
}

// A backslash before a NUL byte is no escape (strchr would find the terminator).
TEST(Format, ABackslashBeforeANulIsNoEscape) {
  EXPECT_FALSE(is_valid_json_value(std::string("\"a\\\0b\"", 6)));
  EXPECT_TRUE(is_valid_json_value(std::string("\"a\\nb\"", 6)));
}

// Raw JSON from a caller goes into one trace line: its newlines between tokens become spaces,
// the whitespace at its ends goes, and what is left is the same value.
TEST(Format, AJsonValueIsPutOnOneLine) {
  EXPECT_EQ(json_value_on_one_line("{\n  \"lr\": 0.1,\r\n  \"s\": \"a b\"\n}\n"),
            "{   \"lr\": 0.1,    \"s\": \"a b\" }");
  EXPECT_EQ(json_value_on_one_line(" \t5\r\n"), "5");
  EXPECT_EQ(json_value_on_one_line("[0,1]"), "[0,1]");
  EXPECT_EQ(json_value_on_one_line("\"a\\nb\""), "\"a\\nb\"");  // an escaped newline stays
  for (const char *v : {"{\n\"a\":[1,\n2]\n}", "\n\n\"x\"\n", "[\r\n]"}) {
    const std::string one = json_value_on_one_line(v);
    EXPECT_TRUE(is_valid_json_value(one)) << one;
    EXPECT_EQ(one.find_first_of("\n\r"), std::string::npos) << one;
  }
}

// Plain text is copied 8 bytes at a time until a word holds a byte to escape: every such byte
// (each of the 256 values that is not plain) at every position of strings of 1 to 40 bytes,
// both alignments of the input, gives the text around it unchanged and the byte escaped as
// it is alone.
TEST(Format, EveryByteToEscapeIsFoundAtEveryPosition) {
  std::string buf(64, 'x');
  for (int c = 0; c < 256; ++c) {
    const bool plain = c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
    const std::string alone = esc(std::string(1, static_cast<char>(c)));
    for (size_t len = 1; len <= 40; ++len)
      for (size_t at = 0; at < len; ++at)
        for (size_t shift = 0; shift < 2; ++shift) {
          std::string text(len, 'a');
          for (size_t k = 0; k < len; ++k) text[k] = static_cast<char>('a' + (k % 26));
          text[at] = static_cast<char>(c);
          buf.assign(shift, '-');
          buf += text;
          std::string out(escaped_bound(len), '\0');
          out.resize(
              static_cast<size_t>(escape_json(out.data(), buf.data() + shift, len) - out.data()));
          const std::string want =
              text.substr(0, at) + (plain ? text.substr(at, 1) : alone) + text.substr(at + 1);
          ASSERT_EQ(out, want) << "byte " << c << " at " << at << " of " << len;
        }
  }
}

TEST(Format, VeryLongStrings) {
  std::string big(1 << 20, 'x');
  big[1000] = '"';
  const std::string q = json_quote(big);
  EXPECT_EQ(q.size(), big.size() + 3);  // quotes + one backslash
  EXPECT_TRUE(is_valid_json_value(q));
}

// The 8 (4) digits computed side by side in one word, for every value below 10^8 (10^4),
// against an odometer counting in ASCII.
TEST(Format, EightDigitsAtOnceForEveryValue) {
  char want[8] = {'0', '0', '0', '0', '0', '0', '0', '0'};
  for (uint32_t x = 0; x < 100000000u; ++x) {
    char got[8];
    fmt_detail::put8(got, x);
    ASSERT_EQ(std::memcmp(got, want, 8), 0) << x;
    if (x < 10000) {
      const uint32_t w = fmt_detail::to_memory_order(fmt_detail::digits4(x));
      ASSERT_EQ(std::memcmp(&w, want + 4, 4), 0) << x;
    }
    for (int i = 7; i >= 0 && ++want[i] > '9'; --i) want[i] = '0';
  }
}

TEST(Format, Integers) {
  EXPECT_EQ(u64(0), "0");
  EXPECT_EQ(u64(9), "9");
  EXPECT_EQ(u64(10), "10");
  EXPECT_EQ(u64(1795262848109106ull), "1795262848109106");
  EXPECT_EQ(u64(std::numeric_limits<uint64_t>::max()), "18446744073709551615");
  // Every power of ten and its neighbours, and a sweep over all magnitudes, against to_string.
  for (uint64_t p10 = 1;; p10 *= 10) {
    for (uint64_t v : {p10 - 1, p10, p10 + 1, p10 * 2 - 1, p10 * 9 + (p10 - 1)})
      EXPECT_EQ(u64(v), std::to_string(v));
    if (p10 > std::numeric_limits<uint64_t>::max() / 10) break;
  }
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 200000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const uint64_t v = x >> (i % 64);
    ASSERT_EQ(u64(v), std::to_string(v)) << v;
  }
  EXPECT_EQ(i64(-1), "-1");
  EXPECT_EQ(i64(std::numeric_limits<int64_t>::min()), "-9223372036854775808");
}

TEST(Format, DoublesAreShortestRoundTripAndNeverNanOrInf) {
  EXPECT_EQ(dbl(0.1), "0.1");
  EXPECT_EQ(dbl(1.5), "1.5");
  EXPECT_EQ(std::stod(dbl(1.0 / 3.0)), 1.0 / 3.0);
  EXPECT_EQ(dbl(std::nan("")), "null");
  EXPECT_EQ(dbl(std::numeric_limits<double>::infinity()), "null");
  EXPECT_TRUE(is_valid_json_value(dbl(1e300)));
  EXPECT_TRUE(is_valid_json_value(dbl(-2.5e-300)));
}

TEST(Format, JsonChecker) {
  EXPECT_TRUE(is_valid_json_value("[1,2,{\"a\":[true,false,null]}]"));
  EXPECT_TRUE(is_valid_json_value(" -1.5e+3 "));
  EXPECT_FALSE(is_valid_json_value("[1,2,]"));
  EXPECT_FALSE(is_valid_json_value("{\"a\":1"));
  EXPECT_FALSE(is_valid_json_value("NaN"));
  EXPECT_FALSE(is_valid_json_value("\"a\"b"));
  EXPECT_FALSE(is_valid_json_value(std::string(100, '[') + std::string(100, ']')));  // too deep
  // Strings are checked for UTF-8 with the rule escaping uses (and the trace reader).
  EXPECT_TRUE(is_valid_json_value("\"caf\xc3\xa9 \xf0\x9f\x98\x80\""));
  EXPECT_FALSE(is_valid_json_value("\"a\xc3\""));           // truncated sequence
  EXPECT_FALSE(is_valid_json_value("{\"\xc0\xaf\":1}"));    // overlong, in a key
  EXPECT_FALSE(is_valid_json_value("[\"\xed\xa0\x80\"]"));  // surrogate
}

// copy_small copies exactly n bytes for every length (the fixed-size moves up to 64 bytes, memcpy
// past them) and writes nothing outside the destination's n bytes.
TEST(Format, CopySmallCopiesExactlyNBytes) {
  char src[160], dst[160];
  for (int i = 0; i < 160; ++i) src[i] = static_cast<char>('A' + i % 53);
  for (size_t n = 0; n <= 130; ++n) {
    for (size_t off : {size_t{0}, size_t{3}}) {
      std::memset(dst, '#', sizeof dst);
      copy_small(dst + off + 8, src + off, n);
      for (size_t i = 0; i < sizeof dst; ++i) {
        const bool inside = i >= off + 8 && i < off + 8 + n;
        ASSERT_EQ(dst[i], inside ? src[off + i - off - 8] : '#') << "n " << n << " at " << i;
      }
    }
  }
}
