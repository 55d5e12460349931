// calls.hpp: the shapes of interposed calls (on a path, on a descriptor, opening one), shared by
// the POSIX, STDIO and HDF5 interposers.
#pragma once

#include <fcntl.h>
#include <limits.h>

#include "plugins/io/descriptors.hpp"
#include "plugins/io/interpose.hpp"
#include "plugins/io/paths.hpp"

namespace dftrace::io {

// A call on a path (relative to dirfd): traced when the file is. args(h, ret) gives the
// event's arguments.
template <nesting Nesting = nesting::leaf, typename Call, typename Args>
auto traced_path_call(dftrace_node_t *node, int dirfd, const char *path, Call call, Args args)
    -> decltype(call()) {
  if (!recording(node)) return call();
  char abs[PATH_MAX];
  if (!traced_path(dirfd, path, abs)) return call();
  const uint64_t h = file_hash(abs);
  return traced<Nesting>(node, call, [&](auto ret) { return args(h, ret); });
}

// The common case: fhash and ret.
template <typename Call>
auto traced_path_simple(dftrace_node_t *node, int dirfd, const char *path, Call call)
    -> decltype(call()) {
  return traced_path_call(node, dirfd, path, call, [](uint64_t h, auto ret) {
    return std::array<dftrace_arg_t, 2>{arg_u("fhash", h), arg_i("ret", static_cast<int64_t>(ret))};
  });
}

// A call on a descriptor: traced when the descriptor is. A descriptor known not to be traced
// (a socket, a file outside the data directories) is decided by one table load, before the
// rest of recording()'s checks.
template <typename Call, typename Args>
auto traced_fd_call(dftrace_node_t *node, int fd, Call call, Args args) -> decltype(call()) {
  if (!maybe_recording(node) || fd_untraced(fd) || !recording(node)) return call();
  uint64_t h;
  if (!fd_hash(fd, &h)) return call();
  return traced(node, call, [&](auto ret) { return args(h, ret); });
}

// An opening call: traced when its file is; the descriptor of what it returns (fd_of(ret): the
// descriptor itself, a stream's, a directory stream's; -1 for a failure) is followed either way
// (traced, known to be untraced, or, seen while not recording, looked up at its next use).
// args(h, ret) gives the event's arguments. A vfork child shares its parent's table, in which
// the number is free (or another file, later): it leaves the table alone.
template <typename Call, typename Args, typename FdOf>
auto traced_opening(dftrace_node_t *node, int dirfd, const char *path, Call call, Args args,
                    FdOf fd_of) -> decltype(call()) {
  const auto made = [&] { return retry_after_trace_write(call); };
  if (!recording(node)) {
    const auto ret = made();
    fd_forget(fd_of(ret));
    return ret;
  }
  char abs[PATH_MAX];
  if (!traced_path(dirfd, path, abs)) {
    const auto ret = made();
    if (!in_vfork_child()) fd_untrack(fd_of(ret));  // (errno kept)
    return ret;
  }
  const uint64_t h = file_hash(abs);
  const auto ret = traced(node, made, [&](auto r) { return args(h, r); });
  if (!in_vfork_child()) fd_track(fd_of(ret), h);  // (errno kept)
  return ret;
}

// open and its forms: the descriptor is the result.
template <typename Call, typename Args>
int traced_open_call(dftrace_node_t *node, int dirfd, const char *path, Call call, Args args) {
  return traced_opening(node, dirfd, path, call, args, [](int fd) { return fd; });
}

}  // namespace dftrace::io
