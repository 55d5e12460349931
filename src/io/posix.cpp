// posix.cpp: the POSIX calls of the application, as events of category POSIX (README.md).
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>
#include <utime.h>

#include "io/interpose.hpp"

using namespace dftrace::io;

namespace {

constexpr const char *k_posix = "POSIX";

// open's mode is there only when the flags create a file.
bool has_mode(int flags) { return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE; }

// An opening call: traced when its path is; the descriptor it returns is tracked.
template <typename Call>
int traced_open(dftrace_node_t *node, const char *path, int flags, mode_t mode, Call call) {
  if (!recording(node) || !traced_path(path)) return call();
  const uint64_t h = file_hash(path);
  const int fd = traced(node, call, [&](int ret) {
    return std::array<dftrace_arg_t, 4>{arg_u("fhash", h), arg_i("flags", flags),
                                        arg_i("mode", mode), arg_i("ret", ret)};
  });
  if (fd >= 0) {
    fd_track(fd, h);  // (no system call: errno stays the real call's)
  }
  return fd;
}

// A call on a path: traced when the path is.
template <typename Call>
auto traced_path_call(dftrace_node_t *node, const char *path, Call call) -> decltype(call()) {
  if (!recording(node) || !traced_path(path)) return call();
  const uint64_t h = file_hash(path);
  return traced(node, call, [&](decltype(call()) ret) {
    return std::array<dftrace_arg_t, 2>{arg_u("fhash", h), arg_i("ret", ret)};
  });
}

// A call on a descriptor: traced when the descriptor is.
template <typename Call, typename Args>
auto traced_fd_call(dftrace_node_t *node, int fd, Call call, Args args) -> decltype(call()) {
  if (!recording(node)) return call();
  uint64_t h;
  if (!fd_hash(fd, &h)) return call();
  return traced(node, call, [&](auto ret) { return args(h, ret); });
}

// read/write and their positioned forms: fhash, fd, count, ret (and offset).
template <typename Call>
ssize_t traced_transfer(dftrace_node_t *node, int fd, size_t count, Call call) {
  return traced_fd_call(node, fd, call, [&](uint64_t h, ssize_t ret) {
    return std::array<dftrace_arg_t, 4>{arg_u("fhash", h), arg_i("fd", fd),
                                        arg_i("count", static_cast<int64_t>(count)),
                                        arg_i("ret", ret)};
  });
}
template <typename Call>
ssize_t traced_transfer_at(dftrace_node_t *node, int fd, size_t count, off64_t offset, Call call) {
  return traced_fd_call(node, fd, call, [&](uint64_t h, ssize_t ret) {
    return std::array<dftrace_arg_t, 5>{arg_u("fhash", h), arg_i("fd", fd),
                                        arg_i("count", static_cast<int64_t>(count)),
                                        arg_i("offset", offset), arg_i("ret", ret)};
  });
}

// close, fsync, fdatasync: fhash, fd, ret.
template <typename Call>
int traced_fd_simple(dftrace_node_t *node, int fd, Call call) {
  return traced_fd_call(node, fd, call, [&](uint64_t h, int ret) {
    return std::array<dftrace_arg_t, 3>{arg_u("fhash", h), arg_i("fd", fd), arg_i("ret", ret)};
  });
}

template <typename Call>
off64_t traced_seek(dftrace_node_t *node, int fd, off64_t offset, int whence, Call call) {
  return traced_fd_call(node, fd, call, [&](uint64_t h, off64_t ret) {
    return std::array<dftrace_arg_t, 5>{arg_u("fhash", h), arg_i("fd", fd), arg_i("offset", offset),
                                        arg_i("whence", whence), arg_i("ret", ret)};
  });
}

mode_t mode_arg(int flags, va_list ap) {
  return has_mode(flags) ? static_cast<mode_t>(va_arg(ap, int)) : 0;
}

// Vectored transfers: count is the sum of the buffers' lengths.
size_t iov_bytes(const struct iovec *iov, int n) {
  size_t b = 0;
  for (int i = 0; iov && i < n; ++i) b += iov[i].iov_len;
  return b;
}

// A duplicate of a traced descriptor is traced as its file.
template <typename Call>
int traced_dup(dftrace_node_t *node, int fd, Call call) {
  const int ret = traced_fd_simple(node, fd, call);
  uint64_t h;
  if (ret >= 0 && ret != fd && fd_hash(fd, &h)) fd_track(ret, h);
  return ret;
}

__attribute__((constructor)) void io_ready() { g_ready.store(true, std::memory_order_release); }

}  // namespace

extern "C" {

#define DFTRACE_IO_OPEN(name)                                                                     \
  int name(const char *path, int flags, ...) {                                                    \
    DFTRACE_IO_REAL(name);                                                                        \
    va_list ap;                                                                                   \
    va_start(ap, flags);                                                                          \
    const mode_t mode = mode_arg(flags, ap);                                                      \
    va_end(ap);                                                                                   \
    DFTRACE_IO_NODE(k_posix, #name);                                                              \
    return traced_open(node_, path, flags, mode, [&] { return real_##name(path, flags, mode); }); \
  }
DFTRACE_IO_OPEN(open)
DFTRACE_IO_OPEN(open64)

int openat(int dirfd, const char *path, int flags, ...) {
  DFTRACE_IO_REAL(openat);
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  DFTRACE_IO_NODE(k_posix, "openat");
  return traced_open(node_, path, flags, mode,
                     [&] { return real_openat(dirfd, path, flags, mode); });
}

int creat(const char *path, mode_t mode) {
  DFTRACE_IO_REAL(creat);
  DFTRACE_IO_NODE(k_posix, "creat");
  return traced_open(node_, path, O_CREAT | O_WRONLY | O_TRUNC, mode,
                     [&] { return real_creat(path, mode); });
}

int creat64(const char *path, mode_t mode) {
  DFTRACE_IO_REAL(creat64);
  DFTRACE_IO_NODE(k_posix, "creat64");
  return traced_open(node_, path, O_CREAT | O_WRONLY | O_TRUNC, mode,
                     [&] { return real_creat64(path, mode); });
}

int close(int fd) {
  DFTRACE_IO_REAL(close);
  DFTRACE_IO_NODE(k_posix, "close");
  const int ret = traced_fd_simple(node_, fd, [&] { return real_close(fd); });
  fd_forget(fd);  // (no system call: errno stays the real call's)
  return ret;
}

off_t lseek(int fd, off_t offset, int whence) {
  DFTRACE_IO_REAL(lseek);
  DFTRACE_IO_NODE(k_posix, "lseek");
  return traced_seek(node_, fd, offset, whence, [&] { return real_lseek(fd, offset, whence); });
}

off64_t lseek64(int fd, off64_t offset, int whence) {
  DFTRACE_IO_REAL(lseek64);
  DFTRACE_IO_NODE(k_posix, "lseek64");
  return traced_seek(node_, fd, offset, whence, [&] { return real_lseek64(fd, offset, whence); });
}

int ftruncate(int fd, off_t length) {
  DFTRACE_IO_REAL(ftruncate);
  DFTRACE_IO_NODE(k_posix, "ftruncate");
  return traced_fd_call(
      node_, fd, [&] { return real_ftruncate(fd, length); },
      [&](uint64_t h, int ret) {
        return std::array<dftrace_arg_t, 4>{arg_u("fhash", h), arg_i("fd", fd),
                                            arg_i("length", length), arg_i("ret", ret)};
      });
}

// Interposers that differ only in their names and parameters.
#define DFTRACE_IO_TRANSFER(name, buf_type)                                                \
  ssize_t name(int fd, buf_type buf, size_t count) {                                       \
    DFTRACE_IO_REAL(name);                                                                 \
    DFTRACE_IO_NODE(k_posix, #name);                                                       \
    return traced_transfer(node_, fd, count, [&] { return real_##name(fd, buf, count); }); \
  }
#define DFTRACE_IO_TRANSFER_AT(name, buf_type, offset_type)                         \
  ssize_t name(int fd, buf_type buf, size_t count, offset_type offset) {            \
    DFTRACE_IO_REAL(name);                                                          \
    DFTRACE_IO_NODE(k_posix, #name);                                                \
    return traced_transfer_at(node_, fd, count, offset,                             \
                              [&] { return real_##name(fd, buf, count, offset); }); \
  }
#define DFTRACE_IO_PATH_CALL(name, params, args)                            \
  int name params {                                                         \
    DFTRACE_IO_REAL(name);                                                  \
    DFTRACE_IO_NODE(k_posix, #name);                                        \
    return traced_path_call(node_, path, [&] { return real_##name args; }); \
  }
#define DFTRACE_IO_FD_CALL(name, params, args)                            \
  int name params {                                                       \
    DFTRACE_IO_REAL(name);                                                \
    DFTRACE_IO_NODE(k_posix, #name);                                      \
    return traced_fd_simple(node_, fd, [&] { return real_##name args; }); \
  }

DFTRACE_IO_TRANSFER(read, void *)
DFTRACE_IO_TRANSFER(write, const void *)
DFTRACE_IO_TRANSFER_AT(pread, void *, off_t)
DFTRACE_IO_TRANSFER_AT(pwrite, const void *, off_t)
DFTRACE_IO_TRANSFER_AT(pread64, void *, off64_t)
DFTRACE_IO_TRANSFER_AT(pwrite64, const void *, off64_t)
DFTRACE_IO_FD_CALL(fsync, (int fd), (fd))
DFTRACE_IO_FD_CALL(fdatasync, (int fd), (fd))
DFTRACE_IO_FD_CALL(fstat, (int fd, struct stat *st), (fd, st))
DFTRACE_IO_PATH_CALL(stat, (const char *path, struct stat *st), (path, st))
DFTRACE_IO_PATH_CALL(lstat, (const char *path, struct stat *st), (path, st))
DFTRACE_IO_PATH_CALL(access, (const char *path, int mode), (path, mode))
DFTRACE_IO_PATH_CALL(mkdir, (const char *path, mode_t mode), (path, mode))
DFTRACE_IO_PATH_CALL(rmdir, (const char *path), (path))
DFTRACE_IO_PATH_CALL(unlink, (const char *path), (path))
DFTRACE_IO_PATH_CALL(truncate, (const char *path, off_t length), (path, length))
DFTRACE_IO_PATH_CALL(chmod, (const char *path, mode_t mode), (path, mode))
DFTRACE_IO_PATH_CALL(chown, (const char *path, uid_t owner, gid_t group), (path, owner, group))
DFTRACE_IO_PATH_CALL(lchown, (const char *path, uid_t owner, gid_t group), (path, owner, group))
DFTRACE_IO_PATH_CALL(utime, (const char *path, const struct utimbuf *times), (path, times))
DFTRACE_IO_PATH_CALL(utimes, (const char *path, const struct timeval times[2]), (path, times))
DFTRACE_IO_PATH_CALL(mkfifo, (const char *path, mode_t mode), (path, mode))
DFTRACE_IO_PATH_CALL(chdir, (const char *path), (path))
DFTRACE_IO_PATH_CALL(remove, (const char *path), (path))
DFTRACE_IO_PATH_CALL(rename, (const char *path, const char *to), (path, to))
DFTRACE_IO_PATH_CALL(link, (const char *path, const char *to), (path, to))
DFTRACE_IO_FD_CALL(fchmod, (int fd, mode_t mode), (fd, mode))
DFTRACE_IO_FD_CALL(fchown, (int fd, uid_t owner, gid_t group), (fd, owner, group))

// The *at forms and newer calls: the path filter sees the path as given (relative to dirfd, as
// DFTracer sees it too).
DFTRACE_IO_PATH_CALL(faccessat, (int dirfd, const char *path, int mode, int flags),
                     (dirfd, path, mode, flags))
DFTRACE_IO_PATH_CALL(fstatat, (int dirfd, const char *path, struct stat *st, int flags),
                     (dirfd, path, st, flags))
DFTRACE_IO_PATH_CALL(fstatat64, (int dirfd, const char *path, struct stat64 *st, int flags),
                     (dirfd, path, st, flags))
DFTRACE_IO_PATH_CALL(statx,
                     (int dirfd, const char *path, int flags, unsigned int mask, struct statx *st),
                     (dirfd, path, flags, mask, st))
DFTRACE_IO_PATH_CALL(symlink, (const char *path, const char *to), (path, to))
ssize_t readlink(const char *path, char *buf, size_t size) {
  DFTRACE_IO_REAL(readlink);
  DFTRACE_IO_NODE(k_posix, "readlink");
  return traced_path_call(node_, path, [&] { return real_readlink(path, buf, size); });
}
ssize_t readlinkat(int dirfd, const char *path, char *buf, size_t size) {
  DFTRACE_IO_REAL(readlinkat);
  DFTRACE_IO_NODE(k_posix, "readlinkat");
  return traced_path_call(node_, path, [&] { return real_readlinkat(dirfd, path, buf, size); });
}
DFTRACE_IO_PATH_CALL(symlinkat, (const char *path, int dirfd, const char *to), (path, dirfd, to))
DFTRACE_IO_PATH_CALL(linkat, (int fromfd, const char *path, int tofd, const char *to, int flags),
                     (fromfd, path, tofd, to, flags))
// glibc's older stat entry points (programs built against glibc < 2.33 call these).
DFTRACE_IO_PATH_CALL(__xstat, (int ver, const char *path, struct stat *st), (ver, path, st))
DFTRACE_IO_PATH_CALL(__fxstatat, (int ver, int dirfd, const char *path, struct stat *st, int flags),
                     (ver, dirfd, path, st, flags))

// _FORTIFY_SOURCE's checked entry points: the calls the program wrote, recorded under their
// plain names.
int __open_2(const char *path, int flags) {
  DFTRACE_IO_REAL(__open_2);
  DFTRACE_IO_NODE(k_posix, "open");
  return traced_open(node_, path, flags, 0, [&] { return real___open_2(path, flags); });
}

ssize_t __read_chk(int fd, void *buf, size_t count, size_t size) {
  DFTRACE_IO_REAL(__read_chk);
  DFTRACE_IO_NODE(k_posix, "read");
  return traced_transfer(node_, fd, count, [&] { return real___read_chk(fd, buf, count, size); });
}

#define DFTRACE_IO_VECTOR_AT(name, offset_type)                                 \
  ssize_t name(int fd, const struct iovec *iov, int n, offset_type offset) {    \
    DFTRACE_IO_REAL(name);                                                      \
    DFTRACE_IO_NODE(k_posix, #name);                                            \
    return traced_transfer_at(node_, fd, iov_bytes(iov, n), offset,             \
                              [&] { return real_##name(fd, iov, n, offset); }); \
  }
DFTRACE_IO_VECTOR_AT(preadv, off_t)
DFTRACE_IO_VECTOR_AT(pwritev, off_t)
DFTRACE_IO_VECTOR_AT(preadv64, off64_t)
DFTRACE_IO_VECTOR_AT(pwritev64, off64_t)

ssize_t readv(int fd, const struct iovec *iov, int n) {
  DFTRACE_IO_REAL(readv);
  DFTRACE_IO_NODE(k_posix, "readv");
  return traced_transfer(node_, fd, iov_bytes(iov, n), [&] { return real_readv(fd, iov, n); });
}

ssize_t writev(int fd, const struct iovec *iov, int n) {
  DFTRACE_IO_REAL(writev);
  DFTRACE_IO_NODE(k_posix, "writev");
  return traced_transfer(node_, fd, iov_bytes(iov, n), [&] { return real_writev(fd, iov, n); });
}

int dup(int fd) {
  DFTRACE_IO_REAL(dup);
  DFTRACE_IO_NODE(k_posix, "dup");
  return traced_dup(node_, fd, [&] { return real_dup(fd); });
}

int dup2(int fd, int to) {
  DFTRACE_IO_REAL(dup2);
  DFTRACE_IO_NODE(k_posix, "dup2");
  if (to != fd) fd_forget(to);  // `to` is closed first, whatever it was
  return traced_dup(node_, fd, [&] { return real_dup2(fd, to); });
}

int dup3(int fd, int to, int flags) {
  DFTRACE_IO_REAL(dup3);
  DFTRACE_IO_NODE(k_posix, "dup3");
  if (to != fd) fd_forget(to);
  return traced_dup(node_, fd, [&] { return real_dup3(fd, to, flags); });
}

}  // extern "C"
