// fs_direct.hpp: ring.direct auto: which file system a trace file lies on, and whether the
// flight recorder's dump of the ring goes to it with O_DIRECT.
#pragma once

#include <cstdint>
#include <string>

namespace dftrace::detail {

// How ring.direct: auto treats a file system.
enum class fs_direct : uint8_t {
  on,     // a local block file system (ext2/3/4, xfs, btrfs, f2fs): O_DIRECT
  off,    // a network, parallel or user-space file system, or one not known: the page cache
  probe,  // O_DIRECT where the file system takes it (tmpfs since Linux 6.6, overlay, ramfs)
};

struct fs_class {
  const char *name;  // "xfs", "nfs", ...; "unknown" for a magic number not in the table
  fs_direct direct;
};

// The file system of statfs's f_type.
fs_class classify_fs(uint64_t f_type);

// The decision for one file: fstatfs of `fd` (or, when fd < 0, statfs of the directory of
// `path`), classify_fs, and for `probe` whether the file takes O_DIRECT (fcntl on fd, or an
// open of `path` with it). `fs` is the file system's name.
struct direct_decision {
  bool on = false;
  const char *fs = "unknown";
};
direct_decision decide_direct(int fd, const std::string &path);

}  // namespace dftrace::detail
