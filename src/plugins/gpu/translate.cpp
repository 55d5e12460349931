// translate.cpp: CUPTI activity records -> dftrace_event_complete calls.
#include "plugins/gpu/translate.hpp"

#include <cxxabi.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace dftrace::gpu {

// ---------------------------------------------------------------- kinds

kinds kinds_of(unsigned bits) {
  kinds k;
  k.kernel = bits & DFTRACE_GPU_KERNEL;
  k.memcpy = bits & DFTRACE_GPU_MEMCPY;
  k.memset = bits & DFTRACE_GPU_MEMSET;
  k.sync = bits & DFTRACE_GPU_SYNC;
  k.runtime = bits & DFTRACE_GPU_RUNTIME;
  k.driver = bits & DFTRACE_GPU_DRIVER;
  k.api_all = bits & DFTRACE_GPU_API_ALL;
  return k;
}

// A CUPTI activity record as the record type its kind says it is.
template <typename Record>
const Record &as(const CUpti_Activity *record) {
  return *reinterpret_cast<const Record *>(record);
}

// ---------------------------------------------------------------- correlation ring

correlation_ring::correlation_ring() : slots_(new slot[k_slots]) {}

void correlation_ring::remember(uint32_t correlation_id, uint64_t region) noexcept {
  slot &s = slots_[correlation_id & (k_slots - 1)];
  // Invalidate, write, publish. The release store of the region orders the invalidation
  // before it, so a reader that acquires a newer writer's region then sees that writer's 0
  // (or later) in its second read of the id, never the old id: a found region belongs to
  // its id. No standalone fences (the thread sanitizer can not follow them); on x86 these
  // are plain moves.
  s.id.store(0, std::memory_order_relaxed);
  s.region.store(region, std::memory_order_release);
  s.id.store(correlation_id, std::memory_order_release);
}

uint64_t correlation_ring::lookup(uint32_t correlation_id) const noexcept {
  if (correlation_id == 0) return 0;
  const slot &s = slots_[correlation_id & (k_slots - 1)];
  if (s.id.load(std::memory_order_acquire) != correlation_id) return 0;
  const uint64_t region = s.region.load(std::memory_order_acquire);
  if (s.id.load(std::memory_order_relaxed) != correlation_id) return 0;
  return region;
}

// ---------------------------------------------------------------- tracks and names

int64_t stream_track(uint32_t device, uint32_t stream) {
  const int64_t slot = stream == k_no_stream ? 0xFFFFF : static_cast<int64_t>(stream % 0xFFFFF);
  return k_track_base + static_cast<int64_t>(device & 0x3FF) * (int64_t{1} << 20) + slot;
}

std::string track_label(uint32_t device, uint32_t stream) {
  std::string s = "GPU " + std::to_string(device);
  if (stream == k_no_stream) return s + " sync";
  return s + " stream " + std::to_string(stream);
}

std::string api_base_name(const char *name) {
  if (!name) return std::string();
  std::string s = name;
  const auto u = s.rfind("_v");
  if (u != std::string::npos && u + 2 < s.size()) {
    bool digits = true;
    for (size_t i = u + 2; i < s.size(); ++i)
      digits &= std::isdigit(static_cast<unsigned char>(s[i])) != 0;
    if (digits) s.resize(u);
  }
  // cudaMemcpy_ptds / cuLaunchKernel_ptsz: per-thread default-stream variants
  for (const char *tail : {"_ptds", "_ptsz"}) {
    const size_t n = std::strlen(tail);
    if (s.size() > n && s.compare(s.size() - n, n, tail) == 0) s.resize(s.size() - n);
  }
  return s;
}

bool api_issues_work(const std::string &n) {
  for (const char *w :
       {"Launch", "Memcpy", "Memset", "Synchronize", "EventRecord", "StreamWaitEvent", "WaitEvent"})
    if (n.find(w) != std::string::npos) return true;
  return false;
}

std::vector<bool> remembered_calls(uint32_t count, bool all,
                                   const std::function<const char *(uint32_t)> &name) {
  std::vector<bool> out(count, all);
  if (all) return out;
  for (uint32_t id = 0; id < count; ++id) {
    const char *n = name(id);
    out[id] = n && api_issues_work(api_base_name(n));
  }
  return out;
}

namespace {

const char *copy_kind_name(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "unknown";
  }
}

const char *memory_kind_name(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return "pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return "pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return "device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return "array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return "managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return "device_static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return "managed_static";
    default: return "unknown";
  }
}

const char *sync_type_name(CUpti_ActivitySynchronizationType t) {
  switch (t) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "event_synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "stream_wait_event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "stream_synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "context_synchronize";
    default: return "unknown";
  }
}

std::string dims(int64_t x, int64_t y, int64_t z) {
  return std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(z);
}

dftrace_arg_t arg_i(const char *k, int64_t v) {
  dftrace_arg_t a;
  a.key = k;
  a.type = DFTRACE_ARG_INT;
  a.value.i = v;
  return a;
}

dftrace_arg_t arg_s(const char *k, const char *v) {
  dftrace_arg_t a;
  a.key = k;
  a.type = DFTRACE_ARG_STRING;
  a.value.s = v;
  return a;
}

}  // namespace

// ---------------------------------------------------------------- translator

translator::translator(const correlation_ring *ring, api_name_fn names, const kinds &k)
    : ring_(ring), names_(names), kinds_(k) {}

void translator::ensure_nodes() {
  if (kernel_node_) return;
  dftrace_node_t *device = dftrace_category("device");
  kernel_node_ = dftrace_node_child(device, "kernel");
  transfer_node_ = dftrace_node_child(device, "transfer");
  memset_node_ = dftrace_node_child(device, "memset");
  sync_node_ = dftrace_node_child(device, "sync");
  cuda_category_ = dftrace_category("cuda");
}

uint64_t translator::to_mono(uint64_t cupti_ns) const {
  const int64_t m = static_cast<int64_t>(cupti_ns) + offset_ns_;
  return m < 0 ? 0 : static_cast<uint64_t>(m);
}

int64_t translator::track_for(uint32_t device, uint32_t stream) {
  const int64_t t = stream_track(device, stream);
  if (named_.insert(t).second) dftrace_track_name(t, track_label(device, stream).c_str());
  return t;
}

const std::string &translator::demangle(const char *name) {
  static const std::string unknown = "unknown";
  if (!name) return unknown;
  auto it = demangled_.find(name);
  if (it != demangled_.end()) return it->second;
  if (demangled_.size() > 65536) demangled_.clear();  // bounded: JIT code can make many names
  int status = 0;
  char *d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = (status == 0 && d) ? std::string(d) : std::string(name);
  std::free(d);
  return demangled_.emplace(name, std::move(out)).first->second;
}

uint32_t translator::device_of_context(uint32_t context) const {
  auto it = context_device_.find(context);
  return it == context_device_.end() ? k_no_stream : it->second;
}

bool translator::emit(dftrace_node_t *node, uint64_t start, uint64_t end, int64_t track,
                      std::vector<dftrace_arg_t> &args, uint32_t correlation_id) {
  if (start == 0 || end < start) {  // CUPTI leaves 0 when it could not time the activity
    ++skipped_;
    return false;
  }
  args.push_back(arg_i("correlation_id", correlation_id));
  if (ring_) {
    if (const uint64_t region = ring_->lookup(correlation_id))
      args.push_back(arg_i("host_region", static_cast<int64_t>(region)));
  }
  dftrace_event_complete(node, to_mono(start), to_mono(end), track, args.data(), args.size());
  ++translated_;
  return true;
}

bool translator::kernel(const CUpti_ActivityKernel10 &r) {
  context_device_[r.contextId] = r.deviceId;
  const std::string grid = dims(r.gridX, r.gridY, r.gridZ);
  const std::string block = dims(r.blockX, r.blockY, r.blockZ);
  std::vector<dftrace_arg_t> a;
  a.reserve(10);
  a.push_back(arg_s("kernel", demangle(r.name).c_str()));
  a.push_back(arg_s("grid", grid.c_str()));
  a.push_back(arg_s("block", block.c_str()));
  a.push_back(arg_i("device", r.deviceId));
  a.push_back(arg_i("stream", r.streamId));
  a.push_back(arg_i("shared_bytes", int64_t{r.staticSharedMemory} + r.dynamicSharedMemory));
  a.push_back(arg_i("registers", r.registersPerThread));
  return emit(kernel_node_, r.start, r.end, track_for(r.deviceId, r.streamId), a, r.correlationId);
}

namespace {
// What every copy carries (device-local and peer copies alike).
template <typename Copy>
std::vector<dftrace_arg_t> copy_args(const Copy &r) {
  std::vector<dftrace_arg_t> a;
  a.reserve(10);
  a.push_back(arg_i("bytes", static_cast<int64_t>(r.bytes)));
  a.push_back(arg_s("kind", copy_kind_name(r.copyKind)));
  a.push_back(arg_s("src_kind", memory_kind_name(r.srcKind)));
  a.push_back(arg_s("dst_kind", memory_kind_name(r.dstKind)));
  a.push_back(arg_i("device", r.deviceId));
  a.push_back(arg_i("stream", r.streamId));
  return a;
}
}  // namespace

bool translator::memcpy(const CUpti_ActivityMemcpy6 &r) {
  context_device_[r.contextId] = r.deviceId;
  std::vector<dftrace_arg_t> a = copy_args(r);
  // The copy carries the driver call's correlation id; the runtime call (cudaMemcpy) that
  // made that driver call has its own, given here so that both API events can be found.
  if (r.runtimeCorrelationId != 0 && r.runtimeCorrelationId != r.correlationId)
    a.push_back(arg_i("runtime_correlation_id", r.runtimeCorrelationId));
  return emit(transfer_node_, r.start, r.end, track_for(r.deviceId, r.streamId), a,
              r.correlationId);
}

bool translator::peer_copy(const CUpti_ActivityMemcpyPtoP4 &r) {
  std::vector<dftrace_arg_t> a = copy_args(r);
  a.push_back(arg_i("src_device", r.srcDeviceId));
  a.push_back(arg_i("dst_device", r.dstDeviceId));
  return emit(transfer_node_, r.start, r.end, track_for(r.deviceId, r.streamId), a,
              r.correlationId);
}

bool translator::memset(const CUpti_ActivityMemset4 &r) {
  context_device_[r.contextId] = r.deviceId;
  std::vector<dftrace_arg_t> a;
  a.reserve(8);
  a.push_back(arg_i("bytes", static_cast<int64_t>(r.bytes)));
  a.push_back(arg_i("value", r.value));
  a.push_back(arg_i("device", r.deviceId));
  a.push_back(arg_i("stream", r.streamId));
  return emit(memset_node_, r.start, r.end, track_for(r.deviceId, r.streamId), a, r.correlationId);
}

bool translator::sync(const CUpti_ActivitySynchronization2 &r) {
  const uint32_t device = device_of_context(r.contextId);
  std::vector<dftrace_arg_t> a;
  a.reserve(8);
  a.push_back(arg_s("type", sync_type_name(r.type)));
  if (device != k_no_stream) a.push_back(arg_i("device", device));
  if (r.streamId != CUPTI_SYNCHRONIZATION_INVALID_VALUE) a.push_back(arg_i("stream", r.streamId));
  // The wait is the host's, and overlaps the work it waits for: on the stream's track it
  // would cross that work's slices, so every sync goes on the device's own sync track. A
  // device never seen (no kernel, copy or context record yet) gets device slot 1023.
  const uint32_t track_device = device == k_no_stream ? 1023u : device;
  return emit(sync_node_, r.start, r.end, track_for(track_device, k_no_stream), a, r.correlationId);
}

bool translator::api(const CUpti_ActivityAPI &r, CUpti_CallbackDomain domain) {
  const uint64_t key = (static_cast<uint64_t>(domain) << 32) | r.cbid;
  api_info &info = apis_[key];
  if (!info.known) {
    info.known = true;
    const char *raw = names_ ? names_(domain, r.cbid) : nullptr;
    std::string base = raw ? api_base_name(raw) : std::string();
    if (base.empty())
      base = (domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "cuda_runtime_" : "cuda_driver_") +
             std::to_string(r.cbid);
    if (kinds_.api_all || api_issues_work(base))
      info.node = dftrace_node_child(cuda_category_, base.c_str());
  }
  if (!info.node) return false;
  std::vector<dftrace_arg_t> a;
  a.reserve(4);
  if (r.returnValue != 0) a.push_back(arg_i("return_value", r.returnValue));
  return emit(info.node, r.start, r.end, static_cast<int64_t>(r.threadId), a, r.correlationId);
}

bool translator::translate(const CUpti_Activity *record) {
  if (!record) return false;
  ensure_nodes();
  const auto rt = CUPTI_CB_DOMAIN_RUNTIME_API, drv = CUPTI_CB_DOMAIN_DRIVER_API;
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return kinds_.kernel && kernel(as<CUpti_ActivityKernel10>(record));
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return kinds_.memcpy && memcpy(as<CUpti_ActivityMemcpy6>(record));
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      return kinds_.memcpy && peer_copy(as<CUpti_ActivityMemcpyPtoP4>(record));
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return kinds_.memset && memset(as<CUpti_ActivityMemset4>(record));
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return kinds_.sync && sync(as<CUpti_ActivitySynchronization2>(record));
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      return kinds_.runtime && api(as<CUpti_ActivityAPI>(record), rt);
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return kinds_.driver && api(as<CUpti_ActivityAPI>(record), drv);
    case CUPTI_ACTIVITY_KIND_CONTEXT: {
      const auto &c = as<CUpti_ActivityContext3>(record);
      context_device_[c.contextId] = c.deviceId;
      return false;
    }
    default: return false;
  }
}

}  // namespace dftrace::gpu
