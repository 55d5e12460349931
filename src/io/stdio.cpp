// stdio.cpp: the STDIO calls of the application, as events of category STDIO (README.md).
#include <stdio.h>

#include "io/interpose.hpp"

using namespace dftrace::io;

namespace {

constexpr const char *k_stdio = "STDIO";

// An opening call: traced when its path is; the stream it returns is tracked.
template <typename Call>
FILE *traced_fopen(dftrace_node_t *node, const char *path, const char *mode, Call call) {
  if (!recording(node) || !traced_path(path)) return call();
  const uint64_t h = file_hash(path);
  FILE *f = traced(node, call, [&](FILE *) {
    return std::array<dftrace_arg_t, 2>{arg_u("fhash", h), arg_s("mode", mode)};
  });
  if (f) {
    stream_track(f, h);  // (no system call: errno stays the real call's)
  }
  return f;
}

// A call on a stream: traced when the stream is.
template <typename Call, typename Args>
auto traced_stream_call(dftrace_node_t *node, FILE *f, Call call, Args args) -> decltype(call()) {
  if (!recording(node)) return call();
  uint64_t h;
  if (!stream_hash(f, &h)) return call();
  return traced(node, call, [&](auto ret) { return args(h, ret); });
}

// fread/fwrite: fhash, size, count, ret (items), as DFTracer writes them.
template <typename Call>
size_t traced_items(dftrace_node_t *node, FILE *f, size_t size, size_t count, Call call) {
  return traced_stream_call(node, f, call, [&](uint64_t h, size_t ret) {
    return std::array<dftrace_arg_t, 4>{
        arg_u("fhash", h), arg_i("size", static_cast<int64_t>(size)),
        arg_i("count", static_cast<int64_t>(count)), arg_i("ret", static_cast<int64_t>(ret))};
  });
}

// fclose, fflush, ftell: fhash, ret.
template <typename Call>
auto traced_stream_simple(dftrace_node_t *node, FILE *f, Call call) -> decltype(call()) {
  return traced_stream_call(node, f, call, [&](uint64_t h, auto ret) {
    return std::array<dftrace_arg_t, 2>{arg_u("fhash", h), arg_i("ret", static_cast<int64_t>(ret))};
  });
}

}  // namespace

extern "C" {

#define DFTRACE_IO_FOPEN(name)                                                       \
  FILE *name(const char *path, const char *mode) {                                   \
    DFTRACE_IO_REAL(name);                                                           \
    DFTRACE_IO_NODE(k_stdio, #name);                                                 \
    return traced_fopen(node_, path, mode, [&] { return real_##name(path, mode); }); \
  }
DFTRACE_IO_FOPEN(fopen)
DFTRACE_IO_FOPEN(fopen64)

int fclose(FILE *f) {
  DFTRACE_IO_REAL(fclose);
  DFTRACE_IO_NODE(k_stdio, "fclose");
  // The stream's descriptor closes with it (inside libc): forgotten too, so that its number,
  // reused by an untraced file, is not taken for this one.
  uint64_t h;
  const int fd = f && stream_hash(f, &h) ? fileno(f) : -1;
  const int ret = traced_stream_simple(node_, f, [&] { return real_fclose(f); });
  stream_forget(f);  // (no system call: errno stays the real call's)
  if (fd >= 0) fd_forget(fd);
  return ret;
}

// A stream on a traced descriptor is traced as its file.
FILE *fdopen(int fd, const char *mode) {
  DFTRACE_IO_REAL(fdopen);
  DFTRACE_IO_NODE(k_stdio, "fdopen");
  uint64_t h;
  if (!recording(node_) || !fd_hash(fd, &h)) return real_fdopen(fd, mode);
  FILE *f = traced(
      node_, [&] { return real_fdopen(fd, mode); },
      [&](FILE *) {
        return std::array<dftrace_arg_t, 3>{arg_u("fhash", h), arg_i("fd", fd),
                                            arg_s("mode", mode)};
      });
  if (f) stream_track(f, h);
  return f;
}

// The stream now reads or writes `path`: traced as that file (or no longer traced).
FILE *freopen(const char *path, const char *mode, FILE *f) {
  DFTRACE_IO_REAL(freopen);
  DFTRACE_IO_NODE(k_stdio, "freopen");
  stream_forget(f);
  return traced_fopen(node_, path, mode, [&] { return real_freopen(path, mode, f); });
}

size_t fread(void *buf, size_t size, size_t count, FILE *f) {
  DFTRACE_IO_REAL(fread);
  DFTRACE_IO_NODE(k_stdio, "fread");
  return traced_items(node_, f, size, count, [&] { return real_fread(buf, size, count, f); });
}

size_t fwrite(const void *buf, size_t size, size_t count, FILE *f) {
  DFTRACE_IO_REAL(fwrite);
  DFTRACE_IO_NODE(k_stdio, "fwrite");
  return traced_items(node_, f, size, count, [&] { return real_fwrite(buf, size, count, f); });
}

int fseek(FILE *f, long offset, int whence) {
  DFTRACE_IO_REAL(fseek);
  DFTRACE_IO_NODE(k_stdio, "fseek");
  return traced_stream_call(
      node_, f, [&] { return real_fseek(f, offset, whence); },
      [&](uint64_t h, int ret) {
        return std::array<dftrace_arg_t, 4>{arg_u("fhash", h), arg_i("offset", offset),
                                            arg_i("whence", whence), arg_i("ret", ret)};
      });
}

long ftell(FILE *f) {
  DFTRACE_IO_REAL(ftell);
  DFTRACE_IO_NODE(k_stdio, "ftell");
  return traced_stream_simple(node_, f, [&] { return real_ftell(f); });
}

int fflush(FILE *f) {
  DFTRACE_IO_REAL(fflush);
  DFTRACE_IO_NODE(k_stdio, "fflush");
  return traced_stream_simple(node_, f, [&] { return real_fflush(f); });
}

}  // extern "C"
