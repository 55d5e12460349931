// config_files.hpp: reading the files the configuration names (the YAML file, aggregation.file)
// safely: only a regular file of bounded size, never a FIFO, device or directory, read by
// dftrace itself and parsed from memory.
#pragma once

#include <cstddef>
#include <string>

namespace dftrace::detail {

struct config;
struct yaml_value;
class config_messages;

// The largest file the configuration reads (a configuration or rules file is a few KiB).
constexpr size_t k_config_file_max_bytes = size_t{16} << 20;

enum class file_read {
  ok,
  missing,      // no such file
  directory,    // a directory
  not_regular,  // a FIFO, socket or device
  too_large,    // over the limit
  unreadable,   // open or read failed (permissions, EIO from /proc/self/mem, ...)
};

// Reads `path` into *text if it is a regular file of at most max_bytes. The open never blocks
// (O_NONBLOCK: a FIFO without a writer) and the type is checked on the open descriptor, so
// nothing can swap the file between the check and the read. *why: the reason when not ok.
// Thread-safe; never throws.
file_read read_regular_file(const std::string &path, size_t max_bytes, std::string *text,
                            std::string *why);

enum class yaml_load { ok, missing, not_a_file, unreadable, not_yaml };

// Reads (as read_regular_file does) and parses a YAML file: ok with *root set, or the reason in
// *why: "a FIFO" (not_a_file), "Permission denied" (missing, unreadable), "line 3, column 2:
// ..." (not_yaml). Prints nothing; never throws.
yaml_load load_yaml_file(const std::string &path, yaml_value *root, std::string *why);

// aggregation.file: DFTracer 2.x's rules file, {inclusion: [expr, ...], exclusion: [...]},
// appended to c.aggregation_include / aggregation_exclude. Problems are one message each.
void read_rules_file(config &c, config_messages &msgs);

}  // namespace dftrace::detail
