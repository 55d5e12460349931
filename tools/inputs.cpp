// inputs.cpp: input traces: directories expanded, files opened, planning damage reported.
#include "inputs.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "analysis/inputs.hpp"

namespace dftrace::tools {

namespace {

bool is_trace_name(const std::string &name) {
  auto ends = [&](const char *suf) {
    const size_t n = std::strlen(suf);
    return name.size() >= n && name.compare(name.size() - n, n, suf) == 0;
  };
  return ends(".pfw") || ends(".pfw.gz");
}

void walk(const std::string &dir, std::vector<std::string> *out) {
  DIR *d = opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> names;
  while (dirent *e = readdir(d)) {
    const std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto &n : names) {
    const std::string p = dir + "/" + n;
    struct stat st {};
    if (stat(p.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      walk(p, out);
    } else if (is_trace_name(n)) {
      out->push_back(p);
    }
  }
}

}  // namespace

std::vector<std::string> expand_inputs(const std::vector<std::string> &in, bool *ok,
                                       std::vector<std::pair<std::string, std::string>> *again) {
  std::vector<std::string> out;
  for (const auto &p : in) {
    struct stat st {};
    if (stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      const size_t before = out.size();
      walk(p, &out);
      if (out.size() == before) {
        error_line(p + ": no trace files (*.pfw, *.pfw.gz) in this directory");
        *ok = false;
      }
    } else {
      out.push_back(p);  // missing files are reported when opened, with the others going on
    }
  }
  std::vector<std::pair<std::string, std::string>> dropped;
  out = analysis::unique_files(out, &dropped);
  if (again)
    *again = std::move(dropped);
  else
    for (const auto &d : dropped)
      error_line("warning: " + d.first + ": " + analysis::given_again(d.second));
  return out;
}

std::vector<std::string> input_files(const args_t &a, const char *cmd, bool *ok,
                                     std::vector<std::pair<std::string, std::string>> *again) {
  std::vector<std::string> files = expand_inputs(a.positional, ok, again);
  if (files.empty()) error_line(std::string(cmd) + ": no input files");
  return files;
}

bool open_trace(const std::string &path, detail::trace_file *f, bool *ok) {
  std::string why;
  if (f->open(path, &why)) return true;
  error_line(path + ": " + why);
  *ok = false;
  return false;
}

size_t print_plan_issues(const detail::trace_file &f, const std::string &path) {
  for (const auto &i : f.plan_issues())
    error_line(path + ": byte " + std::to_string(i.offset) + ": " + i.message);
  return f.plan_issues().size();
}

int tool_threads() {
  if (const char *e = std::getenv("DFTRACE_TOOL_THREADS")) {
    const int n = std::atoi(e);
    if (n >= 1 && n <= 256) return n;
  }
  const unsigned h = std::thread::hardware_concurrency();
  return h == 0 ? 1 : static_cast<int>(std::min(h, 64u));
}

detail::read_options tool_read_options() {
  detail::read_options opt;
  opt.threads = tool_threads();
  return opt;
}

}  // namespace dftrace::tools
