// io_class.cpp: the read/write/metadata classification of I/O calls and their bytes.
#include "analysis/io_class.hpp"

#include <vector>

namespace dftrace::analysis {

using detail::jvalue;
using detail::parsed_line;

bool io_call_category(std::string_view cat) {
  return cat == "POSIX" || cat == "STDIO" || cat == "MPIIO" || cat == "H5";
}

namespace {

// The calls that read or write, from the table of interposed calls (dftrace/io_calls.def): one
// entry per category and event name (several functions record the same event).
struct data_call {
  std::string_view cat, event;
  int dir;
  io_bytes how;
};

constexpr int dir_of_READ = 0, dir_of_WRITE = 1, dir_of_COPY = k_io_copy, dir_of_META = -1,
              dir_of_OTHER = -1;
constexpr io_bytes how_of_RET = io_bytes::ret, how_of_ITEMS = io_bytes::items,
                   how_of_SIZE = io_bytes::size_arg, how_of_FOLDED = io_bytes::folded,
                   how_of_NONE = io_bytes::ret;

constexpr data_call k_rows[] = {
#define DFTRACE_IO_CALL(cat, symbol, event, shape, cls, bytes, types) \
  {#cat, event, dir_of_##cls, how_of_##bytes},
#include "dftrace/io_calls.def"
};

const std::vector<data_call> &data_calls() {
  static const std::vector<data_call> calls = [] {
    std::vector<data_call> v;
    for (const data_call &r : k_rows) {
      if (r.dir < 0) continue;
      bool seen = false;
      for (const data_call &c : v) seen = seen || (c.cat == r.cat && c.event == r.event);
      if (!seen) v.push_back(r);
    }
    return v;
  }();
  return calls;
}

}  // namespace

int io_direction(std::string_view cat, std::string_view name, io_bytes *how) {
  if (cat == "MPIIO" && name.substr(0, 9) == "MPI_File_") {
    *how = io_bytes::bytes_arg;
    const std::string_view op = name.substr(9);
    if (op.substr(0, 4) == "read" || op.substr(0, 5) == "iread") return 0;
    if (op.substr(0, 5) == "write" || op.substr(0, 6) == "iwrite") return 1;
    return -1;
  }
  // (a call that neither reads nor writes: its category's way, never used)
  *how = cat == "STDIO" ? io_bytes::folded : cat == "H5" ? io_bytes::size_arg : io_bytes::ret;
  for (const data_call &c : data_calls())
    if (c.event == name && c.cat == cat) {
      *how = c.how;
      return c.dir;
    }
  return -1;
}

bool io_event_bytes(const parsed_line &pl, io_bytes how, bool aggregated, uint64_t *bytes) {
  *bytes = 0;
  uint64_t v = 0;
  // an integer from 0 to k_max_event_bytes, or (negative_is_zero) below 0: a failed call's
  auto count = [](const jvalue &j, bool negative_is_zero, uint64_t *out) {
    int64_t i = 0;
    if (!detail::value_i64(j, &i)) return false;  // not an integer, or past 2^63-1
    if (i < 0 && !negative_is_zero) return false;
    *out = i < 0 ? 0 : static_cast<uint64_t>(i);
    return true;
  };
  if (how == io_bytes::ret || how == io_bytes::items) {
    const jvalue *ret = pl.arg_value(aggregated ? "ret_sum" : "ret");
    if (!ret) return true;
    if (!count(*ret, true, &v)) return false;
    if (how == io_bytes::items && v) {  // items of `size` bytes (one size when aggregated)
      uint64_t size = 0;
      const jvalue *sz = pl.arg_value(aggregated ? "size_max" : "size");
      const jvalue *lo = aggregated ? pl.arg_value("size_min") : nullptr;
      uint64_t low = 0;
      if (!sz) return true;  // items of a size not written: no bytes known
      if (!count(*sz, false, &size)) return false;
      if (lo && (!count(*lo, false, &low) || low != size)) return true;  // sizes differ
      if (size && v > k_max_event_bytes / size) return false;
      v *= size;
    }
    *bytes = v;
    return true;
  }
  const char *key = how == io_bytes::bytes_arg || how == io_bytes::folded
                        ? (aggregated ? "bytes_sum" : "bytes")
                        : (aggregated ? "size_sum" : "size");
  const jvalue *b = pl.arg_value(key);
  return !b || count(*b, false, bytes);
}

}  // namespace dftrace::analysis
