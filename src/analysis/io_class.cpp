// io_class.cpp: the read/write/metadata classification of I/O calls and their bytes.
#include "analysis/io_class.hpp"

namespace dftrace::analysis {

using detail::jvalue;
using detail::parsed_line;

bool io_call_category(std::string_view cat) {
  return cat == "POSIX" || cat == "STDIO" || cat == "MPIIO" || cat == "H5";
}

int io_direction(std::string_view cat, std::string_view name, io_bytes *how) {
  if (cat == "POSIX") {
    *how = io_bytes::ret;
    for (std::string_view r :
         {"read", "pread", "pread64", "readv", "preadv", "preadv64", "preadv2", "preadv64v2"})
      if (name == r) return 0;
    for (std::string_view w : {"write", "pwrite", "pwrite64", "writev", "pwritev", "pwritev64",
                               "pwritev2", "pwritev64v2"})
      if (name == w) return 1;
    return -1;
  }
  if (cat == "STDIO") {
    *how = io_bytes::items;
    if (name == "fread") return 0;
    if (name == "fwrite") return 1;
    // Folded character and line calls (src/plugins/io/README.md): `calls` calls moved `bytes`
    // bytes.
    *how = io_bytes::folded;
    for (std::string_view r : {"fgetc", "getc", "getchar", "fgets", "getline", "getdelim"})
      if (name == r) return 0;
    for (std::string_view w :
         {"fputc", "putc", "putchar", "fputs", "puts", "fprintf", "vfprintf", "printf", "vprintf"})
      if (name == w) return 1;
    return -1;
  }
  if (cat == "MPIIO" && name.substr(0, 9) == "MPI_File_") {
    *how = io_bytes::bytes_arg;
    const std::string_view op = name.substr(9);
    if (op.substr(0, 4) == "read" || op.substr(0, 5) == "iread") return 0;
    if (op.substr(0, 5) == "write" || op.substr(0, 6) == "iwrite") return 1;
    return -1;
  }
  if (cat == "H5") {
    *how = io_bytes::size_arg;
    return name == "H5Dread" ? 0 : name == "H5Dwrite" ? 1 : -1;
  }
  return -1;
}

uint64_t io_event_bytes(const parsed_line &pl, io_bytes how, bool aggregated) {
  uint64_t v = 0;
  int64_t signed_v = 0;
  if (how == io_bytes::ret || how == io_bytes::items) {
    if (aggregated) {
      const jvalue *sum = pl.arg_value("ret_sum");
      if (!sum || !detail::value_u64(*sum, &v)) return 0;
    } else {
      const jvalue *ret = pl.arg_value("ret");
      if (!ret || !detail::value_i64(*ret, &signed_v) || signed_v <= 0) return 0;
      v = static_cast<uint64_t>(signed_v);
    }
    if (how == io_bytes::items) {  // items of `size` bytes (one size when aggregated)
      uint64_t size = 0;
      const jvalue *sz = pl.arg_value(aggregated ? "size_max" : "size");
      const jvalue *lo = aggregated ? pl.arg_value("size_min") : nullptr;
      uint64_t low = 0;
      if (!sz || !detail::value_u64(*sz, &size)) return 0;
      if (lo && (!detail::value_u64(*lo, &low) || low != size)) return 0;
      v *= size;
    }
    return v;
  }
  const char *key = how == io_bytes::bytes_arg || how == io_bytes::folded
                        ? (aggregated ? "bytes_sum" : "bytes")
                        : (aggregated ? "size_sum" : "size");
  const jvalue *b = pl.arg_value(key);
  return b && detail::value_u64(*b, &v) ? v : 0;
}

}  // namespace dftrace::analysis
