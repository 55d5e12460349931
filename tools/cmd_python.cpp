// cmd_python.cpp: the subcommands written in Python, run with the package found beside this
// dftrace, on Debian's Python unless DFTRACE_PYTHON names another interpreter:
// `dftrace report TRACES... -o report.html` (dftrace/report.py: one self-contained HTML file)
// `dftrace watch -- python3 train.py` (dftrace/watch.py: a live dashboard) and
// `dftrace analyze --scheduler ADDR` (dftrace/_analyze_cli.py: the analysis on a Dask cluster).
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

// Replaces this process with `python -m dftrace.<module> ARGS...`; DFTRACE_COMMAND names this
// dftrace, for the Python parts that run one of its commands (the report's --compare).
int run_module(const char *cmd, const char *module, const std::vector<std::string> &argv) {
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
  if (const std::string self = self_path(); !self.empty())
    ::setenv("DFTRACE_COMMAND", self.c_str(), 1);
  std::vector<std::string> words = {python, "-m", std::string("dftrace.") + module};
  words.insert(words.end(), argv.begin(), argv.end());
  std::vector<char *> args;
  for (std::string &w : words) args.push_back(w.data());
  args.push_back(nullptr);
  ::execvp(python.c_str(), args.data());
  error_line(std::string(cmd) + ": can not run " + python + ": " + std::strerror(errno));
  return 127;
}

namespace {

std::vector<std::string> after_command(int argc, char **argv) {
  return std::vector<std::string>(argv + (argc > 2 ? 2 : argc), argv + argc);
}

}  // namespace

int cmd_report(int argc, char **argv) {
  return run_module("report", "report", after_command(argc, argv));
}
int cmd_watch(int argc, char **argv) {
  return run_module("watch", "watch", after_command(argc, argv));
}

}  // namespace dftrace::tools
