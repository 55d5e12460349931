// locate.cpp: where the rest of dftrace is, beside this dftrace command.
#include <glob.h>
#include <limits.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "locate.hpp"

namespace dftrace::tools {

bool is_file(const std::string &p) { return ::access(p.c_str(), R_OK) == 0; }

std::string self_path() {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "";
  self[n] = '\0';
  return self;
}

std::string beside_self(std::initializer_list<const char *> patterns, const char *probe) {
  std::string dir = self_path();
  if (dir.empty()) return "";
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

std::string python_dir() {
  const char *probe = "/dftrace/_autostart/sitecustomize.py";
  if (const char *e = std::getenv("DFTRACE_PYTHON_DIR"); e && *e)
    return is_file(std::string(e) + probe) ? e : "";
  return beside_self({"/../lib/python3*/dist-packages", "/../bindings/python"}, probe);
}

std::string python_interpreter() {
  if (const char *e = std::getenv("DFTRACE_PYTHON"); e && *e) return e;
  return is_file("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

}  // namespace dftrace::tools
