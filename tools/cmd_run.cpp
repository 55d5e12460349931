// cmd_run.cpp: `dftrace run [options] -- CMD ARGS...`: runs a command traced, with its I/O
// (libdftrace_io preloaded), and every process it starts the same way (they inherit the
// environment this sets).
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common.hpp"

namespace dftrace::tools {

namespace {

const char *k_run_usage =
    "usage: dftrace run [--prefix P] [--data-dirs D1:D2|all] [--no-io] -- CMD [ARGS...]\n"
    "  runs CMD with tracing enabled; its POSIX and STDIO calls are traced by preloading\n"
    "  libdftrace_io (unless --no-io), in CMD and every process it starts\n"
    "  --prefix P      trace files are P-<exec>-<pid>-app.pfw.gz (DFTRACE_LOG_FILE)\n"
    "  --data-dirs D   trace I/O only under these directories (DFTRACE_IO_DATA_DIR; default all)\n"
    "  --torch         trace PyTorch automatically (DFTRACE_TORCH_AUTO=1, dftrace/_autostart on\n"
    "                  PYTHONPATH)\n";

// libdftrace_io: DFTRACE_IO_LIBRARY, else as installed (../lib) or as built (../src/io).
std::string io_library() {
  if (const char *e = std::getenv("DFTRACE_IO_LIBRARY"); e && *e) return e;
  return beside_self(
      {"/../lib/libdftrace_io.so", "/../lib64/libdftrace_io.so", "/../src/io/libdftrace_io.so"},
      "");
}

}  // namespace

int cmd_run(int argc, char **argv) {
  std::string prefix, data_dirs;
  bool io = true, torch = false;
  int i = 2;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if ((a == "--prefix" || a == "--data-dirs") && i + 1 < argc) {
      (a == "--prefix" ? prefix : data_dirs) = argv[++i];
    } else if (a == "--torch") {
      torch = true;
    } else if (a == "--no-io") {
      io = false;
    } else if (a == "--help" || a == "-h") {
      fputs(k_run_usage, stdout);
      return 0;
    } else {
      error_line("run: unknown option '" + a + "' (the command comes after --)");
      fputs(k_run_usage, stderr);
      return 2;
    }
  }
  if (i >= argc) {
    error_line("run: no command (dftrace run [options] -- CMD ARGS...)");
    return 2;
  }
  ::setenv("DFTRACE_ENABLE", "1", 1);
  if (!prefix.empty()) ::setenv("DFTRACE_LOG_FILE", prefix.c_str(), 1);
  if (!data_dirs.empty()) ::setenv("DFTRACE_IO_DATA_DIR", data_dirs.c_str(), 1);
  if (torch) {
    const std::string py = python_dir();
    if (py.empty()) {
      error_line(
          "run: --torch: the Python package dftrace (with dftrace/_autostart) was not found "
          "beside this dftrace (set DFTRACE_PYTHON_DIR)");
      return 2;
    }
    ::setenv("DFTRACE_TORCH_AUTO", "1", 1);
    // The start-up hook first, then the package it imports.
    const std::string start = py + "/dftrace/_autostart:" + py;
    const char *old = std::getenv("PYTHONPATH");
    ::setenv("PYTHONPATH", (old && *old ? start + ":" + old : start).c_str(), 1);
  }
  if (io) {
    const std::string lib = io_library();
    if (lib.empty()) {
      error_line("run: libdftrace_io.so not found beside this dftrace (set DFTRACE_IO_LIBRARY)");
      return 2;
    }
    const char *old = std::getenv("LD_PRELOAD");
    const std::string preload = old && *old ? lib + ":" + old : lib;
    ::setenv("LD_PRELOAD", preload.c_str(), 1);
  }
  ::execvp(argv[i], argv + i);
  error_line(std::string("run: can not run '") + argv[i] + "': " + std::strerror(errno));
  return 127;
}

}  // namespace dftrace::tools
