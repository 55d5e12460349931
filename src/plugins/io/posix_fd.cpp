// posix_fd.cpp: the POSIX calls that open, use or close a descriptor, as events of category
// POSIX (README.md, "Events").
#include <linux/close_range.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>

#include "plugins/io/calls.hpp"

using namespace dftrace::io;

namespace {

constexpr const char *k_posix = "POSIX";

// open's mode is there only when the flags create a file.
bool has_mode(int flags) { return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE; }
mode_t mode_arg(int flags, va_list ap) {
  return has_mode(flags) ? static_cast<mode_t>(va_arg(ap, int)) : 0;
}

template <typename Call>
int traced_open(dftrace_node_t *node, int dirfd, const char *path, int flags, mode_t mode,
                Call call) {
  return traced_open_call(node, dirfd, path, call, [&](uint64_t h, int ret) {
    return std::array<dftrace_arg_t, 4>{arg_u("fhash", h), arg_i("flags", flags),
                                        arg_i("mode", mode), arg_i("ret", ret)};
  });
}

// A transfer's count: the one asked for, or (vectored calls) the sum of the buffers' lengths,
// summed only after the call succeeded (the buffer array is the application's, and may be
// what made the call fail: EFAULT, EINVAL; a failed vectored call's count is 0).
inline int64_t count_of(size_t count, ssize_t) { return static_cast<int64_t>(count); }
template <typename Count>
int64_t count_of(const Count &count, ssize_t ret) {
  return ret >= 0 ? static_cast<int64_t>(count()) : 0;
}

// read/write and their positioned forms: fhash, fd, count, ret (and offset).
template <typename Call, typename Count>
ssize_t traced_transfer(dftrace_node_t *node, int fd, Count count, Call call) {
  return traced_fd_call(node, fd, call, [&](uint64_t h, ssize_t ret) {
    return std::array<dftrace_arg_t, 4>{arg_u("fhash", h), arg_i("fd", fd),
                                        arg_i("count", count_of(count, ret)), arg_i("ret", ret)};
  });
}
template <typename Call, typename Count>
ssize_t traced_transfer_at(dftrace_node_t *node, int fd, Count count, off64_t offset, Call call) {
  return traced_fd_call(node, fd, call, [&](uint64_t h, ssize_t ret) {
    return std::array<dftrace_arg_t, 5>{arg_u("fhash", h), arg_i("fd", fd),
                                        arg_i("count", count_of(count, ret)),
                                        arg_i("offset", offset), arg_i("ret", ret)};
  });
}

// fsync, fdatasync, fstat, fchmod, ...: fhash, fd, ret.
template <typename Call>
auto traced_fd_simple(dftrace_node_t *node, int fd, Call call) -> decltype(call()) {
  return traced_fd_call(node, fd, call, [&](uint64_t h, auto ret) {
    return std::array<dftrace_arg_t, 3>{arg_u("fhash", h), arg_i("fd", fd),
                                        arg_i("ret", static_cast<int64_t>(ret))};
  });
}

template <typename Call>
off64_t traced_seek(dftrace_node_t *node, int fd, off64_t offset, int whence, Call call) {
  return traced_fd_call(node, fd, call, [&](uint64_t h, off64_t ret) {
    return std::array<dftrace_arg_t, 5>{arg_u("fhash", h), arg_i("fd", fd), arg_i("offset", offset),
                                        arg_i("whence", whence), arg_i("ret", ret)};
  });
}

template <typename Call>
int traced_truncate(dftrace_node_t *node, int fd, off64_t length, Call call) {
  return traced_fd_call(node, fd, call, [&](uint64_t h, int ret) {
    return std::array<dftrace_arg_t, 4>{arg_u("fhash", h), arg_i("fd", fd), arg_i("length", length),
                                        arg_i("ret", ret)};
  });
}

// Vectored transfers: count is the sum of the buffers' lengths.
size_t iov_bytes(const struct iovec *iov, int n) {
  size_t b = 0;
  for (int i = 0; iov && i < n; ++i) b += iov[i].iov_len;
  return b;
}

// The new descriptor `to` of a dup (or F_DUPFD) of `fd`: traced as fd's file when fd is. A vfork
// child shares the parent's table, whose `to` is another file: it leaves the table alone.
void follow_duplicate(int fd, int to) {
  if (to < 0 || to == fd) return;
  uint64_t h;
  errno_keeper keep;
  if (fd_hash(fd, &h)) {
    if (!in_vfork_child()) fd_track(to, h);
  } else {
    fd_forget(to);
  }
}

template <typename Call>
int traced_dup(dftrace_node_t *node, int fd, Call call) {
  const int ret = traced_fd_simple(node, fd, call);
  follow_duplicate(fd, ret);
  return ret;
}

// A close: traced when the descriptor is; its number is forgotten (benign in a vfork child: the
// parent's descriptor is looked up again on its next use).
template <typename Call>
int traced_close(dftrace_node_t *node, int fd, Call call) {
  uint64_t h;
  if (recording(node) && fd_hash(fd, &h) && in_vfork_child()) return call();
  const int ret = traced_fd_simple(node, fd, call);
  fd_forget(fd);  // (no system call: errno stays the real call's)
  return ret;
}

// mmap of a traced file: fhash, fd, length, prot, flags, offset; the map is followed so that its
// munmap and msync are traced.
template <typename Call>
void *traced_mmap(dftrace_node_t *node, size_t length, int prot, int flags, int fd, off64_t offset,
                  Call call) {
  if (fd < 0 || (flags & MAP_ANONYMOUS)) {
    void *p = call();
    if (p != MAP_FAILED && (flags & MAP_FIXED)) map_forget_range(p, length);  // replaced maps
    return p;
  }
  uint64_t h = 0;
  void *p = traced_fd_call(node, fd, call, [&](uint64_t hash, void *) {
    h = hash;
    return std::array<dftrace_arg_t, 6>{
        arg_u("fhash", hash), arg_i("fd", fd),       arg_i("length", static_cast<int64_t>(length)),
        arg_i("prot", prot),  arg_i("flags", flags), arg_i("offset", offset)};
  });
  if (p != MAP_FAILED && (flags & MAP_FIXED)) map_forget_range(p, length);  // replaced maps
  if (h && p != MAP_FAILED) map_track(p, length, h);
  return p;
}

// fcntl's third argument: an int or a pointer, passed on as the word it came in (as glibc reads
// it); F_DUPFD and F_DUPFD_CLOEXEC make a duplicate (made again after EMFILE, as dup).
template <typename Call>
int traced_fcntl(dftrace_node_t *node, int fd, int cmd, Call call) {
  const bool dup = cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC;
  const auto made = [&] { return dup ? retry_after_trace_write(call) : call(); };
  const int ret = traced_fd_call(node, fd, made, [&](uint64_t h, int r) {
    return std::array<dftrace_arg_t, 4>{arg_u("fhash", h), arg_i("fd", fd), arg_i("cmd", cmd),
                                        arg_i("ret", r)};
  });
  if (dup) follow_duplicate(fd, ret);
  return ret;
}

// In-kernel copies (cp's copy_file_range, sendfile, splice): traced when either end is a traced
// file. fhash is the source's when it is traced, else the target's; from_hash and to_hash name
// each end that is traced (the analysis counts `ret` as read from the one, written to the
// other); offset and to_offset are where the call read and wrote (-1: at, and moving, the
// descriptor's offset). Each set of ends traced is its own call site (its own keys).
template <typename Call>
ssize_t traced_copy(dftrace_node_t *node, int from, off64_t from_at, int to, off64_t to_at,
                    size_t count, Call call) {
  if (!recording(node)) return call();
  uint64_t hf = 0, ht = 0;
  const bool f = fd_hash(from, &hf), t = fd_hash(to, &ht);
  if (!f && !t) return call();
  const int64_t n = static_cast<int64_t>(count);
  if (f && t)
    return traced(node, call, [&](ssize_t ret) {
      return std::array<dftrace_arg_t, 9>{
          arg_u("fhash", hf),       arg_u("from_hash", hf),    arg_u("to_hash", ht),
          arg_i("fd", from),        arg_i("to_fd", to),        arg_i("count", n),
          arg_i("offset", from_at), arg_i("to_offset", to_at), arg_i("ret", ret)};
    });
  if (f)
    return traced(node, call, [&](ssize_t ret) {
      return std::array<dftrace_arg_t, 8>{arg_u("fhash", hf),        arg_u("from_hash", hf),
                                          arg_i("fd", from),         arg_i("to_fd", to),
                                          arg_i("count", n),         arg_i("offset", from_at),
                                          arg_i("to_offset", to_at), arg_i("ret", ret)};
    });
  return traced(node, call, [&](ssize_t ret) {
    return std::array<dftrace_arg_t, 8>{
        arg_u("fhash", ht), arg_u("to_hash", ht),     arg_i("fd", from),         arg_i("to_fd", to),
        arg_i("count", n),  arg_i("offset", from_at), arg_i("to_offset", to_at), arg_i("ret", ret)};
  });
}

// Where a copy reads or writes: the offset the caller gave, or -1 (the descriptor's).
template <typename Offset>
off64_t at_of(const Offset *p) {
  return p ? static_cast<off64_t>(*p) : -1;
}

// The trace's descriptor is not the program's: for it, the call fails as on a number that is
// not open.
int not_open() {
  errno = EBADF;
  return -1;
}

// Before a dup2 or dup3 of `fd` onto `to`: false when `fd` is the trace's descriptor; when `to`
// is, the trace moves to another number first, so that the program's call puts its file there
// as on a number that was free.
bool dup_onto_allowed(int fd, int to) {
  if (__builtin_expect(is_trace_fd(fd) || is_trace_fd(to), 0)) {
    if (is_trace_fd(fd)) return false;
    inside g;
    errno_keeper keep;
    dftrace_trace_fd_release(to);
  }
  return true;
}

}  // namespace

extern "C" {

// open's optional mode, read from the variadic arguments after `flags`.
#define DFTRACE_IO_MODE_FROM_VARARGS(flags) \
  va_list ap;                               \
  va_start(ap, flags);                      \
  const mode_t mode = mode_arg(flags, ap);  \
  va_end(ap)

#define DFTRACE_IO_SHAPE_OPEN(cat, name, event, ...)                    \
  int name(const char *path, int flags, ...) {                          \
    DFTRACE_IO_REAL(name);                                              \
    DFTRACE_IO_MODE_FROM_VARARGS(flags);                                \
    DFTRACE_IO_NODE(cat, event);                                        \
    return traced_open(node_, AT_FDCWD, path, flags, mode,              \
                       [&] { return real_##name(path, flags, mode); }); \
  }                                                                     \
  DFTRACE_IO_REGISTER(name);

#define DFTRACE_IO_SHAPE_OPENAT(cat, name, event, ...)                                    \
  int name(int dirfd, const char *path, int flags, ...) {                                 \
    DFTRACE_IO_REAL(name);                                                                \
    DFTRACE_IO_MODE_FROM_VARARGS(flags);                                                  \
    DFTRACE_IO_NODE(cat, event);                                                          \
    return traced_open_call(                                                              \
        node_, dirfd, path, [&] { return real_##name(dirfd, path, flags, mode); },        \
        [&](uint64_t h, int ret) {                                                        \
          return std::array<dftrace_arg_t, 5>{arg_u("fhash", h), arg_i("dirfd", dirfd),   \
                                              arg_i("flags", flags), arg_i("mode", mode), \
                                              arg_i("ret", ret)};                         \
        });                                                                               \
  }                                                                                       \
  DFTRACE_IO_REGISTER(name);

#define DFTRACE_IO_SHAPE_CREAT(cat, name, event, ...)                                             \
  DFTRACE_IO_DEFINE(cat, name, event, int, (const char *path, mode_t mode),                       \
                    return traced_open(node_, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, \
                                       [&] { return real_##name(path, mode); });)

// _FORTIFY_SOURCE's checked entry points: the calls the program wrote, recorded under their
// plain names (the mode is not passed: these are only called without O_CREAT).
#define DFTRACE_IO_SHAPE_OPEN_2(cat, name, event, ...)                    \
  DFTRACE_IO_DEFINE(cat, name, event, int, (const char *path, int flags), \
                    return traced_open(node_, AT_FDCWD, path, flags, 0,   \
                                       [&] { return real_##name(path, flags); });)
#define DFTRACE_IO_SHAPE_OPENAT_2(cat, name, event, ...)                             \
  DFTRACE_IO_DEFINE(cat, name, event, int, (int dirfd, const char *path, int flags), \
                    return traced_open(node_, dirfd, path, flags, 0,                 \
                                       [&] { return real_##name(dirfd, path, flags); });)

int close(int fd) {
  DFTRACE_IO_REAL(close);
  if (is_trace_fd(fd)) return not_open();
  DFTRACE_IO_NODE(k_posix, "close");
  return traced_close(node_, fd, [&] { return real_close(fd); });
}

// close_range and closefrom (glibc 2.34; Python's os.closerange and subprocess use them) close
// descriptors the interposer would otherwise believe open: their numbers are forgotten (no
// event: DFTracer records none). A vfork child's close only its copies: the parent's table
// stays. (On a C library without them, next_symbol makes the call fail with ENOSYS.)
// The trace's descriptor is left open (CLOSE_RANGE_CLOEXEC on it changes nothing: it has
// FD_CLOEXEC): the range is closed in two parts around it.
int close_range(unsigned first, unsigned last, int flags) {
  DFTRACE_IO_REAL(close_range);
  const int t = __atomic_load_n(g_trace_fd_at, __ATOMIC_RELAXED);
  int ret;
  if (__builtin_expect(t >= 0 && first <= static_cast<unsigned>(t) &&
                           static_cast<unsigned>(t) <= last && first <= last,
                       0)) {
    ret = static_cast<unsigned>(t) > first ? real_close_range(first, t - 1, flags) : 0;
    if (ret == 0 && static_cast<unsigned>(t) < last) ret = real_close_range(t + 1, last, flags);
  } else {
    ret = real_close_range(first, last, flags);
  }
  if (ret == 0 && !(flags & CLOSE_RANGE_CLOEXEC) && !in_vfork_child())
    fd_forget_range(static_cast<int>(std::min(first, 1u << 30)),
                    static_cast<int>(std::min(last, 1u << 30)));
  return ret;
}

void closefrom(int lowfd) {
  DFTRACE_IO_REAL(closefrom);
  const int t = __atomic_load_n(g_trace_fd_at, __ATOMIC_RELAXED);
  if (__builtin_expect(t >= 0 && t >= lowfd, 0)) {
    // below the trace's descriptor, then above it
    const int low = std::max(lowfd, 0);
#ifdef SYS_close_range
    const bool ranged = t <= low || ::syscall(SYS_close_range, low, t - 1, 0) == 0;
#else
    const bool ranged = t <= low;
#endif
    if (!ranged) {
      DFTRACE_IO_REAL(close);
      for (int fd = low; fd < t; ++fd) real_close(fd);  // a kernel without close_range
    }
    real_closefrom(t + 1);
  } else {
    real_closefrom(lowfd);
  }
  if (!in_vfork_child()) fd_forget_range(std::max(lowfd, 0), 1 << 30);
}

// The body of a wrapper on fd whose traced path runs out of line (interpose.hpp: out_of_line):
// the pass-through when fd is not traced, else slow(node_, real_##name, fd, args...).
#define DFTRACE_IO_FD_OUT_OF_LINE(name, slow, ...)      \
  DFTRACE_IO_PASS_FD(fd, real_##name(fd, __VA_ARGS__)); \
  return out_of_line(slow, node_, real_##name, fd, __VA_ARGS__);

#define DFTRACE_IO_SHAPE_TRANSFER(cat, name, event, buf_type)                                     \
  DFTRACE_IO_DEFINE(                                                                              \
      cat, name, event, ssize_t, (int fd, buf_type buf, size_t count),                            \
      DFTRACE_IO_FD_OUT_OF_LINE(                                                                  \
          name, ([](dftrace_node_t *n, decltype(real_##name) real, int d, buf_type b, size_t c) { \
            return traced_transfer(n, d, c, [&] { return real(d, b, c); });                       \
          }),                                                                                     \
          buf, count))

#define DFTRACE_IO_SHAPE_TRANSFER_AT(cat, name, event, buf_type, offset_type)                      \
  DFTRACE_IO_DEFINE(cat, name, event, ssize_t,                                                     \
                    (int fd, buf_type buf, size_t count, offset_type offset),                      \
                    DFTRACE_IO_FD_OUT_OF_LINE(name,                                                \
                                              ([](dftrace_node_t *n, decltype(real_##name) real,   \
                                                  int d, buf_type b, size_t c, offset_type o) {    \
                                                return traced_transfer_at(                         \
                                                    n, d, c, o, [&] { return real(d, b, c, o); }); \
                                              }),                                                  \
                                              buf, count, offset))

// The checked reads of _FORTIFY_SOURCE, recorded under the names the program wrote.
ssize_t __read_chk(int fd, void *buf, size_t count, size_t size) {
  DFTRACE_IO_REAL(__read_chk);
  DFTRACE_IO_NODE(k_posix, "read");
  DFTRACE_IO_PASS_FD(fd, real___read_chk(fd, buf, count, size));
  return traced_transfer(node_, fd, count, [&] { return real___read_chk(fd, buf, count, size); });
}
#define DFTRACE_IO_SHAPE_PREAD_CHK(cat, name, event, offset_type)                       \
  DFTRACE_IO_DEFINE(cat, name, event, ssize_t,                                          \
                    (int fd, void *buf, size_t count, offset_type offset, size_t size), \
                    DFTRACE_IO_PASS_FD(fd, real_##name(fd, buf, count, offset, size));  \
                    return traced_transfer_at(node_, fd, count, offset, [&] {           \
                      return real_##name(fd, buf, count, offset, size);                 \
                    });)

#define DFTRACE_IO_SHAPE_VECTOR(cat, name, event, ...)                     \
  DFTRACE_IO_DEFINE(                                                       \
      cat, name, event, ssize_t, (int fd, const struct iovec *iov, int n), \
      DFTRACE_IO_PASS_FD(fd, real_##name(fd, iov, n));                     \
      return traced_transfer(                                              \
          node_, fd, [&] { return iov_bytes(iov, n); }, [&] { return real_##name(fd, iov, n); });)

#define DFTRACE_IO_SHAPE_VECTOR_AT(cat, name, event, offset_type)                 \
  DFTRACE_IO_DEFINE(cat, name, event, ssize_t,                                    \
                    (int fd, const struct iovec *iov, int n, offset_type offset), \
                    DFTRACE_IO_PASS_FD(fd, real_##name(fd, iov, n, offset));      \
                    return traced_transfer_at(                                    \
                        node_, fd, [&] { return iov_bytes(iov, n); }, offset,     \
                        [&] { return real_##name(fd, iov, n, offset); });)
#define DFTRACE_IO_SHAPE_VECTOR_AT2(cat, name, event, offset_type)                           \
  DFTRACE_IO_DEFINE(cat, name, event, ssize_t,                                               \
                    (int fd, const struct iovec *iov, int n, offset_type offset, int flags), \
                    DFTRACE_IO_PASS_FD(fd, real_##name(fd, iov, n, offset, flags));          \
                    return traced_transfer_at(                                               \
                        node_, fd, [&] { return iov_bytes(iov, n); }, offset,                \
                        [&] { return real_##name(fd, iov, n, offset, flags); });)

ssize_t copy_file_range(int from, off64_t *from_off, int to, off64_t *to_off, size_t count,
                        unsigned int flags) {
  DFTRACE_IO_REAL(copy_file_range);
  DFTRACE_IO_NODE(k_posix, "copy_file_range");
  return traced_copy(node_, from, at_of(from_off), to, at_of(to_off), count, [&] {
    return real_copy_file_range(from, from_off, to, to_off, count, flags);
  });
}

// splice: one end is a pipe (never a traced file), the other a file read or written.
ssize_t splice(int from, off64_t *from_off, int to, off64_t *to_off, size_t count,
               unsigned int flags) {
  DFTRACE_IO_REAL(splice);
  DFTRACE_IO_NODE(k_posix, "splice");
  return traced_copy(node_, from, at_of(from_off), to, at_of(to_off), count,
                     [&] { return real_splice(from, from_off, to, to_off, count, flags); });
}

#define DFTRACE_IO_SHAPE_SENDFILE(cat, name, event, offset_type)                  \
  DFTRACE_IO_DEFINE(cat, name, event, ssize_t,                                    \
                    (int to, int from, offset_type *offset, size_t count),        \
                    return traced_copy(node_, from, at_of(offset), to, -1, count, \
                                       [&] { return real_##name(to, from, offset, count); });)

#define DFTRACE_IO_SHAPE_SEEK(cat, name, event, offset_type)                                      \
  DFTRACE_IO_DEFINE(                                                                              \
      cat, name, event, offset_type, (int fd, offset_type offset, int whence),                    \
      DFTRACE_IO_FD_OUT_OF_LINE(                                                                  \
          name, ([](dftrace_node_t *n, decltype(real_##name) real, int d, offset_type o, int w) { \
            return traced_seek(n, d, o, w, [&] { return real(d, o, w); });                        \
          }),                                                                                     \
          offset, whence))

#define DFTRACE_IO_SHAPE_FTRUNCATE(cat, name, event, offset_type) \
  DFTRACE_IO_DEFINE(                                              \
      cat, name, event, int, (int fd, offset_type length),        \
      return traced_truncate(node_, fd, length, [&] { return real_##name(fd, length); });)

#define DFTRACE_IO_SHAPE_FD_CALL(cat, name, event, params, args)                             \
  DFTRACE_IO_DEFINE(cat, name, event, int, params, DFTRACE_IO_PASS_FD(fd, real_##name args); \
                    return traced_fd_simple(node_, fd, [&] { return real_##name args; });)

int dup(int fd) {
  DFTRACE_IO_REAL(dup);
  if (is_trace_fd(fd)) return not_open();
  DFTRACE_IO_NODE(k_posix, "dup");
  return traced_dup(node_, fd,
                    [&] { return retry_after_trace_write([&] { return real_dup(fd); }); });
}

// A dup2 or dup3 onto the trace's descriptor moves the trace first (dup_onto_allowed).
int dup2(int fd, int to) {
  DFTRACE_IO_REAL(dup2);
  if (!dup_onto_allowed(fd, to)) return not_open();
  DFTRACE_IO_NODE(k_posix, "dup2");
  return traced_dup(node_, fd, [&] { return real_dup2(fd, to); });
}

int dup3(int fd, int to, int flags) {
  DFTRACE_IO_REAL(dup3);
  if (!dup_onto_allowed(fd, to)) return not_open();
  DFTRACE_IO_NODE(k_posix, "dup3");
  return traced_dup(node_, fd, [&] { return real_dup3(fd, to, flags); });
}

#define DFTRACE_IO_SHAPE_FCNTL(cat, name, event, ...)                               \
  int name(int fd, int cmd, ...) {                                                  \
    DFTRACE_IO_REAL(name);                                                          \
    va_list ap;                                                                     \
    va_start(ap, cmd);                                                              \
    void *arg = va_arg(ap, void *);                                                 \
    va_end(ap);                                                                     \
    if (::dftrace::io::is_trace_fd(fd)) return not_open();                          \
    DFTRACE_IO_NODE(cat, event);                                                    \
    return traced_fcntl(node_, fd, cmd, [&] { return real_##name(fd, cmd, arg); }); \
  }                                                                                 \
  DFTRACE_IO_REGISTER(name);

#define DFTRACE_IO_SHAPE_MMAP(cat, name, event, offset_type)                                      \
  DFTRACE_IO_DEFINE(cat, name, event, void *,                                                     \
                    (void *addr, size_t length, int prot, int flags, int fd, offset_type offset), \
                    return traced_mmap(node_, length, prot, flags, fd, offset, [&] {              \
                      return real_##name(addr, length, prot, flags, fd, offset);                  \
                    });)

// munmap and msync of a map of a traced file: fhash, length, ret (and flags). munmap is also how
// malloc returns memory: one load decides when no traced file is mapped.
int munmap(void *addr, size_t length) {
  DFTRACE_IO_REAL(munmap);
  DFTRACE_IO_NODE(k_posix, "munmap");
  uint64_t h;
  int ret;
  if (!recording(node_) || !map_hash(addr, true, &h)) {
    ret = real_munmap(addr, length);
  } else {
    ret = traced(
        node_, [&] { return real_munmap(addr, length); },
        [&](int r) {
          return std::array<dftrace_arg_t, 3>{
              arg_u("fhash", h), arg_i("length", static_cast<int64_t>(length)), arg_i("ret", r)};
        });
  }
  // Every map starting in the range is gone, traced or not (an address reused by malloc's next
  // map must not be taken for the file's). (no system call: errno stays the real call's)
  if (ret == 0) map_forget_range(addr, length);
  return ret;
}

int msync(void *addr, size_t length, int flags) {
  DFTRACE_IO_REAL(msync);
  DFTRACE_IO_NODE(k_posix, "msync");
  uint64_t h;
  if (!recording(node_) || !map_hash(addr, false, &h)) return real_msync(addr, length, flags);
  return traced(
      node_, [&] { return real_msync(addr, length, flags); },
      [&](int r) {
        return std::array<dftrace_arg_t, 4>{arg_u("fhash", h),
                                            arg_i("length", static_cast<int64_t>(length)),
                                            arg_i("flags", flags), arg_i("ret", r)};
      });
}

// The wrappers of the table's rows written here, and the registry's entries of those above.
#define DFTRACE_IO_SHAPE_FD_OWN(cat, name, ...) DFTRACE_IO_REGISTER(name);
#include "plugins/io/shapes.hpp"
#define DFTRACE_IO_CALL DFTRACE_IO_WRAPPER
#include "dftrace/io_calls.def"

}  // extern "C"
