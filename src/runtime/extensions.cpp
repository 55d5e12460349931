// extensions.cpp: dlopen()s the optional GPU component so that the core never links CUDA.
#include "runtime/extensions.hpp"

#include <dlfcn.h>

#include <atomic>
#include <string>

#include "base/log.hpp"

namespace dftrace::detail {

namespace {

// The plugin interface of libdftrace_cupti (src/gpu/README.md): start with the kinds list
// and the log level (0 error .. 3 debug), stop (flush and drain). Both are safe to call more
// than once.
using start_fn = int (*)(const char *kinds, int log_level);
using stop_fn = void (*)(void);

std::atomic<stop_fn> g_stop{nullptr};

std::string own_directory() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void *>(&start_extensions), &info) == 0 || !info.dli_fname)
    return std::string();
  std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

}  // namespace

void start_extensions(const config &cfg) {
  if (!cfg.gpu_cupti) return;
  const char *name = "libdftrace_cupti.so";
  // The component of THIS libdftrace: the one installed (or built) beside it. Never another
  // copy found on the loader's path (an older install in /usr/local/lib, say): the interface
  // between the two is private and changes with them. Only where libdftrace can not tell
  // where it is does the loader's path decide.
  const std::string beside = own_directory();
  const std::string path = beside.empty() ? std::string(name) : beside + name;
  void *lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = ::dlerror();
    log_once(log_level::warn, "gpu.cupti load",
             "gpu.cupti is on but %s could not be loaded (%s); tracing goes on without GPU events",
             name, e ? e : "not found");
    return;
  }
  auto start = reinterpret_cast<start_fn>(::dlsym(lib, "dftrace_cupti_start"));
  auto stop = reinterpret_cast<stop_fn>(::dlsym(lib, "dftrace_cupti_stop"));
  if (!start || !stop) {
    log_once(log_level::warn, "gpu.cupti symbols",
             "%s lacks dftrace_cupti_start/stop; tracing goes on without GPU events", name);
    return;
  }
  // The component reports its own failure (no GPU, no CUPTI) in one line.
  if (start(cfg.gpu_kinds.c_str(), cfg.log_level) == 0) g_stop.store(stop);
}

void stop_extensions() noexcept {
  if (stop_fn stop = g_stop.load()) stop();
}

}  // namespace dftrace::detail
