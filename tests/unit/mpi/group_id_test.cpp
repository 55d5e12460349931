// group_id_test.cpp: the comm_group id's text (src/plugins/mpi/group_id.hpp) and its SHA-1
// against FIPS 180 vectors. The same ids from Python's torch side: test_comm_group_id.py.
#include "plugins/mpi/group_id.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "plugins/mpi/sha1.hpp"

using dftrace::mpi::ranks_id;
using dftrace::mpi::sha1;
using dftrace::mpi::short_id;

namespace {
std::string hex(const std::array<uint8_t, 20> &d) {
  std::string s;
  char b[3];
  for (uint8_t x : d) {
    std::snprintf(b, sizeof b, "%02x", x);
    s += b;
  }
  return s;
}

std::string id_of(std::vector<int> ranks) { return ranks_id(ranks.data(), ranks.size()); }
}  // namespace

TEST(Sha1, Fips180Vectors) {
  EXPECT_EQ(hex(sha1("abc")), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(hex(sha1("")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(hex(sha1("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  EXPECT_EQ(hex(sha1(std::string(1000000, 'a'))), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

TEST(GroupId, RunsSingletonsAndGaps) {
  EXPECT_EQ(id_of({0}), "0");
  EXPECT_EQ(id_of({0, 1}), "0-1");
  EXPECT_EQ(id_of({0, 1, 2, 3}), "0-3");
  EXPECT_EQ(id_of({0, 2}), "0,2");
  EXPECT_EQ(id_of({4, 5, 6, 7, 12}), "4-7,12");
  EXPECT_EQ(id_of({0, 1, 3, 4, 5, 9, 11, 12}), "0-1,3-5,9,11-12");
  EXPECT_EQ(id_of({}), "");
}

TEST(GroupId, RankOrderIsKept) {
  // The communicator's rank order, not sorted: a descending pair is two singletons.
  EXPECT_EQ(id_of({3, 0}), "3,0");
  EXPECT_EQ(id_of({2, 1}), "2,1");
  EXPECT_EQ(id_of({4, 5, 6, 0, 1, 2}), "4-6,0-2");
  EXPECT_EQ(id_of({1, 0, 2, 3}), "1,0,2-3");
}

TEST(GroupId, HashedPast64Characters) {
  std::vector<int> at64{1000};
  for (int r = 100; r < 130; r += 2) at64.push_back(r);
  const std::string text64 = "1000,100,102,104,106,108,110,112,114,116,118,120,122,124,126,128";
  ASSERT_EQ(text64.size(), 64u);
  EXPECT_EQ(id_of(at64), text64);  // exactly 64: kept as it is

  std::vector<int> at65{5};
  for (int r = 100; r < 132; r += 2) at65.push_back(r);
  // 65 characters: "h" and the first 16 hex digits of the text's SHA-1 (hashlib's)
  EXPECT_EQ(id_of(at65), "h5e76b6808c8ef188");

  EXPECT_EQ(short_id(text64), text64);
  EXPECT_EQ(short_id(text64 + "+1"), "h" + hex(sha1(text64 + "+1")).substr(0, 16));
  EXPECT_EQ(short_id("0-3+1"), "0-3+1");
}
