// hdf5.cpp: the HDF5 calls of the application (Debian's libhdf5), as events of category H5,
// named as the application writes them (H5Dopen for H5Dopen2): the file's hash (absolute path,
// as the POSIX events name it), the dataset's name, the bytes a read or write moves, and the
// returned identifier or status. HDF5's own POSIX calls (its sec2 driver) nest inside. Built
// only where HDF5's headers are found; this library never links HDF5: its functions are
// reached through the loader, so a program without HDF5 never calls these.
#include <hdf5.h>

#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "plugins/io/calls.hpp"

using namespace dftrace::io;

// HDF5's function `name` (the next definition after this library's). A process that reaches an
// interposer without HDF5 loaded (a probe through dlsym, say) gets HDF5's error value, not an
// abort: unlike libc's, these functions may be missing.
#define DFTRACE_H5_REAL(name)                                                      \
  static const auto real_##name = reinterpret_cast<decltype(&name)>(               \
      ::dftrace::io::next_symbol_or_null(#name, reinterpret_cast<void *>(&name))); \
  if (!real_##name) return -1

namespace {

constexpr const char *k_h5 = "H5";

// An HDF5 function this library calls but does not interpose (found once, in libhdf5).
template <typename F>
F h5_function(const char *name) {
  return reinterpret_cast<F>(::dlsym(RTLD_DEFAULT, name));
}

// The bytes a read or write of `dataset` moves: the selected points times the memory type's
// size. The memory space's selection; for H5S_ALL (and HDF5 1.14's H5S_BLOCK and H5S_PLIST,
// ids 1 and 2, which are no dataspace) the file space's, as HDF5 then uses it for memory too;
// for H5S_ALL there as well, the dataset's whole space.
int64_t transfer_bytes(hid_t dataset, hid_t mem_type, hid_t mem_space, hid_t file_space) {
  static const auto get_space = h5_function<hid_t (*)(hid_t)>("H5Dget_space");
  static const auto npoints = h5_function<hssize_t (*)(hid_t)>("H5Sget_select_npoints");
  static const auto type_size = h5_function<size_t (*)(hid_t)>("H5Tget_size");
  static const auto close_space = h5_function<herr_t (*)(hid_t)>("H5Sclose");
  if (!get_space || !npoints || !type_size || !close_space) return 0;
  constexpr hid_t k_last_constant = 2;  // H5S_ALL 0, H5S_BLOCK 1, H5S_PLIST 2
  hid_t space = mem_space > k_last_constant ? mem_space : file_space;
  const bool whole = space <= k_last_constant;
  if (whole) space = get_space(dataset);
  if (space < 0) return 0;
  const hssize_t points = npoints(space);
  if (whole) close_space(space);
  return points < 0 ? 0 : static_cast<int64_t>(points) * static_cast<int64_t>(type_size(mem_type));
}

// HDF5 gives back a file's name as it was opened (H5Fget_name): a relative one is kept here
// with the absolute path it had then, so that a chdir afterwards does not move the file's later
// calls to another path. Never destroyed (calls may come during exit).
std::mutex g_relative_mutex;
std::map<std::string, std::string> &relative_names() {
  static auto *m = new std::map<std::string, std::string>;
  return *m;
}

// H5Fcreate and H5Fopen: a file by name.
template <typename Call>
hid_t traced_file_open(dftrace_node_t *node, const char *name, unsigned flags, Call call) {
  char abs[PATH_MAX];
  bool relative = false;
  if (name && name[0] != '/' && recording(node)) {
    errno_keeper keep;
    relative = absolute_path(AT_FDCWD, name, abs);
  }
  const hid_t ret = traced_path_call<
      nesting::contains>(node, AT_FDCWD, name, call, [&](uint64_t h, hid_t r) {
    return std::array<dftrace_arg_t, 3>{arg_u("fhash", h), arg_i("flags", flags), arg_i("ret", r)};
  });
  if (relative && ret >= 0) {
    inside g;
    std::lock_guard<std::mutex> lock(g_relative_mutex);
    relative_names()[name] = abs;
  }
  return ret;
}

// A call on an object of a file: traced when the file is (its name, as the filter sees it).
template <typename Call, typename Args>
auto traced_object_call(dftrace_node_t *node, hid_t object, Call call, Args args)
    -> decltype(call()) {
  if (!recording(node)) return call();
  uint64_t h;
  {
    inside g;
    errno_keeper keep;
    static const auto get_name = h5_function<ssize_t (*)(hid_t, char *, size_t)>("H5Fget_name");
    char name[PATH_MAX], abs[PATH_MAX];
    const ssize_t n = get_name ? get_name(object, name, sizeof name) : -1;
    if (n <= 0 || static_cast<size_t>(n) >= sizeof name) return call();
    if (name[0] != '/') {  // as it was when the file was opened, if it was seen
      std::lock_guard<std::mutex> lock(g_relative_mutex);
      const auto it = relative_names().find(name);
      if (it != relative_names().end() && it->second.size() < sizeof name)
        std::memcpy(name, it->second.c_str(), it->second.size() + 1);
    }
    if (!traced_path(AT_FDCWD, name, abs)) return call();
    h = file_hash(abs);
  }
  return traced<nesting::contains>(node, call, [&](auto ret) { return args(h, ret); });
}

// Reads and writes: fhash, size (bytes), ret. The size only of a call that succeeded: after a
// failure, any HDF5 call would clear the error stack the application is about to print, and
// the ids may be what failed (size 0).
template <typename Call>
herr_t traced_transfer(dftrace_node_t *node, hid_t dataset, hid_t mem_type, hid_t mem_space,
                       hid_t file_space, Call call) {
  return traced_object_call(node, dataset, call, [&](uint64_t h, herr_t ret) {
    int64_t bytes = 0;
    if (ret >= 0) {
      inside g;
      bytes = transfer_bytes(dataset, mem_type, mem_space, file_space);
    }
    return std::array<dftrace_arg_t, 3>{arg_u("fhash", h), arg_i("size", bytes), arg_i("ret", ret)};
  });
}

}  // namespace

extern "C" {

hid_t H5Fcreate(const char *name, unsigned flags, hid_t fcpl, hid_t fapl) {
  DFTRACE_H5_REAL(H5Fcreate);
  DFTRACE_IO_NODE(k_h5, "H5Fcreate");
  return traced_file_open(node_, name, flags,
                          [&] { return real_H5Fcreate(name, flags, fcpl, fapl); });
}

hid_t H5Fopen(const char *name, unsigned flags, hid_t fapl) {
  DFTRACE_H5_REAL(H5Fopen);
  DFTRACE_IO_NODE(k_h5, "H5Fopen");
  return traced_file_open(node_, name, flags, [&] { return real_H5Fopen(name, flags, fapl); });
}

#define DFTRACE_IO_SHAPE_H5_CLOSE(cat, name, event, ...)                             \
  herr_t name(hid_t id) {                                                            \
    DFTRACE_H5_REAL(name);                                                           \
    DFTRACE_IO_NODE(cat, event);                                                     \
    return traced_object_call(                                                       \
        node_, id, [&] { return real_##name(id); },                                  \
        [](uint64_t h, herr_t ret) {                                                 \
          return std::array<dftrace_arg_t, 2>{arg_u("fhash", h), arg_i("ret", ret)}; \
        });                                                                          \
  }                                                                                  \
  DFTRACE_IO_REGISTER(name);

// Datasets by name: fhash, the dataset's name, ret (its identifier).
hid_t H5Dcreate2(hid_t loc, const char *name, hid_t type, hid_t space, hid_t lcpl, hid_t dcpl,
                 hid_t dapl) {
  DFTRACE_H5_REAL(H5Dcreate2);
  DFTRACE_IO_NODE(k_h5, "H5Dcreate");
  return traced_object_call(
      node_, loc, [&] { return real_H5Dcreate2(loc, name, type, space, lcpl, dcpl, dapl); },
      [&](uint64_t h, hid_t ret) {
        return std::array<dftrace_arg_t, 3>{arg_u("fhash", h), arg_s("dataset", name),
                                            arg_i("ret", ret)};
      });
}

hid_t H5Dopen2(hid_t loc, const char *name, hid_t dapl) {
  DFTRACE_H5_REAL(H5Dopen2);
  DFTRACE_IO_NODE(k_h5, "H5Dopen");
  return traced_object_call(
      node_, loc, [&] { return real_H5Dopen2(loc, name, dapl); },
      [&](uint64_t h, hid_t ret) {
        return std::array<dftrace_arg_t, 3>{arg_u("fhash", h), arg_s("dataset", name),
                                            arg_i("ret", ret)};
      });
}

herr_t H5Dread(hid_t dataset, hid_t mem_type, hid_t mem_space, hid_t file_space, hid_t xfer,
               void *buf) {
  DFTRACE_H5_REAL(H5Dread);
  DFTRACE_IO_NODE(k_h5, "H5Dread");
  return traced_transfer(node_, dataset, mem_type, mem_space, file_space, [&] {
    return real_H5Dread(dataset, mem_type, mem_space, file_space, xfer, buf);
  });
}

herr_t H5Dwrite(hid_t dataset, hid_t mem_type, hid_t mem_space, hid_t file_space, hid_t xfer,
                const void *buf) {
  DFTRACE_H5_REAL(H5Dwrite);
  DFTRACE_IO_NODE(k_h5, "H5Dwrite");
  return traced_transfer(node_, dataset, mem_type, mem_space, file_space, [&] {
    return real_H5Dwrite(dataset, mem_type, mem_space, file_space, xfer, buf);
  });
}

// The wrappers of the table's rows written here, and the registry's entries of those above.
#define DFTRACE_IO_SHAPE_H5_OWN(cat, name, ...) DFTRACE_IO_REGISTER(name);
#include "plugins/io/shapes.hpp"
#define DFTRACE_IO_CALL DFTRACE_IO_WRAPPER
#include "dftrace/io_calls.def"

}  // extern "C"
