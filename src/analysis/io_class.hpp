// io_class.hpp: which I/O calls read, write or do neither (metadata), and the bytes each moved:
// the one classification `dftrace stat` and the analysis's `io` section share.
#pragma once

#include <cstdint>
#include <string_view>

#include "analysis/held_sum.hpp"  // add_bytes: byte sums held at 2^64-1
#include "reader/line_parser.hpp"

namespace dftrace::analysis {

// How an I/O event's bytes are written: its `ret` (POSIX), `ret` items of `size` (STDIO's
// fread/fwrite), `bytes` (MPIIO), `size` (H5) or, for STDIO's folded character and line calls,
// `bytes` over `calls` calls.
enum class io_bytes { ret, items, bytes_arg, size_arg, folded };

// The categories whose events are I/O calls: POSIX, STDIO, MPIIO, H5.
bool io_call_category(std::string_view cat);

// An in-kernel copy's direction (io_direction): its `ret` bytes are read from the file of its
// `from_hash` and written to the file of its `to_hash` (each there when that end is a file
// traced); a copy without them (dftrace before they were written) is counted as neither.
constexpr int k_io_copy = 2;

// Whether an I/O event reads (0), writes (1), copies (k_io_copy) or neither (-1: metadata, or
// not an I/O call), and
// how its bytes are written (*how): the POSIX, STDIO and H5 calls' class and bytes as the table
// of interposed calls (dftrace/io_calls.def) says; MPIIO's by name (MPI_File_read*, _write*,
// _iread*, _iwrite*).
int io_direction(std::string_view cat, std::string_view name, io_bytes *how);

// The largest byte count of one event: what ssize_t and off_t hold.
constexpr uint64_t k_max_event_bytes = (uint64_t{1} << 63) - 1;
// The bytes an I/O event (or, aggregated, its dft_cnt events) moved into *bytes: 0 for a failed
// call (a negative ret) or one whose size is not written. False (and 0) when the field that
// holds them is no byte count: not an integer, past k_max_event_bytes, or (size, bytes and the
// sums) negative; such an event is damage, never 0 bytes silently.
bool io_event_bytes(const detail::parsed_line &pl, io_bytes how, bool aggregated, uint64_t *bytes);

}  // namespace dftrace::analysis
