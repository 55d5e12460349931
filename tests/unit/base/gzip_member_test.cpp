// gzip_member_test.cpp: each codec writes a standard gzip member whose DT field describes it.
#include "base/gzip_member.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "trace_support.hpp"

using namespace dftrace::detail;

namespace {
std::string inflate_all(const std::vector<char> &gz, size_t *consumed) {
  return dftrace::test::inflate_member(gz.data(), gz.size(), consumed);
}
}  // namespace

class Codecs : public ::testing::TestWithParam<codec> {};

TEST_P(Codecs, MemberRoundTripsAndDtDescribesIt) {
  if (!codec_available(GetParam())) GTEST_SKIP() << codec_name(GetParam()) << " not in this build";
  std::string text;
  for (int i = 0; i < 5000; ++i)
    text += "{\"id\":" + std::to_string(i) +
            ",\"name\":\"x\",\"ts\":" + std::to_string(1000 + i % 97) + "}\n";
  member_stats st = scan_member_stats(text.data(), text.size());
  EXPECT_EQ(st.lines, 5000u);
  EXPECT_EQ(st.ts_min, 1000u);
  EXPECT_EQ(st.ts_max, 1096u);
  for (int level = codec_min_level(GetParam()); level <= codec_max_level(GetParam()); ++level) {
    member_encoder enc(GetParam(), level);
    std::vector<char> out;
    ASSERT_TRUE(enc.encode(text.data(), text.size(), st, out));
    const size_t first = out.size();
    ASSERT_TRUE(enc.encode("b\n", 2, member_stats{1, 0, 0}, out));  // a second member
    dt_field dt;
    ASSERT_TRUE(parse_dt_field(reinterpret_cast<const uint8_t *>(out.data()), out.size(), &dt));
    EXPECT_EQ(dt.version, k_dt_version);
    EXPECT_EQ(dt.compressed_len, first);
    EXPECT_EQ(dt.uncompressed_len, text.size());
    EXPECT_EQ(dt.lines, 5000u);
    EXPECT_EQ(dt.ts_min, 1000u);
    EXPECT_EQ(dt.ts_max, 1096u);
    size_t consumed = 0;
    std::vector<char> m1(out.begin(), out.begin() + static_cast<long>(first));
    EXPECT_EQ(inflate_all(m1, &consumed), text) << "level " << level;
    EXPECT_EQ(consumed, first);
    std::vector<char> m2(out.begin() + static_cast<long>(first), out.end());
    EXPECT_EQ(inflate_all(m2, &consumed), "b\n");
  }
}

INSTANTIATE_TEST_SUITE_P(All, Codecs,
                         ::testing::Values(codec::zlib, codec::isal, codec::libdeflate),
                         [](const auto &info) { return std::string(codec_name(info.param)); });

TEST(GzipMember, EmptyMemberIsValid) {
  member_encoder enc(codec_auto(), codec_default_level(codec_auto()));
  std::vector<char> out;
  ASSERT_TRUE(enc.encode("", 0, member_stats{}, out));
  size_t consumed;
  EXPECT_EQ(inflate_all(out, &consumed), "");
}

TEST(GzipMember, ParseRejectsNonDtHeaders) {
  const uint8_t plain[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0, 0};
  dt_field dt;
  EXPECT_FALSE(parse_dt_field(plain, sizeof plain, &dt));
  EXPECT_FALSE(parse_dt_field(plain, 5, &dt));
}
