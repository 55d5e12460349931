// translate.hpp: CUPTI activity records -> trace events through the C ABI (no CUPTI calls
// here, so that the translation is tested with records built in memory, without a GPU).
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "dftrace/plugin.h"

namespace dftrace::gpu {

// Which activity to record (gpu.kinds; src/plugins/gpu/README.md says what each kind means).
struct kinds {
  bool kernel = false, memcpy = false, memset = false, sync = false;
  bool runtime = false, driver = false, api_all = false;
};

// The kinds of DFTRACE_GPU_* bits (dftrace/plugin.h): what the configuration accepted from
// gpu.kinds, as libdftrace passes it to dftrace_cupti_start.
kinds kinds_of(unsigned bits);

// Correlation id -> the host region open when the API call that carries it began.
// Written on application threads (CUPTI API-entry callback), read by the translator: no
// lock; a slot is reused after k_slots newer ids, and a reused slot is detected, not guessed.
class correlation_ring {
 public:
  // 4 MiB: about 2.8 s of a torch loop's correlation ids (94,000 a second on an H100), well
  // past how late a record is translated (k_buffer_bytes, k_flush_every in session.cpp).
  static constexpr uint32_t k_slots = 1u << 18;
  correlation_ring();
  // Thread-safe, wait-free.
  void remember(uint32_t correlation_id, uint64_t region) noexcept;
  // The region stored for the id, or 0 (none open, unknown, or overwritten since).
  uint64_t lookup(uint32_t correlation_id) const noexcept;

 private:
  struct slot {
    std::atomic<uint32_t> id{0};
    std::atomic<uint64_t> region{0};
  };
  std::unique_ptr<slot[]> slots_;
};

// Which API calls of a domain are remembered in the ring, by callback id: those that issue or
// wait for GPU work (api_issues_work on the name without its suffix), or all of them with
// `all` (gpu.kinds api_all, whose API events all look their region up). `name` gives a
// callback id's name, or null.
std::vector<bool> remembered_calls(uint32_t count, bool all,
                                   const std::function<const char *(uint32_t)> &name);

// On API entry (the CUPTI callback): the open region under the call's correlation id, for the
// calls `remembered[cbid]` selects. Every CUDA call takes a correlation id (PyTorch's warm-up
// makes tens of thousands a second of cuGetProcAddress, module loads, cudaGetDevice); storing
// only the calls an activity record can name keeps those from pushing a launch's slot out of
// the ring before its record is translated.
inline void remember_call(correlation_ring &ring, const std::vector<bool> &remembered,
                          uint32_t cbid, uint32_t correlation_id, uint64_t region) noexcept {
  if (cbid < remembered.size() && remembered[cbid]) ring.remember(correlation_id, region);
}

// Track (tid) of a device/stream pair: 2^30 + device * 2^20 + stream. A stream of
// CUPTI_SYNCHRONIZATION_INVALID_VALUE (no stream) maps to the device's "sync" track.
constexpr int64_t k_track_base = int64_t{1} << 30;
constexpr uint32_t k_no_stream = 0xFFFFFFFFu;
int64_t stream_track(uint32_t device, uint32_t stream);
std::string track_label(uint32_t device, uint32_t stream);

// A CUPTI API name without its version suffix: "cudaLaunchKernel_v7000" -> "cudaLaunchKernel".
std::string api_base_name(const char *name);
// True for API calls that issue or wait for GPU work (the default "runtime"/"driver" filter).
bool api_issues_work(const std::string &base_name);

// Names an API callback id; returns null when unknown. The session passes CUPTI's
// cuptiGetCallbackName; tests pass their own.
using api_name_fn = const char *(*)(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);

// Turns records into dftrace_event_complete calls. One instance, used by one thread at a
// time (the session's worker).
class translator {
 public:
  translator(const correlation_ring *ring, api_name_fn names, const kinds &k);

  // mono_ns = cupti_ns + offset: the conversion to dftrace_now_ns()'s clock.
  void set_clock_offset(int64_t offset_ns) { offset_ns_ = offset_ns; }
  int64_t clock_offset() const { return offset_ns_; }
  void set_kinds(const kinds &k) { kinds_ = k; }

  // Writes the event of one record, or nothing (kind not selected, record without times).
  // Returns true when an event was handed to the tracer.
  bool translate(const CUpti_Activity *record);

  // Forget which tracks were named (a new trace file needs its thread_name lines again).
  void new_file() { named_.clear(); }

  uint64_t translated() const { return translated_; }
  uint64_t skipped() const { return skipped_; }

 private:
  struct api_info {
    dftrace_node_t *node = nullptr;  // null: not recorded
    bool known = false;
  };

  void ensure_nodes();
  uint64_t to_mono(uint64_t cupti_ns) const;
  int64_t track_for(uint32_t device, uint32_t stream);
  const std::string &demangle(const char *name);
  bool emit(dftrace_node_t *node, uint64_t start, uint64_t end, int64_t track,
            std::vector<dftrace_arg_t> &args, uint32_t correlation_id);
  bool kernel(const CUpti_ActivityKernel10 &r);
  bool memcpy(const CUpti_ActivityMemcpy6 &r);
  bool peer_copy(const CUpti_ActivityMemcpyPtoP4 &r);
  bool memset(const CUpti_ActivityMemset4 &r);
  bool sync(const CUpti_ActivitySynchronization2 &r);
  bool api(const CUpti_ActivityAPI &r, CUpti_CallbackDomain domain);
  uint32_t device_of_context(uint32_t context) const;

  const correlation_ring *ring_;
  api_name_fn names_;
  kinds kinds_;
  int64_t offset_ns_ = 0;
  dftrace_node_t *kernel_node_ = nullptr;
  dftrace_node_t *transfer_node_ = nullptr;
  dftrace_node_t *memset_node_ = nullptr;
  dftrace_node_t *sync_node_ = nullptr;
  dftrace_node_t *cuda_category_ = nullptr;
  std::unordered_set<int64_t> named_;
  std::unordered_map<uint32_t, uint32_t> context_device_;
  std::unordered_map<std::string, std::string> demangled_;
  std::unordered_map<uint64_t, api_info> apis_;  // (domain << 32 | cbid)
  uint64_t translated_ = 0;
  uint64_t skipped_ = 0;
};

}  // namespace dftrace::gpu
