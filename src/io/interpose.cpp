// interpose.cpp: the shared parts of the interposers: symbol lookup, nodes, the path filter and
// the descriptor and stream tables.
#include "io/interpose.hpp"

#include <limits.h>
#include <stdlib.h>
#include <sys/syscall.h>

namespace dftrace::io {

namespace {

// Descriptors below this are tracked (the usual limit is 1024; more are passed through).
constexpr int k_max_fd = 1 << 16;
std::atomic<bool> g_fd_traced[k_max_fd];
std::atomic<uint64_t> g_fd_hash[k_max_fd];

// Streams: open addressing over FILE* (unique while open); a closed stream leaves a tombstone.
constexpr size_t k_streams = 1 << 12;
FILE *const k_tombstone = reinterpret_cast<FILE *>(1);
std::atomic<FILE *> g_stream_key[k_streams];
std::atomic<uint64_t> g_stream_hash[k_streams];
size_t stream_slot(FILE *f) {
  return static_cast<size_t>((reinterpret_cast<uintptr_t>(f) >> 4) * 0x9E3779B97F4A7C15ull >> 52);
}

bool starts_with(const char *s, const char *prefix) {
  return std::strncmp(s, prefix, std::strlen(prefix)) == 0;
}
bool ends_with(const char *s, size_t n, const char *suffix) {
  const size_t k = std::strlen(suffix);
  return n >= k && std::memcmp(s + n - k, suffix, k) == 0;
}

// The data directories: the configuration's io.data_dir (DFTRACE_IO_DATA_DIR, DFTracer's
// DFTRACER_DATA_DIR, or YAML), ':'-separated prefixes, or "all" (also when unset): every file.
// Read once from the effective configuration, the one home of its value.
std::string configured_data_dir() {
  inside g;
  // Only reached while recording: the process's tracing starts here if it has not yet (the
  // configuration is read at initialisation; a second init changes nothing).
  dftrace_init(nullptr);
  const char *text = dftrace_config_describe();  // "key = value  (source)" lines
  const char *key = "io.data_dir = ";
  const char *line = text ? std::strstr(text, key) : nullptr;
  if (!line) return "";
  const char *start = line + std::strlen(key);
  const char *end = std::strchr(start, '\n');
  std::string value(start, end ? end : start + std::strlen(start));
  const size_t source = value.rfind("  (");
  if (source != std::string::npos) value.erase(source);
  return value;
}

const std::vector<std::string> &data_dirs() {
  static const std::vector<std::string> dirs = [] {
    std::vector<std::string> out;
    const std::string s = configured_data_dir();
    size_t start = 0;
    while (start < s.size()) {
      const size_t end = s.find(':', start);
      std::string d = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
      while (d.size() > 1 && d.back() == '/') d.pop_back();
      if (!d.empty() && d != "all") out.push_back(d);
      if (end == std::string::npos) break;
      start = end + 1;
    }
    return out;
  }();
  return dirs;
}

}  // namespace

void *next_symbol(const char *name, void *self) {
  void *f = dlsym(RTLD_NEXT, name);
  if (!f || f == self) {
    static const char msg[] = "dftrace: libdftrace_io: the C library has no function to call\n";
    ssize_t ignored = ::syscall(SYS_write, 2, msg, sizeof msg - 1);
    (void)ignored;
    std::abort();
  }
  return f;
}

dftrace_node_t *node_of(std::atomic<dftrace_node_t *> &slot, const char *category,
                        const char *name) {
  if (!g_ready.load(std::memory_order_acquire)) return nullptr;
  dftrace_node_t *n = slot.load(std::memory_order_acquire);
  if (!n) {
    inside g;
    n = dftrace_node_child(dftrace_category(category), name);
    slot.store(n, std::memory_order_release);
  }
  return n;
}

bool traced_path(const char *path) {
  if (!path || !*path) return false;
  if (starts_with(path, "/proc/") || starts_with(path, "/sys/") || starts_with(path, "/dev/"))
    return false;
  const size_t n = std::strlen(path);
  if (ends_with(path, n, ".pfw") || ends_with(path, n, ".pfw.gz")) return false;
  const std::vector<std::string> &dirs = data_dirs();
  if (dirs.empty()) return true;
  char absolute[PATH_MAX];
  const char *p = path;
  if (path[0] != '/') {  // relative: against the working directory
    if (!::getcwd(absolute, sizeof absolute)) return false;
    const size_t len = std::strlen(absolute);
    if (len + 1 + n >= sizeof absolute) return false;
    absolute[len] = '/';
    std::memcpy(absolute + len + 1, path, n + 1);
    p = absolute;
  }
  for (const std::string &d : dirs)
    if (std::strncmp(p, d.c_str(), d.size()) == 0 && (p[d.size()] == '/' || p[d.size()] == '\0'))
      return true;
  return false;
}

uint64_t file_hash(const char *path) {
  inside g;
  return dftrace_hash_define(DFTRACE_HASH_FILE, path);
}

void fd_track(int fd, uint64_t fhash) {
  if (fd < 0 || fd >= k_max_fd) return;
  g_fd_hash[fd].store(fhash, std::memory_order_relaxed);
  g_fd_traced[fd].store(true, std::memory_order_release);
}

bool fd_hash(int fd, uint64_t *fhash) {
  if (fd < 0 || fd >= k_max_fd || !g_fd_traced[fd].load(std::memory_order_acquire)) return false;
  *fhash = g_fd_hash[fd].load(std::memory_order_relaxed);
  return true;
}

void fd_forget(int fd) {
  if (fd >= 0 && fd < k_max_fd) g_fd_traced[fd].store(false, std::memory_order_release);
}

void stream_track(FILE *f, uint64_t fhash) {
  if (!f) return;
  const size_t start = stream_slot(f);
  for (size_t i = 0; i < k_streams; ++i) {
    const size_t s = (start + i) & (k_streams - 1);
    FILE *k = g_stream_key[s].load(std::memory_order_acquire);
    if (k == f) {
      g_stream_hash[s].store(fhash, std::memory_order_release);
      return;
    }
    if ((k == nullptr || k == k_tombstone) &&
        g_stream_key[s].compare_exchange_strong(k, f, std::memory_order_acq_rel)) {
      g_stream_hash[s].store(fhash, std::memory_order_release);
      return;
    }
  }
}

namespace {
std::atomic<FILE *> *stream_find(FILE *f, size_t *slot) {
  const size_t start = stream_slot(f);
  for (size_t i = 0; i < k_streams; ++i) {
    const size_t s = (start + i) & (k_streams - 1);
    FILE *k = g_stream_key[s].load(std::memory_order_acquire);
    if (k == nullptr) return nullptr;
    if (k == f) {
      *slot = s;
      return &g_stream_key[s];
    }
  }
  return nullptr;
}
}  // namespace

bool stream_hash(FILE *f, uint64_t *fhash) {
  size_t s;
  if (!f || !stream_find(f, &s)) return false;
  *fhash = g_stream_hash[s].load(std::memory_order_acquire);
  return true;
}

void stream_forget(FILE *f) {
  size_t s;
  if (!f) return;
  if (std::atomic<FILE *> *k = stream_find(f, &s)) {
    k->store(k_tombstone, std::memory_order_release);
  }
}

}  // namespace dftrace::io
