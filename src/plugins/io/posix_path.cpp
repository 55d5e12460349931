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

// Calls on a path relative to `dirfd` (AT_FDCWD: the working directory): fhash, ret.
#define DFTRACE_IO_SHAPE_PATH(cat, name, event, result, dirfd, params, args) \
  DFTRACE_IO_DEFINE(                                                         \
      cat, name, event, result, params,                                      \
      return traced_path_simple(node_, dirfd, path, [&] { return real_##name args; });)

// symlink and symlinkat: the target's hash (traced_symlink).
int symlink(const char *path, const char *to) {
  DFTRACE_IO_REAL(symlink);
  DFTRACE_IO_NODE(k_posix, "symlink");
  return traced_symlink(node_, path, AT_FDCWD, to, [&] { return real_symlink(path, to); });
}

// symlinkat(target, dirfd, linkpath): the target, as symlink's (the link relative to dirfd).
int symlinkat(const char *path, int dirfd, const char *to) {
  DFTRACE_IO_REAL(symlinkat);
  DFTRACE_IO_NODE(k_posix, "symlinkat");
  return traced_symlink(node_, path, dirfd, to, [&] { return real_symlinkat(path, dirfd, to); });
}

// Directory streams.
DIR *opendir(const char *path) {
  DFTRACE_IO_REAL(opendir);
  DFTRACE_IO_NODE(k_posix, "opendir");
  return traced_opening(
      node_, AT_FDCWD, path, [&] { return real_opendir(path); },
      [](uint64_t h, DIR *) { return std::array<dftrace_arg_t, 1>{arg_u("fhash", h)}; }, dir_fd);
}

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

struct dirent *readdir(DIR *d) {
  DFTRACE_IO_REAL(readdir);
  DFTRACE_IO_NODE(k_posix, "readdir");
  return traced_readdir<struct dirent>(node_, d, [&] { return real_readdir(d); });
}

struct dirent64 *readdir64(DIR *d) {
  DFTRACE_IO_REAL(readdir64);
  DFTRACE_IO_NODE(k_posix, "readdir64");
  return traced_readdir<struct dirent64>(node_, d, [&] { return real_readdir64(d); });
}

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

// The wrappers of the table's rows written here, and the registry's entries of those above.
#define DFTRACE_IO_SHAPE_PATH_OWN(cat, name, ...) DFTRACE_IO_REGISTER(name);
#include "plugins/io/shapes.hpp"
#define DFTRACE_IO_CALL DFTRACE_IO_WRAPPER
#include "dftrace/io_calls.def"

}  // extern "C"
