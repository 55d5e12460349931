// paths.cpp: the path filter (paths.hpp): rules from the configuration, absolute paths, and the
// most-specific-wins decision.
#include "plugins/io/paths.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "plugins/io/interpose.hpp"
#include "plugins/io/path_normal.hpp"
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

// The directory a descriptor names, from /proc/self/fd (a system call of its own, not an
// interposed one).
bool fd_directory(int fd, char *out) {
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const long n = ::syscall(SYS_readlinkat, AT_FDCWD, link, out, PATH_MAX - 1);
  if (n <= 0 || out[0] != '/') return false;
  out[n] = '\0';
  return true;
}

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

// "key = value  (source)" lines of dftrace_config_describe(): the value of `key`.
std::string described(const char *text, const char *key) {
  const std::string k = std::string(key) + " = ";
  const char *line = text ? std::strstr(text, k.c_str()) : nullptr;
  if (!line) return "";
  const char *start = line + k.size();
  const char *end = std::strchr(start, '\n');
  std::string value(start, end ? end : start + std::strlen(start));
  const size_t source = value.rfind("  (");
  if (source != std::string::npos) value.erase(source);
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
  const char *text = dftrace_config_describe();
  set_rules(described(text, "io.data_dir"), described(text, "io.exclude"));
}

bool absolute_path(int dirfd, const char *path, char *out) {
  if (!path || !*path) return false;
  const size_t n = std::strlen(path);
  if (path[0] == '/') {
    if (n >= PATH_MAX) return false;
    std::memcpy(out, path, n + 1);
    if (!is_normal(out, n)) normalise(out);  // usually nothing to remove: a quick check
    return true;
  } else {
    errno_keeper keep;
    if (dirfd == AT_FDCWD) {
      if (!::getcwd(out, PATH_MAX)) return false;
    } else if (!fd_directory(dirfd, out)) {
      return false;
    }
    const size_t len = std::strlen(out);
    if (len + 1 + n >= PATH_MAX) return false;
    out[len] = '/';
    std::memcpy(out + len + 1, path, n + 1);
    if (!is_normal(out, len + 1 + n)) normalise(out);
  }
  return true;
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
  for (const std::string &d : r.exclude)
    if (under(abs, n, d) && d.size() + 1 > exc) exc = d.size() + 1;
  return exc == 0 || inc > exc;
}

bool traced_path(int dirfd, const char *path, char *out) {
  return absolute_path(dirfd, path, out) && traced_file(out);
}

}  // namespace dftrace::io
