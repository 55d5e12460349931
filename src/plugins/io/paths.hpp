// paths.hpp: which files are traced: the data directories (io.data_dir), the exclusions
// (io.exclude), and the absolute, normalised path every decision and every FH line uses
// (README.md, "Which files").
#pragma once

#include <limits.h>

#include <string>

namespace dftrace::io {

// The rules, set once per process: by the application mode's binding (from the configuration
// it is given) or, when preloaded, from the effective configuration at the first traced call.
// data_dirs: ':'-separated directories, or "all"/empty: every file. exclude: ':'-separated
// directories and patterns (an entry with *, ? or [ is an fnmatch pattern on the whole path);
// its default is the configuration's (src/config: the one home of io.exclude's list).
void set_rules(const std::string &data_dirs, const std::string &exclude);
// The rules from the effective configuration (libdftrace's io.data_dir and io.exclude), unless
// set_rules was called before. Safe to call from any thread, any number of times.
void load_rules();

// `path` made absolute (against the working directory, or the directory `dirfd` names when it
// is not AT_FDCWD) and normalised ("//", "." and ".." removed, without resolving links) into
// out[PATH_MAX]; false when that can not be done (too long, unknown directory).
bool absolute_path(int dirfd, const char *path, char *out);

// Whether the file at the absolute, normalised path `abs` is traced. Never the trace itself
// (*.pfw, *.pfw.gz); otherwise the most specific of the data directories and the exclusions
// decides, and a pattern of io.exclude always excludes.
bool traced_file(const char *abs);

// Both: whether `path` (relative to dirfd) is traced, its absolute path left in out[PATH_MAX].
bool traced_path(int dirfd, const char *path, char *out);

}  // namespace dftrace::io
