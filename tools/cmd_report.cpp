// cmd_report.cpp: `dftrace report TRACES... -o report.html`: runs the Python report
// (bindings/python/dftrace/report.py: dftrace.read, matplotlib, one self-contained HTML file)
// with the package found beside this dftrace, on Debian's Python unless DFTRACE_PYTHON names
// another interpreter.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common.hpp"

namespace dftrace::tools {

int cmd_report(int argc, char **argv) {
  const std::string py = python_dir();
  if (py.empty()) {
    error_line(
        "report: the Python package dftrace was not found beside this dftrace (set "
        "DFTRACE_PYTHON_DIR)");
    return 2;
  }
  // The interpreter that has pandas and matplotlib: DFTRACE_PYTHON, else Debian's, else the
  // first python3 on PATH.
  std::string python = "python3";
  if (const char *e = std::getenv("DFTRACE_PYTHON"); e && *e) {
    python = e;
  } else if (is_file("/usr/bin/python3")) {
    python = "/usr/bin/python3";
  }
  const char *old = std::getenv("PYTHONPATH");
  ::setenv("PYTHONPATH", (old && *old ? py + ":" + old : py).c_str(), 1);
  std::vector<char *> args;
  std::string m = "-m", mod = "dftrace.report";
  args.push_back(python.data());
  args.push_back(m.data());
  args.push_back(mod.data());
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  ::execvp(python.c_str(), args.data());
  error_line("report: can not run " + python + ": " + std::strerror(errno));
  return 127;
}

}  // namespace dftrace::tools
