// cmd_python.cpp: the subcommands written in Python, run with the package found beside this
// dftrace, on Debian's Python unless DFTRACE_PYTHON names another interpreter:
// `dftrace report TRACES... -o report.html` (dftrace/report.py: one self-contained HTML file)
// and `dftrace watch -- python3 train.py` (dftrace/watch.py: a live dashboard).
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

// Replaces this process with `python -m dftrace.<module> ARGS...` (argv[2] on).
int run_module(const char *cmd, const char *module, int argc, char **argv) {
  const std::string py = python_dir();
  if (py.empty()) {
    error_line(std::string(cmd) +
               ": the Python package dftrace was not found beside this dftrace (set "
               "DFTRACE_PYTHON_DIR)");
    return 2;
  }
  std::string python = python_interpreter();
  const char *old = std::getenv("PYTHONPATH");
  ::setenv("PYTHONPATH", (old && *old ? py + ":" + old : py).c_str(), 1);
  std::vector<char *> args;
  std::string m = "-m", mod = std::string("dftrace.") + module;
  args.push_back(python.data());
  args.push_back(m.data());
  args.push_back(mod.data());
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  ::execvp(python.c_str(), args.data());
  error_line(std::string(cmd) + ": can not run " + python + ": " + std::strerror(errno));
  return 127;
}

}  // namespace

int cmd_report(int argc, char **argv) { return run_module("report", "report", argc, argv); }
int cmd_watch(int argc, char **argv) { return run_module("watch", "watch", argc, argv); }

}  // namespace dftrace::tools
