// io_collect.hpp: the I/O characterisation (Darshan's job summary, per group and file): each
// I/O call as a worker reads it, then, in the order each process wrote its calls, the offsets
// of its descriptors rebuilt, and the per-file, per-size and per-time figures added up.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/io_class.hpp"
#include "reader/line_parser.hpp"
#include "reader/time_unit.hpp"

namespace dftrace::analysis {

// Darshan's access-size buckets (upper bounds inclusive, K = 1024).
constexpr size_t k_size_buckets = 10;
extern const char *const k_size_bucket_names[k_size_buckets];
size_t size_bucket(uint64_t bytes);

// One I/O call (POSIX, STDIO, MPIIO, H5) as written, or an aggregated record of several.
struct io_op {
  enum kind_t : uint8_t { other, open, seek, close, transfer, transfer_at };
  uint64_t ts = 0, dur = 0;
  uint64_t bytes = 0, calls = 1;  // bytes moved; calls it stands for
  int64_t fd = -1, offset = 0, ret = 0, flags = 0;
  uint32_t file = UINT32_MAX;  // index into io_block::files; UINT32_MAX: no fhash
  kind_t kind = other;
  int8_t dir = -1;       // 0 read, 1 write, -1 metadata (k_io_copy while scanned)
  bool single = true;    // one call of known size (not aggregated, not folded)
  bool failed = false;   // ret < 0
  bool job_time = true;  // its time counts in the job's (an in-kernel copy's write side: not)
  // An in-kernel copy's: one end whose other end is a traced file, or is none (a pipe, a
  // socket, a file not traced: its bytes go to or come from no file), or a copy whose trace
  // names neither end (written before from_hash and to_hash: counted as a metadata call).
  enum copy_t : uint8_t { no_copy, copy_between_files, copy_with_no_file, copy_ends_unknown };
  copy_t copy = no_copy;
};

// What a block holds of I/O: the calls per process (pid as written), in line order.
struct io_block {
  std::vector<std::string> files;  // fhash texts
  std::unordered_map<std::string, uint32_t> file_index;
  std::unordered_map<std::string, std::vector<io_op>> by_pid;
  std::unordered_map<std::string, std::string> fh_paths;  // fhash -> path (FH lines)
};

// What a (cat, name) is as an I/O call: decided once per name (the scan caches it).
struct io_kind {
  bool io = false;  // an I/O call's category
  bool posix = false, creat = false;
  int8_t dir = -1;
  io_bytes how = io_bytes::ret;
  io_op::kind_t kind = io_op::other;
};
io_kind io_classify(std::string_view cat, std::string_view name);

// The scan's last process and file, so that consecutive calls look nothing up.
struct io_scan_state {
  std::string pid, fhash;
  std::vector<io_op> *ops = nullptr;
  uint32_t file = UINT32_MAX;
};

// Reads the I/O call of a complete or aggregated event into b (dur in ns); k: its io_classify.
// False, and the call left out, when its bytes are no byte count (io_event_bytes).
bool scan_io(const detail::parsed_line &pl, char ph, uint64_t ts, uint64_t dur,
             detail::time_unit unit, const io_kind &k, io_block *b, io_scan_state *st);

// Bytes moved per time bin of a process (bins aligned to multiples of width_ns, widened by
// doubling so that a process holds at most k_max_bins).
struct time_bins {
  static constexpr size_t k_max_bins = 1024;
  uint64_t width_ns = uint64_t{1} << 20;
  std::map<uint64_t, std::array<uint64_t, 2>> bins;  // bin start / width -> read, write bytes
  void add(uint64_t ts, int dir, uint64_t bytes);
  void widen(uint64_t w);
  void merge(const time_bins &o);
};

struct file_io {
  uint64_t bytes[2] = {}, ops[2] = {}, ns[2] = {}, seq[2] = {}, consec[2] = {};
  uint64_t ordered[2] = {};  // accesses that had a previous one to compare with
  uint64_t meta_ops = 0, meta_ns = 0;
  std::set<std::string> procs;  // process keys (host '\x1f' pid once finished)
  void merge(const file_io &o);
};

// The bytes of in-kernel copies not counted on a file at one end: no_file[0], the bytes written
// to a file from no file (a pipe, a socket, a file not traced); no_file[1], read from a file
// into none; and the copies whose trace names neither end (neither read nor written).
struct copy_figures {
  uint64_t no_file[2] = {};
  uint64_t unattributed_calls = 0, unattributed_bytes = 0;
  void merge(const copy_figures &o) {
    for (int k = 0; k < 2; ++k) add_bytes(&no_file[k], o.no_file[k]);
    add_count(&unattributed_calls, o.unattributed_calls);
    add_bytes(&unattributed_bytes, o.unattributed_bytes);
  }
};

// Job-wide figures (no host needed), and per-file and per-process ones.
struct io_data {
  uint64_t bytes[2] = {}, ops[2] = {}, ns[2] = {}, meta_ops = 0, meta_ns = 0;
  uint64_t hist[2][k_size_buckets] = {};
  uint64_t unbinned[2] = {};        // calls of unknown single size (aggregated, folded)
  uint64_t offset_unknown[2] = {};  // read/write calls whose descriptor's offset is unknown
  copy_figures copies;              // what the in-kernel copies moved to or from no file
  // The bytes of every call, read and written, passed 2^64-1: the byte figures are held at
  // 2^64-1 (add_bytes), never wrapped, and the run is damaged.
  bool bytes_overflow = false;
  uint64_t all_bytes = 0;                // every call's bytes (to find bytes_overflow)
  std::map<uint64_t, uint64_t> sizes;    // access size -> calls
  std::map<std::string, file_io> files;  // fhash text -> figures
  std::unordered_map<std::string, std::string> fh_paths;  // fhash -> path
  std::map<std::string, time_bins> proc_bins;             // process key -> bins
  // Names a file: of two paths given one hash (processes that hashed different paths alike),
  // the smaller, so that the name does not depend on the order of the files.
  void name_file(const std::string &fhash, std::string &path);
  // Adds o's figures (o's processes were read apart from these); consumes o.
  void merge(io_data &o);
};

// The `io` section: files with their groups, the common sizes and bytes over time per group.
struct io_file_summary {
  std::string name;  // the path (escaped JSON text), or the fhash when no FH line names it
  bool path_known = false;
  file_io fig;
  std::vector<size_t> groups;  // the groups whose processes called on it
};
struct io_group_bins {
  size_t group = 0;
  std::vector<uint64_t> bytes[2];  // read, write: one per bin
};
struct io_summary {
  uint64_t bytes[2] = {}, ops[2] = {}, ns[2] = {}, meta_ops = 0, meta_ns = 0;
  uint64_t hist[2][k_size_buckets] = {};
  uint64_t unbinned[2] = {}, offset_unknown[2] = {};
  copy_figures copies;
  bool bytes_overflow = false;  // io_data::bytes_overflow
  uint64_t data_ns = 0;         // ns[0] + ns[1], held at 2^64-1 (add_ns)
  // A time figure (the job's or a file's read, write, data or metadata time) reached 2^64-1 ns:
  // held there (add_ns), never wrapped, and the run is damaged.
  bool ns_held = false;
  // A count of calls (the job's or a file's reads, writes or metadata calls, those of unknown
  // size, or the copies with no known end) reached 2^64-1: held there (add_count).
  bool calls_held = false;
  std::vector<std::pair<uint64_t, uint64_t>> common_sizes;  // (size, calls), most calls first
  std::vector<io_file_summary> files;                       // most bytes first, then by name
  uint64_t bin_ns = 0, bin_start_ns = 0;
  std::vector<io_group_bins> bandwidth;  // groups that moved bytes, by group
};

// group_of: the group index of a process key, or -1 (a process in no group).
io_summary summarize_io(io_data &d, const std::function<long(const std::string &)> &group_of);

// The descriptors of one file's processes, fed in the order the calls were written.
class io_folder {
 public:
  void add(io_block &b, io_data *job);
  // Moves per-file and per-process data into job, pid keys made host '\x1f' pid.
  void finish(const std::function<std::string(const std::string &pid)> &proc_key, io_data *job);

 private:
  struct fd_state {
    bool known = false;
    int64_t offset = 0;
    int64_t last_end[2] = {-1, -1};
  };
  void apply(std::unordered_map<int64_t, fd_state> &fds, time_bins &bins, const io_op &op,
             file_io *f, io_data *job);
  std::unordered_map<std::string, std::unordered_map<int64_t, fd_state>> fds_;
  std::unordered_map<std::string, file_io> files_;  // fhash -> figures (procs: pids)
  std::unordered_map<std::string, time_bins> bins_;
};

}  // namespace dftrace::analysis
