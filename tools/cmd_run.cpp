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

#include "args.hpp"
#include "commands.hpp"
#include "locate.hpp"

namespace dftrace::tools {

namespace {

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

namespace {

// What run was asked to do.
struct run_plan {
  std::string prefix, data_dirs, out;
  bool io = true, torch = false, summary = false, deep = false, script = false, mpi = false;
  bool attach = false;      // not traced until dftrace attach (DFTRACE_ATTACH=1, DFTRACE_ENABLE=0)
  std::string python;       // the interpreter of a script
  std::vector<char *> cmd;  // the command line to run, null-terminated
};

// The options and the command; false (after one line) when they do not make a command line.
bool plan_run(const args_t &a, run_plan *p) {
  p->prefix = a.get("--prefix");
  p->out = a.get("--out");
  p->data_dirs = a.get("--data-dirs");
  p->io = !a.has("--no-io");
  p->mpi = a.has("--mpi");
  p->attach = a.has("--attach");
  p->deep = a.has("--deep");
  p->torch = p->deep || a.has("--torch");
  p->summary = p->torch || a.has("--summary");
  if (a.positional.empty()) {
    error_line("run: no command (dftrace run [options] -- CMD ARGS... or script.py ARGS...)");
    return false;
  }
  if (!a.after_dashdash) {
    if (!is_script(a.positional[0])) {
      error_line("run: unknown option '" + a.positional[0] +
                 "' (the command comes after --, or is a .py; see dftrace run --help)");
      return false;
    }
    p->script = p->torch = p->summary = true;
  }
  if (!p->out.empty()) {
    if (!p->prefix.empty()) {
      error_line("run: --out DIR and --prefix P both say where the traces go: give one");
      return false;
    }
    if (!make_dirs(p->out)) {
      error_line("run: --out " + p->out + ": " + std::strerror(errno));
      return false;
    }
    p->prefix = p->out + "/trace";
  }
  // The command: CMD as given, or the interpreter and script.py ARGS.
  if (p->script) {
    p->python = python_interpreter();
    p->cmd.push_back(p->python.data());
  }
  for (const auto &s : a.positional) p->cmd.push_back(const_cast<char *>(s.c_str()));
  p->cmd.push_back(nullptr);
  return true;
}

// The environment every process of the command inherits; false (after one line) when a part
// dftrace needs is not found.
bool set_environment(const run_plan &p) {
  ::setenv("DFTRACE_ENABLE", p.attach ? "0" : "1", 1);
  if (p.attach) ::setenv("DFTRACE_ATTACH", "1", 1);
  if (!p.prefix.empty()) ::setenv("DFTRACE_LOG_FILE", p.prefix.c_str(), 1);
  if (!p.data_dirs.empty()) ::setenv("DFTRACE_IO_DATA_DIR", p.data_dirs.c_str(), 1);
  if (p.torch) {
    const std::string py = python_dir();
    if (py.empty()) {
      error_line(
          "run: --torch: the Python package dftrace (with dftrace/_autostart) was not found "
          "beside this dftrace (set DFTRACE_PYTHON_DIR)");
      return false;
    }
    ::setenv("DFTRACE_TORCH_AUTO", "1", 1);
    if (p.deep) ::setenv("DFTRACE_TORCH_DEEP", "1", 1);
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
  if (p.io && !preload(io_library(), true, "libdftrace_io.so (set DFTRACE_IO_LIBRARY)"))
    return false;
  return !p.mpi ||
         preload(mpi_library(), false, "--mpi: libdftrace_mpi.so (set DFTRACE_MPI_LIBRARY)");
}

// CMD as a child whose end is waited for; signals reach it (pass_on), then the summary is
// printed and CMD's status returned (or the signal that ended it raised again).
int run_with_summary(run_plan &p) {
  const pid_t child = ::fork();
  if (child < 0) {
    error_line(std::string("run: fork: ") + std::strerror(errno));
    return 127;
  }
  if (child == 0) {
    ::execvp(p.cmd[0], p.cmd.data());
    error_line(std::string("run: can not run '") + p.cmd[0] + "': " + std::strerror(errno));
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
  const char *prefix = std::getenv("DFTRACE_LOG_FILE");
  summarize(prefix && *prefix ? prefix : "./trace", child);
  if (WIFSIGNALED(st)) {
    const int sig = WTERMSIG(st);
    ::signal(sig, SIG_DFL);
    ::kill(::getpid(), sig);  // ends run as CMD ended (a shell sees the same signal)
    return 128 + sig;         // a signal that does not end the process (none of the above)
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

}  // namespace

int cmd_run(const args_t &a) {
  run_plan p;
  if (!plan_run(a, &p) || !set_environment(p)) return 2;
  if (p.summary) return run_with_summary(p);
  ::execvp(p.cmd[0], p.cmd.data());
  error_line(std::string("run: can not run '") + p.cmd[0] + "': " + std::strerror(errno));
  return 127;
}

}  // namespace dftrace::tools
