// nvml.cpp: the NVML probe (nvml.hpp).
#include "telemetry/nvml.hpp"

#include <dlfcn.h>

namespace dftrace::detail::telemetry {

namespace {
template <typename F>
bool bind(void *handle, const char *name, F *out, std::string *why) {
  *out = reinterpret_cast<F>(::dlsym(handle, name));
  if (!*out) *why = std::string("NVML lacks ") + name;
  return *out != nullptr;
}
}  // namespace

bool nvml_probe::open(const char *library) {
  close();
  void *h = ::dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = ::dlerror();
    why_ = std::string(library) + " could not be loaded" + (e ? std::string(": ") + e : "");
    return false;
  }
  int (*init)() = nullptr;
  int (*count)(unsigned *) = nullptr;
  bool ok = bind(h, "nvmlInit_v2", &init, &why_) && bind(h, "nvmlShutdown", &shutdown_, &why_) &&
            bind(h, "nvmlDeviceGetCount_v2", &count, &why_) &&
            bind(h, "nvmlDeviceGetHandleByIndex_v2", &handle_by_index_, &why_) &&
            bind(h, "nvmlDeviceGetUtilizationRates", &utilization_, &why_) &&
            bind(h, "nvmlDeviceGetMemoryInfo", &memory_, &why_);
  if (ok && init() != 0) {
    why_ = "nvmlInit_v2 failed (no driver, or no permission)";
    ok = false;
  } else if (ok && count(&count_) != 0) {
    why_ = "nvmlDeviceGetCount_v2 failed";
    shutdown_();
    ok = false;
  }
  if (!ok) {
    ::dlclose(h);
    count_ = 0;
    return false;
  }
  handle_ = h;
  why_.clear();
  return true;
}

bool nvml_probe::sample(std::vector<gpu_sample> *out) {
  out->clear();
  if (!handle_) return false;
  for (unsigned i = 0; i < count_; ++i) {
    void *dev = nullptr;
    unsigned util[2] = {0, 0};
    unsigned long long mem[3] = {0, 0, 0};
    if (handle_by_index_(i, &dev) != 0 || utilization_(dev, util) != 0 || memory_(dev, mem) != 0)
      continue;
    gpu_sample g;
    g.index = i;
    g.util_pct = util[0];
    g.memory_util_pct = util[1];
    g.memory_total_bytes = mem[0];
    g.memory_used_bytes = mem[2];
    out->push_back(g);
  }
  return true;
}

void nvml_probe::close() {
  if (!handle_) return;
  shutdown_();
  ::dlclose(handle_);
  handle_ = nullptr;
  count_ = 0;
}

}  // namespace dftrace::detail::telemetry
