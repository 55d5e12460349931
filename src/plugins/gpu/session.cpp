// session.cpp: the CUPTI session of libdftrace_cupti.so: subscription, API-entry callback,
// activity buffers, the worker thread that translates them, and the plugin entry points
// dftrace_cupti_start/stop that the core calls (src/runtime/extensions.cpp).
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "dftrace/plugin.h"
#include "plugins/gpu/cupti_api.hpp"
#include "plugins/gpu/translate.hpp"

namespace dftrace::gpu {
namespace {

// A buffer is handed over when full, so its size bounds how late a launch is translated, and
// the correlation ring must still hold the launch's region then: 1 MiB is about 0.4 s of a
// 300-step torch loop's records (bench/RESULTS.md, "On a GPU").
constexpr size_t k_buffer_bytes = 1u << 20;
constexpr auto k_flush_every = std::chrono::milliseconds(250);
constexpr auto k_stop_wait = std::chrono::seconds(20);

std::atomic<int> g_log_level{1};  // 0 error, 1 warn (the default), 2 info, 3 debug

// One warning line on stderr, unless log_level is "error".
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void say(const char *fmt, ...) {
  if (g_log_level.load(std::memory_order_relaxed) < 1) return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "dftrace: gpu: %s\n", line);
}

struct session {
  const cupti_api *api = nullptr;
  correlation_ring ring;
  std::vector<bool> remembered_runtime, remembered_driver;  // by callback id (remember_call)
  translator tr{&ring, nullptr, kinds{}};
  CUpti_SubscriberHandle subscriber{};

  std::mutex mu;
  std::condition_variable wake;  // worker: a buffer is queued, or stop wants a flush
  std::condition_variable idle;  // stop: the queue is empty and nothing is in hand
  std::deque<std::pair<uint8_t *, size_t>> queue;
  bool busy = false;
  bool reset_pending = false;  // a new trace file: name the tracks again
  kinds pending_kinds;
  std::atomic<uint64_t> dropped{0};
  bool dropped_reported = false;
};

// Leaked on purpose: CUPTI may hand over buffers while the process exits.
session *g_session = nullptr;
std::mutex g_start_mutex;
bool g_failed = false;

const char *api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const char *name = nullptr;
  if (g_session && g_session->api->callback_name(domain, cbid, &name) != CUPTI_SUCCESS)
    return nullptr;
  return name;
}

// Runs on the application's threads, inside every CUDA runtime/driver call: keep it short.
void CUPTIAPI on_api(void *, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto *cb = static_cast<const CUpti_CallbackData *>(data);
  if (!cb || cb->callbackSite != CUPTI_API_ENTER) return;
  session &s = *g_session;
  remember_call(s.ring,
                domain == CUPTI_CB_DOMAIN_RUNTIME_API ? s.remembered_runtime : s.remembered_driver,
                cbid, cb->correlationId, dftrace_region_current());
}

void CUPTIAPI on_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *max_records = 0;
  *buffer = static_cast<uint8_t *>(std::aligned_alloc(8, k_buffer_bytes));
  *size = *buffer ? k_buffer_bytes : 0;  // 0: CUPTI drops records (counted below)
}

// Runs on a CUPTI thread, or on whichever thread asked CUPTI to flush: only queue.
void CUPTIAPI on_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t,
                                  size_t valid) {
  session &s = *g_session;
  size_t n = 0;
  if (s.api->dropped_records(ctx, stream, &n) == CUPTI_SUCCESS && n) s.dropped.fetch_add(n);
  if (!buffer) return;
  if (valid == 0) {
    std::free(buffer);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.queue.emplace_back(buffer, valid);
  }
  s.wake.notify_one();
}

// The offset from CUPTI's clock to the tracer's: both read back to back, best of 5 tries
// (shortest bracket), CUPTI's reading taken as the midpoint of the two tracer readings.
int64_t measure_offset(const cupti_api &api) {
  int64_t offset = 0;
  uint64_t best_bracket = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    uint64_t cupti_ns = 0;
    const uint64_t before_ns = dftrace_now_ns();
    if (api.get_timestamp(&cupti_ns) != CUPTI_SUCCESS) return offset;
    const uint64_t after_ns = dftrace_now_ns();
    if (after_ns - before_ns < best_bracket) {
      best_bracket = after_ns - before_ns;
      offset = static_cast<int64_t>(before_ns + best_bracket / 2) - static_cast<int64_t>(cupti_ns);
    }
  }
  return offset;
}

void worker() {
  session &s = *g_session;
  dftrace_thread_name("dftrace GPU activity");
  std::unique_lock<std::mutex> lock(s.mu);
  auto next_flush = std::chrono::steady_clock::now() + k_flush_every;
  for (;;) {
    if (std::chrono::steady_clock::now() >= next_flush) {
      // Every k_flush_every, busy or not: ask CUPTI for the buffers whose records are all
      // complete, full or not (queued by the completion callback, on this thread).
      lock.unlock();
      s.api->flush_all(0);
      lock.lock();
      next_flush = std::chrono::steady_clock::now() + k_flush_every;
      continue;
    }
    if (s.queue.empty()) {
      s.wake.wait_until(lock, next_flush, [&] { return !s.queue.empty(); });
      continue;
    }
    auto [buffer, valid] = s.queue.front();
    s.queue.pop_front();
    s.busy = true;
    if (s.reset_pending) {
      s.reset_pending = false;
      s.tr.set_kinds(s.pending_kinds);
      s.tr.new_file();
    }
    lock.unlock();
    s.tr.set_clock_offset(measure_offset(*s.api));
    CUpti_Activity *record = nullptr;
    while (s.api->next_record(buffer, valid, &record) == CUPTI_SUCCESS) s.tr.translate(record);
    std::free(buffer);
    lock.lock();
    s.busy = false;
    if (s.queue.empty()) s.idle.notify_all();
  }
}

std::string driver_hint() {
  void *cuda = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!cuda) return ": no CUDA driver (libcuda.so.1 not found)";
  ::dlclose(cuda);
  return ": the CUDA driver is present; is a GPU visible to this process?";
}

// Starts CUPTI; returns false (after one line) when it can not.
// The worker thread, started with the asynchronous signals blocked: the application's handlers
// run on its own threads, never on this one (whose lock a handler's traced call could wait on).
// The synchronous ones (a fault, an abort) stay, for the fatal-signal path.
void start_worker() {
  sigset_t blocked, saved;
  sigfillset(&blocked);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS})
    sigdelset(&blocked, sig);
  pthread_sigmask(SIG_BLOCK, &blocked, &saved);
  try {
    std::thread(worker).detach();
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &saved, nullptr);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
}

bool start_cupti(session &s, const kinds &k) {
  const cupti_api &api = *s.api;
  CUptiResult r =
      api.subscribe(&s.subscriber, reinterpret_cast<CUpti_CallbackFunc>(on_api), nullptr);
  if (r != CUPTI_SUCCESS) {
    std::string why = api.describe(r);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
      why += ": another CUPTI tool (a profiler) is attached";
    else
      why += driver_hint();
    say("CUPTI could not start (%s); tracing goes on without GPU events", why.c_str());
    return false;
  }
  api.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);  // tids as dftrace writes them
  // Before the domains are enabled: the callback reads these.
  auto names = [&api](CUpti_CallbackDomain domain) {
    return [&api, domain](uint32_t cbid) -> const char * {
      const char *name = nullptr;
      return api.callback_name(domain, cbid, &name) == CUPTI_SUCCESS ? name : nullptr;
    };
  };
  s.remembered_runtime = remembered_calls(CUPTI_RUNTIME_TRACE_CBID_SIZE, k.api_all,
                                          names(CUPTI_CB_DOMAIN_RUNTIME_API));
  s.remembered_driver =
      remembered_calls(CUPTI_DRIVER_TRACE_CBID_SIZE, k.api_all, names(CUPTI_CB_DOMAIN_DRIVER_API));
  api.enable_domain(1, s.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
  api.enable_domain(1, s.subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
  r = api.register_callbacks(on_buffer_requested, on_buffer_completed);
  if (r != CUPTI_SUCCESS) {
    say("CUPTI refused the activity buffers (%s); tracing goes on without GPU events",
        api.describe(r));
    return false;
  }
  std::string failed;
  int enabled = 0;
  auto enable = [&](bool want, CUpti_ActivityKind kind, const char *name) {
    if (!want) return;
    const CUptiResult e = api.activity_enable(kind);
    if (e == CUPTI_SUCCESS)
      ++enabled;
    else
      failed += std::string(failed.empty() ? "" : ", ") + name + " (" + api.describe(e) + ")";
  };
  enable(k.kernel, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernel");
  enable(k.memcpy, CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy");
  enable(k.memcpy, CUPTI_ACTIVITY_KIND_MEMCPY2, "peer memcpy");
  enable(k.memset, CUPTI_ACTIVITY_KIND_MEMSET, "memset");
  enable(k.sync, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "sync");
  enable(k.sync, CUPTI_ACTIVITY_KIND_CONTEXT, "context");
  enable(k.runtime, CUPTI_ACTIVITY_KIND_RUNTIME, "runtime");
  enable(k.driver, CUPTI_ACTIVITY_KIND_DRIVER, "driver");
  if (!failed.empty())
    say("CUPTI did not enable %s; %s", failed.c_str(),
        enabled ? "the other kinds are recorded" : "tracing goes on without GPU events");
  return enabled > 0;
}

}  // namespace
}  // namespace dftrace::gpu

using namespace dftrace::gpu;

extern "C" {

// Plugin entry point (dftrace/plugin.h, src/plugins/gpu/README.md): start recording `kind_bits`
// (DFTRACE_GPU_*: gpu.kinds as the configuration accepted it); `log_level` is the core's (0 error
// .. 3 debug). Called by the core each time tracing starts, while it holds its initialisation lock:
// nothing here may call back into dftrace (the worker thread does that later). Later calls only
// update the kinds and name the tracks again in the new file. 0 when recording, -1 otherwise (after
// one line on stderr, once per process).
__attribute__((visibility("default"))) int dftrace_cupti_start(unsigned kind_bits, int log_level) {
  try {
    g_log_level.store(log_level);
    const kinds k = kinds_of(kind_bits);
    std::lock_guard<std::mutex> guard(g_start_mutex);
    if (g_failed) return -1;
    if (g_session) {
      std::lock_guard<std::mutex> lock(g_session->mu);
      g_session->reset_pending = true;
      g_session->pending_kinds = k;
      return 0;
    }
    std::string why;
    const cupti_api *api = load_cupti(&why);
    if (!api) {
      say("%s; tracing goes on without GPU events", why.c_str());
      g_failed = true;
      return -1;
    }
    auto *s = new session;
    s->api = api;
    s->tr = translator(&s->ring, api_name, k);
    g_session = s;
    if (!start_cupti(*s, k)) {
      g_failed = true;
      return -1;  // the session stays: CUPTI may still call back into it
    }
    start_worker();
    // A forked child has no worker thread and its own CUDA state: it records no GPU events
    // and its finalize must not wait for a worker that is not there.
    pthread_atfork(nullptr, nullptr, [] { g_failed = true; });
    return 0;
  } catch (const std::exception &e) {
    say("could not start (%s); tracing goes on without GPU events", e.what());
    return -1;
  } catch (...) {
    return -1;
  }
}

// Plugin entry point: hand every record CUPTI holds to the trace and wait until it is
// written (bounded wait). Called by dftrace_finalize before it closes the file.
__attribute__((visibility("default"))) void dftrace_cupti_stop(void) {
  try {
    session *s = g_session;
    if (!s || g_failed) return;
    s->api->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::unique_lock<std::mutex> lock(s->mu);
    s->idle.wait_for(lock, k_stop_wait, [&] { return s->queue.empty() && !s->busy; });
    const uint64_t lost = s->dropped.load();
    if (lost && !s->dropped_reported) {
      s->dropped_reported = true;
      say("CUPTI dropped %llu activity records (buffers full); they are missing from the trace",
          static_cast<unsigned long long>(lost));
    }
  } catch (...) {
  }
}

}  // extern "C"
