// extensions.cpp: dlopen()s the optional components (the GPU one, so that the core never links
// CUDA; the I/O interposers, so that the core never interposes anything itself).
#include "runtime/extensions.hpp"

#include <dlfcn.h>

#include <atomic>
#include <string>

#include "base/gpu_kinds.hpp"
#include "base/log.hpp"
#include "dftrace/plugin.h"
#include "output/output_file.hpp"

namespace dftrace::detail {

namespace {

// The plug-ins' entry points have the types plugin.h declares (the plug-ins define them with
// those types). The gpu.kinds bits agree with the configuration's words.
std::atomic<dftrace_cupti_stop_t *> g_stop{nullptr};
// libdftrace_io's folded stream calls (src/plugins/io/README.md) written before the trace ends.
std::atomic<dftrace_io_flush_folded_t *> g_io_flush{nullptr};

constexpr bool same_bits(unsigned ours, unsigned plugins) { return ours == plugins; }
static_assert(
    same_bits(k_gpu_kernel, DFTRACE_GPU_KERNEL) && same_bits(k_gpu_memcpy, DFTRACE_GPU_MEMCPY) &&
    same_bits(k_gpu_memset, DFTRACE_GPU_MEMSET) && same_bits(k_gpu_sync, DFTRACE_GPU_SYNC) &&
    same_bits(k_gpu_runtime, DFTRACE_GPU_RUNTIME) && same_bits(k_gpu_driver, DFTRACE_GPU_DRIVER) &&
    same_bits(k_gpu_api_all, DFTRACE_GPU_API_ALL) && same_bits(k_gpu_all, DFTRACE_GPU_ALL));

std::string own_directory() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void *>(&start_extensions), &info) == 0 || !info.dli_fname)
    return std::string();
  std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

// The component of THIS libdftrace: the one installed (or built) beside it. Never another copy
// found on the loader's path (an older install in /usr/local/lib, say): the interface between the
// two is private and changes with them. Only where libdftrace can not tell where it is does the
// loader's path decide. Null, with one message saying what goes without it, when it can not load.
void *load_component(const char *name, const char *key, const char *without) {
  const std::string beside = own_directory();
  const std::string path = beside.empty() ? std::string(name) : beside + name;
  void *lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = ::dlerror();
    log_once(log_level::warn, key, "%s is on but %s could not be loaded (%s); tracing goes on %s",
             key, name, e ? e : "not found", without);
  }
  return lib;
}

// Whether the configuration switches libdftrace_io's categories off for good: io.enable false,
// and no `categories` rule turns POSIX, STDIO or H5 back on.
bool io_off(const config &cfg) {
  if (cfg.io) return false;
  for (const auto &[path, on] : cfg.categories) {
    const std::string top = path.substr(0, path.find('.'));
    if (on && (top == "POSIX" || top == "STDIO" || top == "H5")) return false;
  }
  return true;
}

// The application mode of I/O tracing: a process that initialises dftrace with data
// directories set (io.data_dir, DFTRACER_DATA_DIR) and io.init function (DFTracer's
// DFTRACER_INIT=FUNCTION, the default) has its POSIX and STDIO calls traced without preloading.
void start_io(const config &cfg) {
  if (io_off(cfg)) {
    // Preloaded (dftrace run --no-io is the way to have none) with its I/O switched off by the
    // configuration: its calls go back to the C library, at no cost (src/plugins/io/README.md).
    void *program = ::dlopen(nullptr, RTLD_LAZY);
    const auto unbind = program ? DFTRACE_PLUGIN_LOOKUP(program, dftrace_io_unbind) : nullptr;
    if (program) ::dlclose(program);
    // (nothing gives the trace file's number back now: the file holds none between writes)
    if (unbind && unbind() == 0) trace_fd_guarded(false);
    return;
  }
  // Preloaded: found among the program's symbols.
  g_io_flush.store(DFTRACE_PLUGIN_LOOKUP(RTLD_DEFAULT, dftrace_io_flush_folded));
  if (!cfg.io_function || cfg.data_dir.empty() || (!cfg.posix && !cfg.stdio)) return;
  void *lib = load_component("libdftrace_io.so", "io", "without I/O events");
  if (!lib) return;
  if (auto flush = DFTRACE_PLUGIN_LOOKUP(lib, dftrace_io_flush_folded)) g_io_flush.store(flush);
  auto bind = DFTRACE_PLUGIN_LOOKUP(lib, dftrace_io_bind);
  if (!bind) {
    log_once(log_level::warn, "io symbols",
             "libdftrace_io.so lacks dftrace_io_bind; tracing goes on without I/O events");
    return;
  }
  if (bind(cfg.data_dir.c_str(), cfg.io_exclude.c_str()) < 0)
    log_once(log_level::warn, "io bind",
             "I/O tracing without preloading is not supported on this architecture; preload "
             "libdftrace_io (dftrace run) to trace I/O");
}

}  // namespace

void start_extensions(const config &cfg) {
  start_io(cfg);
  if (!cfg.gpu_cupti) return;
  const char *name = "libdftrace_cupti.so";
  void *lib = load_component(name, "gpu.cupti", "without GPU events");
  if (!lib) return;
  auto start = DFTRACE_PLUGIN_LOOKUP(lib, dftrace_cupti_start);
  auto stop = DFTRACE_PLUGIN_LOOKUP(lib, dftrace_cupti_stop);
  if (!start || !stop) {
    log_once(log_level::warn, "gpu.cupti symbols",
             "%s lacks dftrace_cupti_start/stop; tracing goes on without GPU events", name);
    return;
  }
  // The configuration accepted the words (its normal form): only the bits go across. The
  // component reports its own failure (no GPU, no CUPTI) in one line.
  unsigned kinds = 0;
  if (!parse_gpu_kinds(cfg.gpu_kinds, &kinds, nullptr, nullptr)) return;
  if (start(kinds, cfg.log_level) == 0) g_stop.store(stop);
}

void stop_extensions() noexcept {
  if (auto *flush = g_io_flush.load()) flush();
  if (auto *stop = g_stop.load()) stop();
}

}  // namespace dftrace::detail
