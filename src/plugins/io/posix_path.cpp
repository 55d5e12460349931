// posix_path.cpp: the POSIX calls on a path (the stat family, names, links, directories) and on
// directory streams, as events of category POSIX (README.md, "Events").
#include <dirent.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <utime.h>

#include "plugins/io/calls.hpp"

using namespace dftrace::io;

namespace {

constexpr const char *k_posix = "POSIX";

// A directory stream: traced as the directory it reads (through its descriptor).
int dir_fd(DIR *d) { return d ? ::dirfd(d) : -1; }

// readdir: fhash, ret (1: an entry, 0: the end or an error).
template <typename Entry, typename Call>
Entry *traced_readdir(dftrace_node_t *node, DIR *d, Call call) {
  if (!recording(node) || !d) return call();
  uint64_t h;
  if (!fd_hash(::dirfd(d), &h)) return call();
  return traced(
      node, call,
      [&](Entry *e) {
        return std::array<dftrace_arg_t, 2>{arg_u("fhash", h), arg_i("ret", e ? 1 : 0)};
      },
      false);
}

// symlink and symlinkat: the hash is the target's (as rename's and link's is their source's).
// A relative target is relative to the directory the link is made in, where the kernel
// resolves it, not to the working directory.
template <typename Call>
int traced_symlink(dftrace_node_t *node, const char *target, int dirfd, const char *link,
                   Call call) {
  char where[PATH_MAX], joined[PATH_MAX];
  if (!target || target[0] == '/' || !recording(node) || !absolute_path(dirfd, link, where))
    return traced_path_simple(node, AT_FDCWD, target, call);
  const char *slash = std::strrchr(where, '/');  // (where is absolute: there is one)
  const size_t dir = static_cast<size_t>(slash - where);
  const size_t n = std::strlen(target);
  if (dir + 1 + n >= sizeof joined) return traced_path_simple(node, AT_FDCWD, target, call);
  std::memcpy(joined, where, dir);
  joined[dir] = '/';
  std::memcpy(joined + dir + 1, target, n + 1);
  return traced_path_simple(node, AT_FDCWD, joined, call);
}

}  // namespace

extern "C" {

// Calls on a path relative to the working directory: fhash, ret.
#define DFTRACE_IO_PATH_CALL(name, params, args)                                        \
  int name params {                                                                     \
    DFTRACE_IO_REAL(name);                                                              \
    DFTRACE_IO_NODE(k_posix, #name);                                                    \
    return traced_path_simple(node_, AT_FDCWD, path, [&] { return real_##name args; }); \
  }                                                                                     \
  DFTRACE_IO_REGISTER(name);
// The *at forms: the path is relative to dirfd's directory.
#define DFTRACE_IO_PATH_AT_CALL(name, params, args)                                  \
  int name params {                                                                  \
    DFTRACE_IO_REAL(name);                                                           \
    DFTRACE_IO_NODE(k_posix, #name);                                                 \
    return traced_path_simple(node_, dirfd, path, [&] { return real_##name args; }); \
  }                                                                                  \
  DFTRACE_IO_REGISTER(name);

DFTRACE_IO_PATH_CALL(stat, (const char *path, struct stat *st), (path, st))
DFTRACE_IO_PATH_CALL(stat64, (const char *path, struct stat64 *st), (path, st))
DFTRACE_IO_PATH_CALL(lstat, (const char *path, struct stat *st), (path, st))
DFTRACE_IO_PATH_CALL(lstat64, (const char *path, struct stat64 *st), (path, st))
// glibc's older stat entry points (programs built against glibc < 2.33 call these).
DFTRACE_IO_PATH_CALL(__xstat, (int ver, const char *path, struct stat *st), (ver, path, st))
DFTRACE_IO_PATH_CALL(__xstat64, (int ver, const char *path, struct stat64 *st), (ver, path, st))
DFTRACE_IO_PATH_CALL(__lxstat, (int ver, const char *path, struct stat *st), (ver, path, st))
DFTRACE_IO_PATH_CALL(__lxstat64, (int ver, const char *path, struct stat64 *st), (ver, path, st))
DFTRACE_IO_PATH_CALL(access, (const char *path, int mode), (path, mode))
DFTRACE_IO_PATH_CALL(mkdir, (const char *path, mode_t mode), (path, mode))
DFTRACE_IO_PATH_CALL(rmdir, (const char *path), (path))
DFTRACE_IO_PATH_CALL(unlink, (const char *path), (path))
DFTRACE_IO_PATH_CALL(remove, (const char *path), (path))
DFTRACE_IO_PATH_CALL(truncate, (const char *path, off_t length), (path, length))
DFTRACE_IO_PATH_CALL(truncate64, (const char *path, off64_t length), (path, length))
DFTRACE_IO_PATH_CALL(chmod, (const char *path, mode_t mode), (path, mode))
DFTRACE_IO_PATH_CALL(chown, (const char *path, uid_t owner, gid_t group), (path, owner, group))
DFTRACE_IO_PATH_CALL(lchown, (const char *path, uid_t owner, gid_t group), (path, owner, group))
DFTRACE_IO_PATH_CALL(utime, (const char *path, const struct utimbuf *times), (path, times))
DFTRACE_IO_PATH_CALL(utimes, (const char *path, const struct timeval times[2]), (path, times))
DFTRACE_IO_PATH_CALL(mkfifo, (const char *path, mode_t mode), (path, mode))
DFTRACE_IO_PATH_CALL(chdir, (const char *path), (path))
// Names and links: the hash is the source's (the file the call is about).
DFTRACE_IO_PATH_CALL(rename, (const char *path, const char *to), (path, to))
DFTRACE_IO_PATH_CALL(link, (const char *path, const char *to), (path, to))
int symlink(const char *path, const char *to) {
  DFTRACE_IO_REAL(symlink);
  DFTRACE_IO_NODE(k_posix, "symlink");
  return traced_symlink(node_, path, AT_FDCWD, to, [&] { return real_symlink(path, to); });
}
DFTRACE_IO_REGISTER(symlink);

DFTRACE_IO_PATH_AT_CALL(fstatat, (int dirfd, const char *path, struct stat *st, int flags),
                        (dirfd, path, st, flags))
DFTRACE_IO_PATH_AT_CALL(fstatat64, (int dirfd, const char *path, struct stat64 *st, int flags),
                        (dirfd, path, st, flags))
DFTRACE_IO_PATH_AT_CALL(__fxstatat,
                        (int ver, int dirfd, const char *path, struct stat *st, int flags),
                        (ver, dirfd, path, st, flags))
DFTRACE_IO_PATH_AT_CALL(__fxstatat64,
                        (int ver, int dirfd, const char *path, struct stat64 *st, int flags),
                        (ver, dirfd, path, st, flags))
DFTRACE_IO_PATH_AT_CALL(statx,
                        (int dirfd, const char *path, int flags, unsigned int mask,
                         struct statx *st),
                        (dirfd, path, flags, mask, st))
DFTRACE_IO_PATH_AT_CALL(faccessat, (int dirfd, const char *path, int mode, int flags),
                        (dirfd, path, mode, flags))
DFTRACE_IO_PATH_AT_CALL(mkdirat, (int dirfd, const char *path, mode_t mode), (dirfd, path, mode))
DFTRACE_IO_PATH_AT_CALL(unlinkat, (int dirfd, const char *path, int flags), (dirfd, path, flags))
DFTRACE_IO_PATH_AT_CALL(renameat, (int dirfd, const char *path, int tofd, const char *to),
                        (dirfd, path, tofd, to))
DFTRACE_IO_PATH_AT_CALL(linkat, (int dirfd, const char *path, int tofd, const char *to, int flags),
                        (dirfd, path, tofd, to, flags))

// symlinkat(target, dirfd, linkpath): the target, as symlink's (the link relative to dirfd).
int symlinkat(const char *path, int dirfd, const char *to) {
  DFTRACE_IO_REAL(symlinkat);
  DFTRACE_IO_NODE(k_posix, "symlinkat");
  return traced_symlink(node_, path, dirfd, to, [&] { return real_symlinkat(path, dirfd, to); });
}
DFTRACE_IO_REGISTER(symlinkat);

// readlink: the link's hash and the length read.
#define DFTRACE_IO_READLINK(name, plain, params, dirfd, args)                        \
  ssize_t name params {                                                              \
    DFTRACE_IO_REAL(name);                                                           \
    DFTRACE_IO_NODE(k_posix, plain);                                                 \
    return traced_path_simple(node_, dirfd, path, [&] { return real_##name args; }); \
  }                                                                                  \
  DFTRACE_IO_REGISTER(name);
DFTRACE_IO_READLINK(readlink, "readlink", (const char *path, char *buf, size_t size), AT_FDCWD,
                    (path, buf, size))
DFTRACE_IO_READLINK(readlinkat, "readlinkat", (int dirfd, const char *path, char *buf, size_t size),
                    dirfd, (dirfd, path, buf, size))
DFTRACE_IO_READLINK(__readlink_chk, "readlink",
                    (const char *path, char *buf, size_t size, size_t room), AT_FDCWD,
                    (path, buf, size, room))
DFTRACE_IO_READLINK(__readlinkat_chk, "readlinkat",
                    (int dirfd, const char *path, char *buf, size_t size, size_t room), dirfd,
                    (dirfd, path, buf, size, room))

// Directory streams.
DIR *opendir(const char *path) {
  DFTRACE_IO_REAL(opendir);
  DFTRACE_IO_NODE(k_posix, "opendir");
  return traced_opening(
      node_, AT_FDCWD, path, [&] { return real_opendir(path); },
      [](uint64_t h, DIR *) { return std::array<dftrace_arg_t, 1>{arg_u("fhash", h)}; }, dir_fd);
}
DFTRACE_IO_REGISTER(opendir);

// A stream on a descriptor: traced when the descriptor is.
DIR *fdopendir(int fd) {
  DFTRACE_IO_REAL(fdopendir);
  DFTRACE_IO_NODE(k_posix, "fdopendir");
  return traced_fd_call(
      node_, fd, [&] { return real_fdopendir(fd); },
      [&](uint64_t h, DIR *) {
        return std::array<dftrace_arg_t, 2>{arg_u("fhash", h), arg_i("fd", fd)};
      });
}
DFTRACE_IO_REGISTER(fdopendir);

struct dirent *readdir(DIR *d) {
  DFTRACE_IO_REAL(readdir);
  DFTRACE_IO_NODE(k_posix, "readdir");
  return traced_readdir<struct dirent>(node_, d, [&] { return real_readdir(d); });
}
DFTRACE_IO_REGISTER(readdir);

struct dirent64 *readdir64(DIR *d) {
  DFTRACE_IO_REAL(readdir64);
  DFTRACE_IO_NODE(k_posix, "readdir64");
  return traced_readdir<struct dirent64>(node_, d, [&] { return real_readdir64(d); });
}
DFTRACE_IO_REGISTER(readdir64);

int closedir(DIR *d) {
  DFTRACE_IO_REAL(closedir);
  DFTRACE_IO_NODE(k_posix, "closedir");
  const int fd = d ? ::dirfd(d) : -1;
  uint64_t h;
  if (!recording(node_) || !fd_hash(fd, &h)) {
    const int ret = real_closedir(d);
    fd_forget(fd);
    return ret;
  }
  const int ret = traced(
      node_, [&] { return real_closedir(d); },
      [&](int r) {
        return std::array<dftrace_arg_t, 2>{arg_u("fhash", h), arg_i("ret", r)};
      });
  fd_forget(fd);
  return ret;
}
DFTRACE_IO_REGISTER(closedir);

}  // extern "C"
