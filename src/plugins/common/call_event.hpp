// call_event.hpp: an event around a call, as every plug-in that wraps a library's calls writes
// it (libdftrace_io's POSIX, STDIO and HDF5 interposers; libdftrace_mpi's MPI and MPI-IO
// wrappers): the argument builders, the event's begin and end around the real call, and the
// absolute, normalised path a file is named by. Only the C ABI (dftrace/plugin.h).
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <tuple>
#include <type_traits>

#include "dftrace/plugin.h"
#include "plugins/common/path_normal.hpp"

namespace dftrace::plugin {

// ---------------------------------------------------------------- arguments

inline constexpr dftrace_arg_t arg_i(const char *key, int64_t v) {
  return {key, DFTRACE_ARG_INT, {.i = v}};
}
inline constexpr dftrace_arg_t arg_u(const char *key, uint64_t v) {
  return {key, DFTRACE_ARG_UINT, {.u = v}};
}
inline constexpr dftrace_arg_t arg_s(const char *key, const char *v) {
  return {key, DFTRACE_ARG_STRING, {.s = v}};
}
// No arguments (an event that has none at its begin or its end).
inline constexpr std::array<dftrace_arg_t, 0> no_args() { return {}; }

// Whether a call's result says it failed (errno then says why): a negative number, a null
// pointer or MAP_FAILED. Unsigned results (fread's item count) never do.
template <typename T>
bool failed(T ret) {
  if constexpr (std::is_pointer_v<T>)
    return ret == nullptr || reinterpret_cast<void *>(ret) == MAP_FAILED;
  else if constexpr (std::is_signed_v<T>)
    return ret < 0;
  else
    return false;
}

// Keeps errno across a plug-in's own system calls (path and descriptor look-ups): a call that
// succeeds leaves the application's errno as it was.
struct errno_keeper {
  errno_keeper() : saved_(errno) {}
  ~errno_keeper() { errno = saved_; }
  errno_keeper(const errno_keeper &) = delete;
  errno_keeper &operator=(const errno_keeper &) = delete;

 private:
  const int saved_;
};

// The prepared layout of an event's argument keys (and `errno` after them), or null when an
// argument is not a number (dftrace_arg_layout).
template <size_t N>
const dftrace_arg_layout_t *layout_of(const std::array<dftrace_arg_t, N> &a, bool with_errno) {
  std::array<dftrace_arg_t, N + 1> all{};
  std::copy(a.begin(), a.end(), all.begin());
  all[N] = arg_i("errno", 0);
  return dftrace_arg_layout(all.data(), with_errno ? N + 1 : N);
}

// ---------------------------------------------------------------- the event around a call

// Whether a traced call can contain other events. A leaf (a system call, a C library call that
// makes no traced call inside) is recorded as a leaf event (dftrace_leaf_begin: nothing on the
// thread's stack); a call that contains others (HDF5's, MPI's) as a region.
enum class nesting { leaf, contains };

// A guard that does nothing (call_event's Guard when the plug-in needs none).
struct no_guard {};

// One event around `call` on `node`, whose arguments come from the result: args(result) (a
// std::array of numbers or strings), to which a failed call adds `errno` (unless `with_errno`
// is false: readdir's null is also the end). The application sees the real call's result and
// errno. A Guard lives around dftrace's own work (the first event may initialise dftrace, which
// reads files: an interposer lets that I/O through untraced). Each call site's keys are
// prepared once (dftrace_arg_layout), so that an event passes only its values.
template <nesting Nesting, typename Guard, typename Call, typename Args>
inline auto call_event(dftrace_node_t *node, Call call, Args args, bool with_errno)
    -> decltype(call()) {
  constexpr bool leaf = Nesting == nesting::leaf;
  uint64_t begun;  // the leaf's start, or the region
  {
    Guard g;
    begun = leaf ? dftrace_leaf_begin(node) : dftrace_region_begin(node);
  }
  auto ret = call();
  const int err = errno;
  if (begun) {
    Guard g;
    const auto a = args(ret);
    constexpr size_t n = std::tuple_size_v<std::decay_t<decltype(a)>>;
    const bool add_errno = with_errno && failed(ret);
    // The layouts are made from arguments of their own (once): `a` never leaves this function,
    // so the compiler keeps only its values, never storing its keys and types.
    static const dftrace_arg_layout_t *const plain = layout_of(args(ret), false);
    static const dftrace_arg_layout_t *const with_err = layout_of(args(ret), true);
    if (const dftrace_arg_layout_t *l = add_errno ? with_err : plain) {
      dftrace_value_t v[n + 1];
      for (size_t i = 0; i < n; ++i) v[i].u = a[i].value.u;
      v[n].i = err;
      if (leaf)
        dftrace_leaf_end_values(node, begun, l, v);
      else
        dftrace_region_end_values(begun, l, v);
    } else {
      std::array<dftrace_arg_t, n + 1> all{};
      const auto b = args(ret);  // (not `a`: see above)
      std::copy(b.begin(), b.end(), all.begin());
      if (add_errno) all[n] = arg_i("errno", err);
      const size_t k = add_errno ? n + 1 : n;
      if (leaf)
        dftrace_leaf_end_ex(node, begun, all.data(), k);
      else
        dftrace_region_end_ex(begun, all.data(), k);
    }
  }
  errno = err;
  return ret;
}

// One region around `call` on `node` whose arguments are known partly before the call and
// partly from its result: in() at the begin, out(result) at the end (each a std::array), both
// built only when the node records. MPI's calls: what is sent before, what arrived after.
template <typename In, typename Call, typename Out>
inline auto region_around(dftrace_node_t *node, In in, Call call, Out out) -> decltype(call()) {
  if (!dftrace_node_active_fast(node)) return call();
  const auto before = in();
  const dftrace_region_t r =
      dftrace_region_begin_ex(node, DFTRACE_USE_NODE_STATE, before.data(), before.size());
  auto ret = call();
  if (r) {
    const auto after = out(ret);
    dftrace_region_end_ex(r, after.data(), after.size());
  }
  return ret;
}

// ---------------------------------------------------------------- file paths

// The directory a descriptor names, from /proc/self/fd (a system call of its own, never an
// interposed one), into out[PATH_MAX].
inline bool fd_directory(int fd, char *out) {
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const long n = ::syscall(SYS_readlinkat, AT_FDCWD, link, out, PATH_MAX - 1);
  if (n <= 0 || out[0] != '/') return false;
  out[n] = '\0';
  return true;
}

// `path` made absolute (against the working directory, or the directory `dirfd` names when it
// is not AT_FDCWD) and normalised ("//", "." and ".." removed, without resolving links) into
// out[PATH_MAX]; false when that can not be done (too long, unknown directory). Leaves errno.
inline bool absolute_path(int dirfd, const char *path, char *out) {
  if (!path || !*path) return false;
  const size_t n = std::strlen(path);
  if (path[0] == '/') {
    if (n >= PATH_MAX) return false;
    std::memcpy(out, path, n + 1);
    if (!is_normal(out, n)) normalise(out);  // usually nothing to remove: a quick check
    return true;
  }
  errno_keeper keep;
  if (dirfd == AT_FDCWD) {
    if (!::getcwd(out, PATH_MAX)) return false;
  } else if (!fd_directory(dirfd, out)) {
    return false;
  }
  const size_t len = std::strlen(out);
  if (len + 1 + n >= PATH_MAX) return false;
  out[len] = '/';
  std::memcpy(out + len + 1, path, n + 1);
  if (!is_normal(out, len + 1 + n)) normalise(out);
  return true;
}

}  // namespace dftrace::plugin
