// hash_test.cpp: MD5 against RFC 1321 vectors and the DFTracer hash check values of docs/format.md.
#include "base/hash.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

using namespace dftrace::detail;

namespace {
std::string hex(const std::array<uint8_t, 16> &d) {
  std::string s;
  char b[3];
  for (uint8_t x : d) {
    std::snprintf(b, sizeof b, "%02x", x);
    s += b;
  }
  return s;
}
}  // namespace

TEST(Hash, Md5MatchesRfc1321) {
  EXPECT_EQ(hex(md5("")), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(hex(md5("abc")), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(hex(md5("message digest")), "f96b697d7cb7938d525a2f31aaf161d0");
  EXPECT_EQ(
      hex(md5("12345678901234567890123456789012345678901234567890123456789012345678901234567890")),
      "57edf4a22be3c955ac49da2e2107b67a");
}

TEST(Hash, DftracerCheckValues) {
  EXPECT_EQ(dftracer_hash("vm"), 7386335834152862147ull);
  EXPECT_EQ(dftracer_hash("test_cpp"), 6927176034883964129ull);
  EXPECT_EQ(dftracer_hash("/p/gpfs1/demo/data/demofile.txt"), 17339089092982708404ull);
}

TEST(Hash, BlockBoundaries) {
  // 55, 56 and 64 bytes exercise the one- and two-block padding paths.
  for (size_t n : {55u, 56u, 63u, 64u, 65u, 119u, 120u}) {
    std::string s(n, 'a');
    EXPECT_EQ(md5(s), md5(std::string(n, 'a'))) << n;
    EXPECT_NE(dftracer_hash(s), dftracer_hash(s + "b")) << n;
  }
  EXPECT_EQ(hex(md5(std::string(56, 'a'))), "3b0c8ac703f828b04c6c197006d17218");
}
