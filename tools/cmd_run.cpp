// cmd_run.cpp: `dftrace run [options] -- CMD ARGS...`: runs a command traced, with its I/O
// (libdftrace_io preloaded), and every process it starts the same way (they inherit the
// environment this sets).
#include <signal.h>
#include <sys/wait.h>
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
    "usage: dftrace run [--prefix P] [--data-dirs D1:D2|all] [--no-io] [--mpi] -- CMD [ARGS...]\n"
    "  runs CMD with tracing enabled; its POSIX and STDIO calls are traced by preloading\n"
    "  libdftrace_io (unless --no-io), in CMD and every process it starts\n"
    "  --prefix P      trace files are P-<exec>-<pid>-app.pfw.gz (DFTRACE_LOG_FILE)\n"
    "  --data-dirs D   trace I/O only under these directories (DFTRACE_IO_DATA_DIR; default all)\n"
    "  --mpi           also preload libdftrace_mpi: MPI communication and MPI-IO (MPIIO) in\n"
    "                  the ranks of an mpirun CMD that was not linked with it\n"
    "  --torch         trace PyTorch automatically (DFTRACE_TORCH_AUTO=1, dftrace/_autostart on\n"
    "                  PYTHONPATH); implies --summary\n"
    "  --summary       when CMD ends, print a short summary of its trace on stderr (steps, step\n"
    "                  time, time per category, data-loader wait, the trace's path)\n";

// libdftrace_io: DFTRACE_IO_LIBRARY, else as installed (../lib) or as built (beside libdftrace).
std::string io_library() {
  if (const char *e = std::getenv("DFTRACE_IO_LIBRARY"); e && *e) return e;
  return beside_self(
      {"/../lib/libdftrace_io.so", "/../lib64/libdftrace_io.so", "/../libdftrace_io.so"}, "");
}

// libdftrace_mpi: DFTRACE_MPI_LIBRARY, else as installed (../lib) or as built (../src/mpi).
std::string mpi_library() {
  if (const char *e = std::getenv("DFTRACE_MPI_LIBRARY"); e && *e) return e;
  return beside_self(
      {"/../lib/libdftrace_mpi.so", "/../lib64/libdftrace_mpi.so", "/../src/mpi/libdftrace_mpi.so"},
      "");
}

}  // namespace

// Prints the summary of the trace a finished child wrote (python3 -m dftrace.watch --summary).
void summarize(const std::string &prefix, pid_t pid) {
  const std::string py = python_dir();
  if (py.empty()) {
    error_line("run: no summary: the Python package dftrace was not found beside this dftrace");
    return;
  }
  const pid_t c = ::fork();
  if (c == 0) {
    const char *old = std::getenv("PYTHONPATH");
    ::setenv("PYTHONPATH", (old && *old ? py + ":" + old : py).c_str(), 1);
    ::unsetenv("LD_PRELOAD");
    ::unsetenv("DFTRACE_ENABLE");
    const std::string python = is_file("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    const std::string pid_text = std::to_string(pid);
    ::execlp(python.c_str(), python.c_str(), "-m", "dftrace.watch", "--summary", "--prefix",
             prefix.c_str(), "--pid", pid_text.c_str(), static_cast<char *>(nullptr));
    _exit(127);
  }
  int st = 0;
  if (c > 0)
    while (::waitpid(c, &st, 0) < 0 && errno == EINTR) {
    }
}

int cmd_run(int argc, char **argv) {
  std::string prefix, data_dirs;
  bool io = true, torch = false, summary = false, mpi = false;
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
      summary = true;
    } else if (a == "--summary") {
      summary = true;
    } else if (a == "--no-io") {
      io = false;
    } else if (a == "--mpi") {
      mpi = true;
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
  if (mpi) {
    const std::string lib = mpi_library();
    if (lib.empty()) {
      error_line(
          "run: --mpi: libdftrace_mpi.so not found beside this dftrace (set "
          "DFTRACE_MPI_LIBRARY)");
      return 2;
    }
    const char *old = std::getenv("LD_PRELOAD");
    ::setenv("LD_PRELOAD", (old && *old ? std::string(old) + ":" + lib : lib).c_str(), 1);
  }
  if (!summary) {
    ::execvp(argv[i], argv + i);
    error_line(std::string("run: can not run '") + argv[i] + "': " + std::strerror(errno));
    return 127;
  }
  // With a summary: CMD runs as a child; Ctrl-C and SIGTERM reach it (the terminal sends
  // SIGINT to both; this process waits), then the summary is printed and CMD's status
  // returned.
  const pid_t child = ::fork();
  if (child < 0) {
    error_line(std::string("run: fork: ") + std::strerror(errno));
    return 127;
  }
  if (child == 0) {
    ::execvp(argv[i], argv + i);
    error_line(std::string("run: can not run '") + argv[i] + "': " + std::strerror(errno));
    _exit(127);
  }
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGTERM, SIG_IGN);
  int st = 0;
  while (::waitpid(child, &st, 0) < 0 && errno == EINTR) {
  }
  const int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  const char *p = std::getenv("DFTRACE_LOG_FILE");
  summarize(p && *p ? p : "./trace", child);
  return rc;
}

}  // namespace dftrace::tools
