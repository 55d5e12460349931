// cmd_run.cpp: `dftrace run [options] -- CMD ARGS...`: runs a command traced, with its I/O
// (libdftrace_io preloaded), and every process it starts the same way (they inherit the
// environment this sets).
#include <glob.h>
#include <limits.h>
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

bool is_file(const std::string &p) { return ::access(p.c_str(), R_OK) == 0; }

// The first path matching one of `patterns` (globs relative to this executable's directory) in
// which `probe` (appended) exists: where the rest of dftrace is, installed or in the build tree.
std::string beside_self(std::initializer_list<const char *> patterns, const char *probe) {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "";
  self[n] = '\0';
  std::string dir(self);
  dir.erase(dir.rfind('/'));
  for (const char *rel : patterns) {
    glob_t g{};
    if (::glob((dir + rel).c_str(), 0, nullptr, &g) == 0) {
      for (size_t k = 0; k < g.gl_pathc; ++k) {
        const std::string p = g.gl_pathv[k];
        if (is_file(p + probe)) {
          ::globfree(&g);
          return p;
        }
      }
    }
    ::globfree(&g);
  }
  return "";
}

// libdftrace_io: DFTRACE_IO_LIBRARY, else as installed (../lib) or as built (../src/io).
std::string io_library() {
  if (const char *e = std::getenv("DFTRACE_IO_LIBRARY"); e && *e) return e;
  return beside_self(
      {"/../lib/libdftrace_io.so", "/../lib64/libdftrace_io.so", "/../src/io/libdftrace_io.so"},
      "");
}

// The directory holding the Python package `dftrace` (its `_autostart` folder goes on
// PYTHONPATH for --torch): DFTRACE_PYTHON_DIR, else as installed or as built.
std::string python_dir() {
  const char *probe = "/dftrace/_autostart/sitecustomize.py";
  if (const char *e = std::getenv("DFTRACE_PYTHON_DIR"); e && *e)
    return is_file(std::string(e) + probe) ? e : "";
  return beside_self({"/../lib/python3*/dist-packages", "/../bindings/python"}, probe);
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
