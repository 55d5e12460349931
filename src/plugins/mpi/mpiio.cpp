// mpiio.cpp: MPI-IO calls as events of category MPIIO, named after the function (as DFTracer
// names POSIX events): the file's hash (with its FH line, the absolute path as libdftrace_io
// names files), the bytes moved, the offset and the return code. The POSIX calls MPI makes
// underneath, when libdftrace_io traces them, nest inside. Over the C ABI and PMPI only.
#include <limits.h>
#include <mpi.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "dftrace/dftrace.h"
#include "wrap.hpp"

namespace {

using dftrace::mpi::arg;
using dftrace::mpi::bytes_of;

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

// The name as libdftrace_io writes it: absolute (MPI-IO's "ufs:" style prefixes kept as given).
std::string absolute(const char *name) {
  if (!name) return "";
  if (name[0] == '/' || std::strchr(name, ':')) return name;
  char cwd[PATH_MAX];
  if (!::getcwd(cwd, sizeof cwd)) return name;
  return std::string(cwd) + "/" + name;
}

// One event around a call on an open file: its hash and the call's own arguments, then ret.
template <size_t N, typename Call>
int traced_file_call(dftrace_node_t *node, MPI_File fh, const std::array<dftrace_arg_t, N> &in,
                     Call call) {
  if (!dftrace_node_active_fast(node)) return call();
  std::array<dftrace_arg_t, N + 1> args{};
  args[0].key = "fhash";
  args[0].type = DFTRACE_ARG_UINT;
  args[0].value.u = hash_of(fh);
  for (size_t i = 0; i < N; ++i) args[i + 1] = in[i];
  const dftrace_region_t r =
      dftrace_region_begin_ex(node, DFTRACE_USE_NODE_STATE, args.data(), args.size());
  const int rc = call();
  const dftrace_arg_t out[] = {arg("ret", rc)};
  dftrace_region_end_ex(r, out, 1);
  return rc;
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
  if (!dftrace_node_active_fast(node_)) return PMPI_File_open(comm, name, amode, info, fh);
  const std::string path = absolute(name);
  const uint64_t h = dftrace_hash_define(DFTRACE_HASH_FILE, path.c_str());
  const dftrace_arg_t in[] = {{"fhash", DFTRACE_ARG_UINT, {.u = h}},
                              arg("amode", amode),
                              arg("comm_size", dftrace::mpi::size_of(comm))};
  const dftrace_region_t r = dftrace_region_begin_ex(node_, DFTRACE_USE_NODE_STATE, in, 3);
  const int rc = PMPI_File_open(comm, name, amode, info, fh);
  if (rc == MPI_SUCCESS && fh) {
    std::lock_guard<std::mutex> lock(g_files_mutex);
    files()[*fh] = h;
  }
  const dftrace_arg_t out[] = {arg("ret", rc)};
  dftrace_region_end_ex(r, out, 1);
  return rc;
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

#define DFTRACE_MPIIO_TRANSFER(name, buf_type)                                            \
  int name(MPI_File fh, buf_type buf, int count, MPI_Datatype type, MPI_Status *status) { \
    DFTRACE_MPIIO_NODE(#name);                                                            \
    return traced_file_call(node_, fh, transfer_args(count, type),                        \
                            [&] { return P##name(fh, buf, count, type, status); });       \
  }
#define DFTRACE_MPIIO_TRANSFER_AT(name, buf_type)                                           \
  int name(MPI_File fh, MPI_Offset offset, buf_type buf, int count, MPI_Datatype type,      \
           MPI_Status *status) {                                                            \
    DFTRACE_MPIIO_NODE(#name);                                                              \
    return traced_file_call(node_, fh, transfer_at_args(offset, count, type),               \
                            [&] { return P##name(fh, offset, buf, count, type, status); }); \
  }
#define DFTRACE_MPIIO_ITRANSFER(name, buf_type)                                             \
  int name(MPI_File fh, buf_type buf, int count, MPI_Datatype type, MPI_Request *request) { \
    DFTRACE_MPIIO_NODE(#name);                                                              \
    return traced_file_call(node_, fh, transfer_args(count, type),                          \
                            [&] { return P##name(fh, buf, count, type, request); });        \
  }
#define DFTRACE_MPIIO_ITRANSFER_AT(name, buf_type)                                           \
  int name(MPI_File fh, MPI_Offset offset, buf_type buf, int count, MPI_Datatype type,       \
           MPI_Request *request) {                                                           \
    DFTRACE_MPIIO_NODE(#name);                                                               \
    return traced_file_call(node_, fh, transfer_at_args(offset, count, type),                \
                            [&] { return P##name(fh, offset, buf, count, type, request); }); \
  }

DFTRACE_MPIIO_TRANSFER(MPI_File_read, void *)
DFTRACE_MPIIO_TRANSFER(MPI_File_read_all, void *)
DFTRACE_MPIIO_TRANSFER(MPI_File_read_shared, void *)
DFTRACE_MPIIO_TRANSFER(MPI_File_read_ordered, void *)
DFTRACE_MPIIO_TRANSFER(MPI_File_write, const void *)
DFTRACE_MPIIO_TRANSFER(MPI_File_write_all, const void *)
DFTRACE_MPIIO_TRANSFER(MPI_File_write_shared, const void *)
DFTRACE_MPIIO_TRANSFER(MPI_File_write_ordered, const void *)
DFTRACE_MPIIO_TRANSFER_AT(MPI_File_read_at, void *)
DFTRACE_MPIIO_TRANSFER_AT(MPI_File_read_at_all, void *)
DFTRACE_MPIIO_TRANSFER_AT(MPI_File_write_at, const void *)
DFTRACE_MPIIO_TRANSFER_AT(MPI_File_write_at_all, const void *)
DFTRACE_MPIIO_ITRANSFER(MPI_File_iread, void *)
DFTRACE_MPIIO_ITRANSFER(MPI_File_iwrite, const void *)
DFTRACE_MPIIO_ITRANSFER_AT(MPI_File_iread_at, void *)
DFTRACE_MPIIO_ITRANSFER_AT(MPI_File_iwrite_at, const void *)

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
  if (!dftrace_node_active_fast(node_)) return PMPI_File_delete(name, info);
  const std::string path = absolute(name);
  const dftrace_arg_t in[] = {
      {"fhash", DFTRACE_ARG_UINT, {.u = dftrace_hash_define(DFTRACE_HASH_FILE, path.c_str())}}};
  const dftrace_region_t r = dftrace_region_begin_ex(node_, DFTRACE_USE_NODE_STATE, in, 1);
  const int rc = PMPI_File_delete(name, info);
  const dftrace_arg_t out[] = {arg("ret", rc)};
  dftrace_region_end_ex(r, out, 1);
  return rc;
}

}  // extern "C"
