// fs_direct_test.cpp: ring.direct auto: the file systems by statfs's f_type, and the decision
// for a file in the test's temporary directory against what statfs says of it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "output/fs_direct.hpp"
#include "output/output_file.hpp"
#include "trace_support.hpp"

using namespace dftrace::detail;
using dftrace::test::temp_dir;

namespace {

TEST(FsDirect, LocalBlockFileSystemsAreOnNetworkAndParallelOnesOff) {
  struct want {
    uint64_t magic;
    const char *name;
    fs_direct direct;
  };
  const want rows[] = {
      {0xEF53, "ext2/ext3/ext4", fs_direct::on}, {0x58465342, "xfs", fs_direct::on},
      {0x9123683E, "btrfs", fs_direct::on},      {0xF2F52010, "f2fs", fs_direct::on},
      {0x01021994, "tmpfs", fs_direct::probe},   {0x794C7630, "overlay", fs_direct::probe},
      {0x858458F6, "ramfs", fs_direct::probe},   {0x6969, "nfs", fs_direct::off},
      {0x0BD00BD0, "lustre", fs_direct::off},    {0x47504653, "gpfs", fs_direct::off},
      {0xFF534D42, "cifs", fs_direct::off},      {0xFE534D42, "smb2", fs_direct::off},
      {0x00C36400, "ceph", fs_direct::off},      {0x19830326, "beegfs", fs_direct::off},
      {0x65735546, "fuse", fs_direct::off},
  };
  for (const want &w : rows) {
    const fs_class c = classify_fs(w.magic);
    EXPECT_STREQ(c.name, w.name) << std::hex << w.magic;
    EXPECT_EQ(c.direct, w.direct) << std::hex << w.magic;
  }
  // A magic number with its top bit set, sign-extended (f_type is a signed long): the same.
  EXPECT_STREQ(classify_fs(0xFFFFFFFFFF534D42ull).name, "cifs");
  EXPECT_STREQ(classify_fs(0xFFFFFFFFF2F52010ull).name, "f2fs");
  // One not in the table: off (its O_DIRECT may be synchronous, or buffered anyway).
  EXPECT_STREQ(classify_fs(0x12345678).name, "unknown");
  EXPECT_EQ(classify_fs(0x12345678).direct, fs_direct::off);
}

// What statfs says of dir, and whether a file there opens with O_DIRECT: the expectation.
bool expected_on(const std::string &dir, const char **name) {
  struct statfs s;
  EXPECT_EQ(::statfs(dir.c_str(), &s), 0);
  const fs_class c = classify_fs(static_cast<uint64_t>(s.f_type));
  *name = c.name;
  if (c.direct != fs_direct::probe) return c.direct == fs_direct::on;
  const std::string p = dir + "/probe";
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
  if (fd >= 0) ::close(fd);
  ::unlink(p.c_str());
  return fd >= 0;
}

TEST(FsDirect, AutoOnTheTemporaryDirectoryDecidesWhatStatfsSays) {
  temp_dir d;
  const char *name = nullptr;
  const bool on = expected_on(d.path, &name);
  // By the open file's descriptor (the trace file held open) and by its directory.
  output_file f;
  const std::string header = "[\n";
  f.plan(d.path + "/t.pfw", header);
  ASSERT_TRUE(f.open(false, header.data(), header.size()));
  const direct_decision by_file = f.direct_auto();
  EXPECT_EQ(by_file.on, on) << by_file.fs;
  EXPECT_STREQ(by_file.fs, name);
  const direct_decision by_dir = decide_direct(-1, d.path + "/t.pfw");
  EXPECT_EQ(by_dir.on, on) << by_dir.fs;
  EXPECT_STREQ(by_dir.fs, name);
  f.close();
}

}  // namespace
