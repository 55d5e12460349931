// mpiio.cpp: MPI-IO calls as events of category MPIIO, named after the function (as DFTracer
// names POSIX events): the file's hash (with its FH line, the absolute path as libdftrace_io
// names files), the bytes moved, the offset and the return code. The POSIX calls MPI makes
// underneath, when libdftrace_io traces them, nest inside. Over the C ABI and PMPI only.
#include <fcntl.h>
#include <limits.h>
#include <mpi.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "dftrace/dftrace.h"
#include "plugins/common/call_event.hpp"
#include "wrap.hpp"

namespace {

using dftrace::mpi::arg;
using dftrace::mpi::bytes_of;
using dftrace::plugin::region_around;

// An MPIIO node by function name, found once per wrapper.
dftrace_node_t *io_node(const char *name) {
  return dftrace_node_child(dftrace_category("MPIIO"), name);
}
#define DFTRACE_MPIIO_NODE(name) static dftrace_node_t *const node_ = io_node(name)

// Open files: handle -> the file's hash (MPI_File is a handle whose value stays the same from
// open to close).
std::mutex g_files_mutex;
std::unordered_map<MPI_File, uint64_t> &files() {
  static auto *f = new std::unordered_map<MPI_File, uint64_t>();  // used until exit
  return *f;
}

uint64_t hash_of(MPI_File fh) {
  std::lock_guard<std::mutex> lock(g_files_mutex);
  const auto it = files().find(fh);
  return it == files().end() ? 0 : it->second;
}

// The name as libdftrace_io writes it: absolute and normalised (plugin::absolute_path); MPI-IO's
// "ufs:" style prefixes kept as given.
std::string absolute(const char *name) {
  if (!name) return "";
  if (std::strchr(name, ':')) return name;
  char path[PATH_MAX];
  return dftrace::plugin::absolute_path(AT_FDCWD, name, path) ? path : name;
}

// A file's hash with its FH line (its absolute path), as an event argument.
dftrace_arg_t file_hash_arg(const char *name) {
  return dftrace::plugin::arg_u("fhash",
                                dftrace_hash_define(DFTRACE_HASH_FILE, absolute(name).c_str()));
}

// The end of every MPI-IO event: the call's return code.
std::array<dftrace_arg_t, 1> ret_args(int rc) { return {arg("ret", rc)}; }

// One event around a call on an open file: its hash and the call's own arguments, then ret.
template <size_t N, typename Call>
int traced_file_call(dftrace_node_t *node, MPI_File fh, const std::array<dftrace_arg_t, N> &in,
                     Call call) {
  return region_around(
      node,
      [&] {
        std::array<dftrace_arg_t, N + 1> args{};
        args[0] = dftrace::plugin::arg_u("fhash", hash_of(fh));
        for (size_t i = 0; i < N; ++i) args[i + 1] = in[i];
        return args;
      },
      call, ret_args);
}

// Reads and writes: count, bytes (count items of the datatype) and, for the _at forms, offset.
std::array<dftrace_arg_t, 2> transfer_args(int count, MPI_Datatype type) {
  return {arg("count", count), arg("bytes", bytes_of(count, type))};
}
std::array<dftrace_arg_t, 3> transfer_at_args(MPI_Offset offset, int count, MPI_Datatype type) {
  return {arg("offset", offset), arg("count", count), arg("bytes", bytes_of(count, type))};
}

}  // namespace

extern "C" {

int MPI_File_open(MPI_Comm comm, const char *name, int amode, MPI_Info info, MPI_File *fh) {
  DFTRACE_MPIIO_NODE("MPI_File_open");
  uint64_t hash = 0;
  return region_around(
      node_,
      [&] {
        const dftrace_arg_t file = file_hash_arg(name);
        hash = file.value.u;
        return std::array<dftrace_arg_t, 3>{file, arg("amode", amode),
                                            arg("comm_size", dftrace::mpi::size_of(comm))};
      },
      [&] {
        const int rc = PMPI_File_open(comm, name, amode, info, fh);
        if (rc == MPI_SUCCESS && fh && hash) {
          std::lock_guard<std::mutex> lock(g_files_mutex);
          files()[*fh] = hash;
        }
        return rc;
      },
      ret_args);
}

int MPI_File_close(MPI_File *fh) {
  DFTRACE_MPIIO_NODE("MPI_File_close");
  const MPI_File handle = fh ? *fh : MPI_FILE_NULL;
  const int rc = traced_file_call(node_, handle, std::array<dftrace_arg_t, 0>{},
                                  [&] { return PMPI_File_close(fh); });
  std::lock_guard<std::mutex> lock(g_files_mutex);
  files().erase(handle);
  return rc;
}

// A read or write, blocking (done: MPI_Status *) or not (MPI_Request *), at the file pointer or
// at an offset (_AT).
#define DFTRACE_MPIIO_TRANSFER(name, buf_type, done_type)                             \
  int name(MPI_File fh, buf_type buf, int count, MPI_Datatype type, done_type done) { \
    DFTRACE_MPIIO_NODE(#name);                                                        \
    return traced_file_call(node_, fh, transfer_args(count, type),                    \
                            [&] { return P##name(fh, buf, count, type, done); });     \
  }
#define DFTRACE_MPIIO_TRANSFER_AT(name, buf_type, done_type)                              \
  int name(MPI_File fh, MPI_Offset offset, buf_type buf, int count, MPI_Datatype type,    \
           done_type done) {                                                              \
    DFTRACE_MPIIO_NODE(#name);                                                            \
    return traced_file_call(node_, fh, transfer_at_args(offset, count, type),             \
                            [&] { return P##name(fh, offset, buf, count, type, done); }); \
  }

DFTRACE_MPIIO_TRANSFER(MPI_File_read, void *, MPI_Status *)
DFTRACE_MPIIO_TRANSFER(MPI_File_read_all, void *, MPI_Status *)
DFTRACE_MPIIO_TRANSFER(MPI_File_read_shared, void *, MPI_Status *)
DFTRACE_MPIIO_TRANSFER(MPI_File_read_ordered, void *, MPI_Status *)
DFTRACE_MPIIO_TRANSFER(MPI_File_write, const void *, MPI_Status *)
DFTRACE_MPIIO_TRANSFER(MPI_File_write_all, const void *, MPI_Status *)
DFTRACE_MPIIO_TRANSFER(MPI_File_write_shared, const void *, MPI_Status *)
DFTRACE_MPIIO_TRANSFER(MPI_File_write_ordered, const void *, MPI_Status *)
DFTRACE_MPIIO_TRANSFER_AT(MPI_File_read_at, void *, MPI_Status *)
DFTRACE_MPIIO_TRANSFER_AT(MPI_File_read_at_all, void *, MPI_Status *)
DFTRACE_MPIIO_TRANSFER_AT(MPI_File_write_at, const void *, MPI_Status *)
DFTRACE_MPIIO_TRANSFER_AT(MPI_File_write_at_all, const void *, MPI_Status *)
DFTRACE_MPIIO_TRANSFER(MPI_File_iread, void *, MPI_Request *)
DFTRACE_MPIIO_TRANSFER(MPI_File_iwrite, const void *, MPI_Request *)
DFTRACE_MPIIO_TRANSFER_AT(MPI_File_iread_at, void *, MPI_Request *)
DFTRACE_MPIIO_TRANSFER_AT(MPI_File_iwrite_at, const void *, MPI_Request *)

int MPI_File_seek(MPI_File fh, MPI_Offset offset, int whence) {
  DFTRACE_MPIIO_NODE("MPI_File_seek");
  return traced_file_call(
      node_, fh, std::array<dftrace_arg_t, 2>{arg("offset", offset), arg("whence", whence)},
      [&] { return PMPI_File_seek(fh, offset, whence); });
}

int MPI_File_seek_shared(MPI_File fh, MPI_Offset offset, int whence) {
  DFTRACE_MPIIO_NODE("MPI_File_seek_shared");
  return traced_file_call(
      node_, fh, std::array<dftrace_arg_t, 2>{arg("offset", offset), arg("whence", whence)},
      [&] { return PMPI_File_seek_shared(fh, offset, whence); });
}

int MPI_File_sync(MPI_File fh) {
  DFTRACE_MPIIO_NODE("MPI_File_sync");
  return traced_file_call(node_, fh, std::array<dftrace_arg_t, 0>{},
                          [&] { return PMPI_File_sync(fh); });
}

int MPI_File_set_size(MPI_File fh, MPI_Offset size) {
  DFTRACE_MPIIO_NODE("MPI_File_set_size");
  return traced_file_call(node_, fh, std::array<dftrace_arg_t, 1>{arg("size", size)},
                          [&] { return PMPI_File_set_size(fh, size); });
}

int MPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                      const char *datarep, MPI_Info info) {
  DFTRACE_MPIIO_NODE("MPI_File_set_view");
  return traced_file_call(node_, fh, std::array<dftrace_arg_t, 1>{arg("disp", disp)}, [&] {
    return PMPI_File_set_view(fh, disp, etype, filetype, datarep, info);
  });
}

int MPI_File_delete(const char *name, MPI_Info info) {
  DFTRACE_MPIIO_NODE("MPI_File_delete");
  return region_around(
      node_, [&] { return std::array<dftrace_arg_t, 1>{file_hash_arg(name)}; },
      [&] { return PMPI_File_delete(name, info); }, ret_args);
}

}  // extern "C"
