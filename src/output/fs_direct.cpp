// fs_direct.cpp: ring.direct auto's table of file systems and its decision for one file.
#include "output/fs_direct.hpp"

#include <fcntl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace dftrace::detail {

namespace {

struct fs_row {
  uint64_t magic;
  fs_class c;
};

// statfs's f_type of the file systems named (linux/magic.h and each file system's own).
constexpr fs_row k_table[] = {
    {0xEF53, {"ext2/ext3/ext4", fs_direct::on}}, {0x58465342, {"xfs", fs_direct::on}},
    {0x9123683E, {"btrfs", fs_direct::on}},      {0xF2F52010, {"f2fs", fs_direct::on}},
    {0x01021994, {"tmpfs", fs_direct::probe}},   {0x794C7630, {"overlay", fs_direct::probe}},
    {0x858458F6, {"ramfs", fs_direct::probe}},   {0x6969, {"nfs", fs_direct::off}},
    {0x0BD00BD0, {"lustre", fs_direct::off}},    {0x47504653, {"gpfs", fs_direct::off}},
    {0xFF534D42, {"cifs", fs_direct::off}},      {0xFE534D42, {"smb2", fs_direct::off}},
    {0x517B, {"smb", fs_direct::off}},           {0x00C36400, {"ceph", fs_direct::off}},
    {0x19830326, {"beegfs", fs_direct::off}},    {0x65735546, {"fuse", fs_direct::off}},
    {0x01021997, {"9p", fs_direct::off}},        {0x5346414F, {"afs", fs_direct::off}},
    {0x20030528, {"orangefs", fs_direct::off}},  {0xAAD7AAEA, {"panfs", fs_direct::off}},
    {0x2FC12FC1, {"zfs", fs_direct::off}},
};

// The kernel's calls, never an interposer's (as output_file.cpp's).
int sys_getfl(int fd) { return static_cast<int>(::syscall(SYS_fcntl, fd, F_GETFL)); }
int sys_setfl(int fd, int flags) {
  return static_cast<int>(::syscall(SYS_fcntl, fd, F_SETFL, flags));
}

// Whether the file takes O_DIRECT: the flag set on fd and taken back, or (fd < 0) the file
// opened with it and closed.
bool takes_direct(int fd, const std::string &path) {
  if (fd >= 0) {
    const int flags = sys_getfl(fd);
    if (flags < 0 || sys_setfl(fd, flags | O_DIRECT) != 0) return false;
    while (sys_setfl(fd, flags) != 0 && errno == EINTR) {
    }
    return true;
  }
  const int probe = static_cast<int>(
      ::syscall(SYS_openat, AT_FDCWD, path.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC));
  if (probe < 0) return false;
  ::syscall(SYS_close, probe);
  return true;
}

}  // namespace

fs_class classify_fs(uint64_t f_type) {
  // f_type is a signed word on some ABIs: a magic number with its top bit set comes sign-extended.
  const uint64_t magic = f_type & 0xFFFFFFFFu;
  for (const fs_row &r : k_table)
    if (r.magic == magic) return r.c;
  return {"unknown", fs_direct::off};
}

direct_decision decide_direct(int fd, const std::string &path) {
  struct statfs s;
  int rc;
  if (fd >= 0) {
    rc = static_cast<int>(::syscall(SYS_fstatfs, fd, &s));
  } else {
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + !slash);
    rc = static_cast<int>(::syscall(SYS_statfs, dir.c_str(), &s));
  }
  direct_decision d;
  if (rc != 0) return d;
  const fs_class c = classify_fs(static_cast<uint64_t>(s.f_type));
  d.fs = c.name;
  d.on = c.direct == fs_direct::on || (c.direct == fs_direct::probe && takes_direct(fd, path));
  return d;
}

}  // namespace dftrace::detail
