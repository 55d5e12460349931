// nvml.hpp: GPU utilisation and memory through NVML, loaded at run time (dlopen) when present;
// nothing is linked, and a machine without the library simply has no GPU readings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dftrace::detail::telemetry {

struct gpu_sample {
  unsigned index = 0;
  unsigned util_pct = 0, memory_util_pct = 0;  // busy time of the GPU and of its memory
  uint64_t memory_used_bytes = 0, memory_total_bytes = 0;
};

// Not thread-safe: one owner (the sampling thread) opens, samples and closes it.
class nvml_probe {
 public:
  nvml_probe() = default;
  ~nvml_probe() { close(); }
  nvml_probe(const nvml_probe &) = delete;
  nvml_probe &operator=(const nvml_probe &) = delete;

  // Loads `library` (libnvidia-ml.so.1 by default) and initialises NVML. False, with the
  // reason in why(), when the library is absent, lacks a function, or NVML fails to start.
  bool open(const char *library = "libnvidia-ml.so.1");
  // Every device's reading; a device NVML can not read is left out. False when not open.
  bool sample(std::vector<gpu_sample> *out);
  void close();
  // Forgets the library without calling it (a forked child: NVML is the parent's).
  void forget() { handle_ = nullptr; }
  bool is_open() const { return handle_ != nullptr; }
  unsigned devices() const { return count_; }
  const std::string &why() const { return why_; }

 private:
  void *handle_ = nullptr;
  unsigned count_ = 0;
  std::string why_;
  // The few NVML entry points used (signatures as NVML documents them; a device is a pointer).
  int (*shutdown_)() = nullptr;
  int (*handle_by_index_)(unsigned, void **) = nullptr;
  int (*utilization_)(void *, unsigned *) = nullptr;       // nvmlUtilization_t: {gpu, memory}
  int (*memory_)(void *, unsigned long long *) = nullptr;  // nvmlMemory_t: {total, free, used}
};

}  // namespace dftrace::detail::telemetry
