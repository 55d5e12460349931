// paths.cpp: the path filter (paths.hpp): rules from the configuration, absolute paths, and the
// most-specific-wins decision.
#include "plugins/io/paths.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "plugins/io/interpose.hpp"
#include "plugins/io/path_pattern.hpp"

namespace dftrace::io {

namespace {

struct rules {
  bool all = true;                     // no data directory: every file (but the exclusions)
  std::vector<std::string> include;    // normalised absolute directories
  std::vector<std::string> exclude;    // likewise
  std::vector<path_pattern> patterns;  // patterns that exclude
};

// Published once; never freed (interposers may read it at any time, even during exit).
std::atomic<const rules *> g_rules{nullptr};
std::once_flag g_load_once;

bool is_pattern(const std::string &s) { return s.find_first_of("*?[") != std::string::npos; }

// Whether `abs` (n bytes) is `dir` or lies below it.
bool under(const char *abs, size_t n, const std::string &dir) {
  const size_t k = dir.size();
  if (k == 1) return true;  // "/"
  return n >= k && std::memcmp(abs, dir.data(), k) == 0 && (abs[k] == '/' || abs[k] == '\0');
}

void split_into(const std::string &s, rules &r, bool include) {
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(':', start);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    if (include && item == "all") {
      r.all = true;
      continue;
    }
    if (!include && is_pattern(item)) {
      r.patterns.emplace_back(item);
      continue;
    }
    char abs[PATH_MAX], real[PATH_MAX];
    if (!absolute_path(AT_FDCWD, item.c_str(), abs)) continue;
    auto &dirs = include ? r.include : r.exclude;
    dirs.push_back(abs);
    // Also its links resolved: the working directory and the descriptors' paths in /proc,
    // against which relative and *at paths are resolved, are physical.
    if (::realpath(abs, real) && std::strcmp(real, abs) != 0) dirs.push_back(real);
  }
}

// The effective value of a configuration key (dftrace_config_get), "" when there is none.
std::string config_value(const char *key) {
  char small[512];
  const int n = dftrace_config_get(key, small, sizeof small);
  if (n < 0) return "";
  if (static_cast<size_t>(n) < sizeof small) return std::string(small, static_cast<size_t>(n));
  std::string value(static_cast<size_t>(n) + 1, '\0');
  const int again = dftrace_config_get(key, value.data(), value.size());
  value.resize(again < 0 ? 0 : std::min(static_cast<size_t>(again), value.size() - 1));
  return value;
}

}  // namespace

void set_rules(const std::string &data_dirs, const std::string &exclude) {
  std::call_once(g_load_once, [&] {
    errno_keeper keep;
    auto *r = new rules();
    r->all = false;
    split_into(data_dirs, *r, true);
    if (r->include.empty()) r->all = true;  // empty or "all"
    split_into(exclude, *r, false);
    g_rules.store(r, std::memory_order_release);
  });
}

void load_rules() {
  if (g_rules.load(std::memory_order_acquire)) return;
  errno_keeper keep;  // reached before the application's first traced call on a path
  inside g;
  // Only reached while recording: the process's tracing starts here if it has not yet (the
  // configuration is read at initialisation; a second init changes nothing).
  dftrace_init(nullptr);
  set_rules(config_value("io.data_dir"), config_value("io.exclude"));
}

bool absolute_path(int dirfd, const char *path, char *out) {
  return plugin::absolute_path(dirfd, path, out);
}

bool traced_file(const char *abs) {
  const size_t n = std::strlen(abs);
  const auto ends_with = [&](const char *suffix) {
    const size_t k = std::strlen(suffix);
    return n >= k && std::memcmp(abs + n - k, suffix, k) == 0;
  };
  if (ends_with(".pfw") || ends_with(".pfw.gz")) return false;
  load_rules();
  const rules &r = *g_rules.load(std::memory_order_acquire);
  size_t inc = 0, exc = 0;  // the longest matching directory of each list (+1)
  bool included = r.all;
  for (const std::string &d : r.include)
    if (under(abs, n, d) && d.size() + 1 > inc) {
      inc = d.size() + 1;
      included = true;
    }
  if (!included) return false;
  for (const path_pattern &p : r.patterns)
    if (p.matches(abs, n)) return false;
  // Only a directory at least as long as the include that matched can exclude: the shorter
  // ones (/proc, /usr/lib, ... against a data directory) are not compared; nor those whose
  // byte after the leading '/' differs (most of the default list, without a call).
  for (const std::string &d : r.exclude)
    if (d.size() + 1 >= inc && d.size() + 1 > exc && (d.size() == 1 || d[1] == abs[1]) &&
        under(abs, n, d))
      exc = d.size() + 1;
  return exc == 0 || inc > exc;
}

bool traced_path(int dirfd, const char *path, char *out) {
  return absolute_path(dirfd, path, out) && traced_file(out);
}

}  // namespace dftrace::io
