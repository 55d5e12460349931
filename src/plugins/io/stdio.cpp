// stdio.cpp: the STDIO calls of the application, as events of category STDIO (README.md). A
// stream is traced as its descriptor is (fileno): fdopen's stream, a stream opened before the
// interposer bound, and stdin or stdout redirected to a data file all follow their file.
#include <stdio.h>

#include <type_traits>

#include "plugins/io/calls.hpp"
#include "plugins/io/stdio_fold.hpp"

using namespace dftrace::io;

namespace {

constexpr const char *k_stdio = "STDIO";

// The stream's descriptor, when it has one (fmemopen's and fopencookie's have none: fileno then
// sets errno, which stays the application's).
int stream_fd(FILE *f) {
  if (!f) return -1;
  const int saved = errno;
  const int fd = ::fileno_unlocked(f);
  errno = saved;
  return fd;
}

// An opening call: traced when its path is; the stream's descriptor is followed either way.
template <typename Call>
FILE *traced_fopen(dftrace_node_t *node, const char *path, const char *mode, Call call) {
  return traced_opening(
      node, AT_FDCWD, path, call,
      [&](uint64_t h, FILE *) {
        return std::array<dftrace_arg_t, 2>{arg_u("fhash", h), arg_s("mode", mode)};
      },
      stream_fd);
}

// A call on a stream: traced when its descriptor is.
template <typename Call, typename Args>
auto traced_stream_call(dftrace_node_t *node, FILE *f, Call call, Args args) -> decltype(call()) {
  if (!recording(node)) return call();
  uint64_t h;
  if (!fd_hash(stream_fd(f), &h)) return call();
  return traced(node, call, [&](auto ret) { return args(h, ret); });
}

// fread/fwrite: fhash, size, count, ret (items), as DFTracer writes them. `Reads` (fread): the
// bytes pushed back by ungetc that it reads again are taken off the stream's folded reads.
template <bool Reads, typename Call>
size_t traced_items(dftrace_node_t *node, FILE *f, size_t size, size_t count, Call call) {
  const size_t ret = traced_stream_call(node, f, call, [&](uint64_t h, size_t ret) {
    return std::array<dftrace_arg_t, 4>{
        arg_u("fhash", h), arg_i("size", static_cast<int64_t>(size)),
        arg_i("count", static_cast<int64_t>(count)), arg_i("ret", static_cast<int64_t>(ret))};
  });
  if (Reads && __builtin_expect(fold_any_unread(), 0)) fold_fread_unread(f, ret * size);
  return ret;
}

// fflush, ftell: fhash, ret.
template <typename Call>
auto traced_stream_simple(dftrace_node_t *node, FILE *f, Call call) -> decltype(call()) {
  return traced_stream_call(node, f, call, [&](uint64_t h, auto ret) {
    return std::array<dftrace_arg_t, 2>{arg_u("fhash", h), arg_i("ret", static_cast<int64_t>(ret))};
  });
}

template <typename Call>
int traced_fseek(dftrace_node_t *node, FILE *f, int64_t offset, int whence, Call call) {
  fold_forget_unread(f);  // its pushback is discarded (stdio_fold.hpp)
  return traced_stream_call(node, f, call, [&](uint64_t h, int ret) {
    return std::array<dftrace_arg_t, 4>{arg_u("fhash", h), arg_i("offset", offset),
                                        arg_i("whence", whence), arg_i("ret", ret)};
  });
}

// The stream now reads or writes `path`: traced as that file (or no longer traced). With no
// path, the same file in another mode: traced as the stream was, and still followed.
template <typename Call>
FILE *traced_reopen(dftrace_node_t *node, const char *path, const char *mode, FILE *f, Call call) {
  fold_flush_stream(f, true);  // its folded calls were on the file it had
  if (path) {
    fd_forget(stream_fd(f));
    return traced_fopen(node, path, mode, call);
  }
  const int fd = stream_fd(f);
  FILE *ret = traced_stream_call(node, f, call, [&](uint64_t h, FILE *) {
    return std::array<dftrace_arg_t, 2>{arg_u("fhash", h), arg_s("mode", mode)};
  });
  const int now = stream_fd(ret);
  if (now != fd) {  // another number (glibc keeps it): looked up again at its next use
    fd_forget(fd);
    fd_forget(now);
  }
  return ret;
}

}  // namespace

extern "C" {

size_t __fread_unlocked_chk(void *buf, size_t room, size_t size, size_t count, FILE *f);

#define DFTRACE_IO_SHAPE_FOPEN(cat, name, event, ...)                 \
  DFTRACE_IO_DEFINE(                                                  \
      cat, name, event, FILE *, (const char *path, const char *mode), \
      return traced_fopen(node_, path, mode, [&] { return real_##name(path, mode); });)

int fclose(FILE *f) {
  DFTRACE_IO_REAL(fclose);
  DFTRACE_IO_NODE(k_stdio, "fclose");
  // The stream's descriptor closes with it (inside libc): forgotten too, so that its number,
  // reused by another file, is not taken for this one.
  const int fd = stream_fd(f);
  fold_flush_stream(f, true);  // its folded calls first (stdio_fold.hpp)
  const int ret = traced_stream_simple(node_, f, [&] { return real_fclose(f); });
  fd_forget(fd);  // (no system call: errno stays the real call's)
  return ret;
}

// pclose closes its pipe's descriptor inside libc: the number is forgotten.
int pclose(FILE *f) {
  DFTRACE_IO_REAL(pclose);
  const int fd = stream_fd(f);
  const int ret = real_pclose(f);
  if (!in_vfork_child()) fd_forget(fd);  // (errno kept)
  return ret;
}

// A stream on a traced descriptor is traced as its file.
FILE *fdopen(int fd, const char *mode) {
  DFTRACE_IO_REAL(fdopen);
  DFTRACE_IO_NODE(k_stdio, "fdopen");
  return traced_fd_call(
      node_, fd, [&] { return real_fdopen(fd, mode); },
      [&](uint64_t h, FILE *) {
        return std::array<dftrace_arg_t, 3>{arg_u("fhash", h), arg_i("fd", fd),
                                            arg_s("mode", mode)};
      });
}

// The stream now reads or writes `path` (traced_reopen above).
#define DFTRACE_IO_SHAPE_FREOPEN(cat, name, event, ...)                        \
  DFTRACE_IO_DEFINE(                                                           \
      cat, name, event, FILE *, (const char *path, const char *mode, FILE *f), \
      return traced_reopen(node_, path, mode, f, [&] { return real_##name(path, mode, f); });)

// fread, fwrite and their forms without the stream's lock: fhash, size, count, ret (items).
#define DFTRACE_IO_SHAPE_ITEMS(cat, name, event, buf_type)                                         \
  DFTRACE_IO_DEFINE(cat, name, event, size_t, (buf_type buf, size_t size, size_t count, FILE * f), \
                    DFTRACE_IO_PASS(real_##name(buf, size, count, f));                             \
                    return traced_items<!std::is_const_v<std::remove_pointer_t<buf_type>>>(        \
                        node_, f, size, count, [&] { return real_##name(buf, size, count, f); });)
// _FORTIFY_SOURCE's checked freads, recorded as fread.
#define DFTRACE_IO_SHAPE_ITEMS_CHK(cat, name, event, ...)                                     \
  DFTRACE_IO_DEFINE(                                                                          \
      cat, name, event, size_t, (void *buf, size_t room, size_t size, size_t count, FILE *f), \
      DFTRACE_IO_PASS(real_##name(buf, room, size, count, f));                                \
      return traced_items<true>(node_, f, size, count,                                        \
                                [&] { return real_##name(buf, room, size, count, f); });)

#define DFTRACE_IO_SHAPE_FSEEKO(cat, name, event, offset_type)                         \
  DFTRACE_IO_DEFINE(cat, name, event, int, (FILE * f, offset_type offset, int whence), \
                    return traced_fseek(node_, f, offset, whence,                      \
                                        [&] { return real_##name(f, offset, whence); });)

#define DFTRACE_IO_SHAPE_FTELL(cat, name, event, result_type)  \
  DFTRACE_IO_DEFINE(cat, name, event, result_type, (FILE * f), \
                    return traced_stream_simple(node_, f, [&] { return real_##name(f); });)

int fflush(FILE *f) {
  DFTRACE_IO_REAL(fflush);
  DFTRACE_IO_NODE(k_stdio, "fflush");
  fold_flush_stream(f, false);  // its folded calls (null: every stream's) first
  return traced_stream_simple(node_, f, [&] { return real_fflush(f); });
}

// The wrappers of the table's rows written here, and the registry's entries of those above.
#define DFTRACE_IO_SHAPE_STDIO_OWN(cat, name, ...) DFTRACE_IO_REGISTER(name);
#include "plugins/io/shapes.hpp"
#define DFTRACE_IO_CALL DFTRACE_IO_WRAPPER
#include "dftrace/io_calls.def"

}  // extern "C"
