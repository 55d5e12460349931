// locate.hpp: where the rest of dftrace is (the I/O library, the Python package) and which
// Python runs dftrace's Python parts.
#pragma once

#include <initializer_list>
#include <string>

namespace dftrace::tools {

bool is_file(const std::string &p);  // readable
std::string self_path();             // this executable's path, "" when unknown
// The first path matching one of `patterns` (globs relative to this executable's directory) in
// which `probe` (appended) exists: where the rest of dftrace is, installed or in the build tree.
std::string beside_self(std::initializer_list<const char *> patterns, const char *probe);
// The directory holding the Python package `dftrace`: DFTRACE_PYTHON_DIR, else as installed
// (../lib/python3*/dist-packages) or as built (../bindings/python); "" when not found.
std::string python_dir();
// The interpreter for dftrace's Python parts and for `dftrace run/watch script.py`:
// DFTRACE_PYTHON, else Debian's /usr/bin/python3 (it has torch, pandas, matplotlib), else the
// first python3 on PATH.
std::string python_interpreter();

}  // namespace dftrace::tools
