// output_direct_test.cpp: output_file::write_many_direct (the flight recorder's dump with
// O_DIRECT): the file holds exactly the bytes given, whatever their sizes and the file's offset.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "output/output_file.hpp"
#include "trace_support.hpp"

using namespace dftrace::detail;
using dftrace::test::temp_dir;

namespace {

std::string slurp(const std::string &p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string bytes(size_t n, uint64_t seed) {
  std::string s(n, '\0');
  uint64_t x = seed * 2654435761u + 88172645463325252ull;
  for (char &c : s) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>(x);
  }
  return s;
}

// Whether the directory's file system takes O_DIRECT at all.
bool takes_direct(const std::string &dir) {
  const std::string p = dir + "/probe";
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
  if (fd >= 0) ::close(fd);
  ::unlink(p.c_str());
  return fd >= 0;
}

TEST(OutputDirect, TheFileHoldsExactlyTheBytesGivenAcrossUnalignedHeadsAndTails) {
  temp_dir d;
  output_file f;
  const std::string header = bytes(1000, 1);  // the file's offset unaligned from the start
  f.plan(d.path + "/t.pfw.gz", header);
  ASSERT_TRUE(f.open(false, header.data(), header.size()));
  std::string want = header;
  // Calls of members of odd sizes (smaller than a block, around the buffer's size, several of
  // its size), with ordinary writes between them.
  const std::vector<std::vector<size_t>> calls = {
      {13},
      {700 * 1024 + 13, (1 << 20) + 5, (2 << 20) - 7},
      {4096, 4096},
      {3 * (1 << 20) + 1},
  };
  uint64_t seed = 2;
  for (const auto &sizes : calls) {
    std::vector<std::string> members;
    std::vector<iovec> v;
    for (size_t n : sizes) members.push_back(bytes(n, seed++));
    for (std::string &m : members) {
      v.push_back({m.data(), m.size()});
      want += m;
    }
    ASSERT_TRUE(f.write_many_direct(v.data(), v.size()));
    const std::string between = bytes(77, seed++);
    ASSERT_TRUE(f.write(between.data(), between.size()));
    want += between;
  }
  f.close();
  EXPECT_EQ(slurp(d.path + "/t.pfw.gz"), want);
  if (takes_direct(d.path))
    EXPECT_GT(f.direct_bytes(), uint64_t{6} << 20);  // all but the heads and tails
  else
    EXPECT_EQ(f.direct_bytes(), 0u);
}

}  // namespace
