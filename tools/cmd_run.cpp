// cmd_run.cpp: `dftrace run [options] -- CMD ARGS...` and `dftrace run [options] script.py
// ARGS...`: runs a command (or a Python script, with PyTorch traced) traced, with its I/O
// (libdftrace_io preloaded), and every process it starts the same way (they inherit the
// environment this sets).
#include <signal.h>
#include <sys/stat.h>
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
    "usage: dftrace run [--prefix P | --out DIR] [--data-dirs D1:D2|all] [--no-io] [--mpi]\n"
    "                   [--torch] [--deep] [--summary] -- CMD [ARGS...]\n"
    "       dftrace run [options] script.py [ARGS...]\n"
    "  runs CMD with tracing enabled; its POSIX and STDIO calls are traced by preloading\n"
    "  libdftrace_io (unless --no-io), in CMD and every process it starts. A script.py runs\n"
    "  with Python (DFTRACE_PYTHON, else /usr/bin/python3) as with --torch.\n"
    "  --prefix P      trace files are P-<exec>-<pid>-app.pfw.gz (DFTRACE_LOG_FILE)\n"
    "  --out DIR       trace files go to DIR (made if missing): DIR/trace-<exec>-<pid>-app.pfw.gz\n"
    "  --data-dirs D   trace I/O only under these directories (DFTRACE_IO_DATA_DIR; default all)\n"
    "  --mpi           also preload libdftrace_mpi: MPI communication and MPI-IO (MPIIO) in\n"
    "                  the ranks of an mpirun CMD that was not linked with it\n"
    "  --torch         trace PyTorch automatically (DFTRACE_TORCH_AUTO=1, dftrace/_autostart on\n"
    "                  PYTHONPATH): steps, forward, backward, optimizer, data loading down to\n"
    "                  each sample in the workers, device copies, checkpoints; implies --summary\n"
    "  --deep          --torch, and every model's layers with their memory (DFTRACE_TORCH_DEEP)\n"
    "  --summary       when CMD ends, print a short summary of its trace on stderr (steps, step\n"
    "                  time, time per category, data-loader wait, the trace's path)\n"
    "  CMD's exit status is run's; a signal that ended CMD ends run the same way.\n";

// libdftrace_io: DFTRACE_IO_LIBRARY, else as installed (../lib) or as built (beside libdftrace).
std::string io_library() {
  if (const char *e = std::getenv("DFTRACE_IO_LIBRARY"); e && *e) return e;
  return beside_self(
      {"/../lib/libdftrace_io.so", "/../lib64/libdftrace_io.so", "/../libdftrace_io.so"}, "");
}

// libdftrace_mpi: DFTRACE_MPI_LIBRARY, else as installed (../lib) or as built (../src/plugins/mpi).
std::string mpi_library() {
  if (const char *e = std::getenv("DFTRACE_MPI_LIBRARY"); e && *e) return e;
  return beside_self({"/../lib/libdftrace_mpi.so", "/../lib64/libdftrace_mpi.so",
                      "/../src/plugins/mpi/libdftrace_mpi.so"},
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
    ::unsetenv("DFTRACE_TORCH_AUTO");  // the summary imports no torch
    const std::string python = python_interpreter();
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

namespace {

pid_t g_child = -1;

// SIGINT, SIGTERM, SIGHUP, SIGQUIT reach CMD: a signal sent to run by a process (kill) is
// passed on; one the terminal sent to its foreground group (Ctrl-C) reached CMD already.
void pass_on(int sig, siginfo_t *info, void *) {
  if (g_child > 0 && (info == nullptr || info->si_code <= 0)) ::kill(g_child, sig);
}

bool is_script(const std::string &a) {
  return a.size() > 3 && a[0] != '-' && a.compare(a.size() - 3, 3, ".py") == 0;
}

// mkdir -p
bool make_dirs(const std::string &dir) {
  for (size_t k = 1; k <= dir.size(); ++k) {
    if (k == dir.size() || dir[k] == '/') {
      const std::string part = dir.substr(0, k);
      if (::mkdir(part.c_str(), 0777) != 0 && errno != EEXIST) return false;
    }
  }
  return true;
}

}  // namespace

int cmd_run(int argc, char **argv) {
  std::string prefix, data_dirs, out;
  bool io = true, torch = false, summary = false, deep = false, script = false, mpi = false;
  int i = 2;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if ((a == "--prefix" || a == "--data-dirs" || a == "--out") && i + 1 < argc) {
      (a == "--prefix" ? prefix : a == "--out" ? out : data_dirs) = argv[++i];
    } else if (a == "--torch" || a == "--deep") {
      torch = true;
      summary = true;
      deep = deep || a == "--deep";
    } else if (a == "--summary") {
      summary = true;
    } else if (a == "--no-io") {
      io = false;
    } else if (a == "--mpi") {
      mpi = true;
    } else if (a == "--help" || a == "-h") {
      fputs(k_run_usage, stdout);
      return 0;
    } else if (is_script(a)) {
      script = torch = summary = true;
      break;
    } else {
      error_line("run: unknown option '" + a + "' (the command comes after --, or is a .py)");
      fputs(k_run_usage, stderr);
      return 2;
    }
  }
  if (i >= argc) {
    error_line("run: no command (dftrace run [options] -- CMD ARGS... or script.py ARGS...)");
    return 2;
  }
  if (!out.empty()) {
    if (!prefix.empty()) {
      error_line("run: --out DIR and --prefix P both say where the traces go: give one");
      return 2;
    }
    if (!make_dirs(out)) {
      error_line("run: --out " + out + ": " + std::strerror(errno));
      return 2;
    }
    prefix = out + "/trace";
  }
  // The command: CMD as given, or the interpreter and script.py ARGS.
  std::string python;
  std::vector<char *> cmd;
  if (script) {
    python = python_interpreter();
    cmd.push_back(python.data());
  }
  for (int k = i; k < argc; ++k) cmd.push_back(argv[k]);
  cmd.push_back(nullptr);
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
    if (deep) ::setenv("DFTRACE_TORCH_DEEP", "1", 1);
    // The start-up hook first, then the package it imports.
    const std::string start = py + "/dftrace/_autostart:" + py;
    const char *old = std::getenv("PYTHONPATH");
    ::setenv("PYTHONPATH", (old && *old ? start + ":" + old : start).c_str(), 1);
  }
  // The I/O interposers first (ahead of libc for every object), libdftrace_mpi last (its MPI_*
  // ahead of libmpi's); one clear line when one is not found.
  const auto preload = [](const std::string &lib, bool first, const char *what) {
    if (lib.empty()) {
      error_line(std::string("run: ") + what + " not found beside this dftrace");
      return false;
    }
    const char *old = std::getenv("LD_PRELOAD");
    const std::string rest = old && *old ? old : "";
    ::setenv("LD_PRELOAD",
             (rest.empty() ? lib
              : first      ? lib + ":" + rest
                           : rest + ":" + lib)
                 .c_str(),
             1);
    return true;
  };
  if (io && !preload(io_library(), true, "libdftrace_io.so (set DFTRACE_IO_LIBRARY)")) return 2;
  if (mpi && !preload(mpi_library(), false, "--mpi: libdftrace_mpi.so (set DFTRACE_MPI_LIBRARY)"))
    return 2;
  if (!summary) {
    ::execvp(cmd[0], cmd.data());
    error_line(std::string("run: can not run '") + cmd[0] + "': " + std::strerror(errno));
    return 127;
  }
  // With a summary: CMD runs as a child; signals reach it (pass_on), then the summary is
  // printed and CMD's status returned (or the signal that ended it raised again).
  const pid_t child = ::fork();
  if (child < 0) {
    error_line(std::string("run: fork: ") + std::strerror(errno));
    return 127;
  }
  if (child == 0) {
    ::execvp(cmd[0], cmd.data());
    error_line(std::string("run: can not run '") + cmd[0] + "': " + std::strerror(errno));
    _exit(127);
  }
  g_child = child;
  struct sigaction sa {};
  sa.sa_sigaction = pass_on;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::sigaction(sig, &sa, nullptr);
  int st = 0;
  while (::waitpid(child, &st, 0) < 0 && errno == EINTR) {
  }
  const char *p = std::getenv("DFTRACE_LOG_FILE");
  summarize(p && *p ? p : "./trace", child);
  if (WIFSIGNALED(st)) {
    const int sig = WTERMSIG(st);
    ::signal(sig, SIG_DFL);
    ::kill(::getpid(), sig);  // ends run as CMD ended (a shell sees the same signal)
    return 128 + sig;         // a signal that does not end the process (none of the above)
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

}  // namespace dftrace::tools
