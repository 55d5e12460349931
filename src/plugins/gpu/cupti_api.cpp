// cupti_api.cpp: dlopen()s libcupti and resolves the functions of cupti_api.
#include "plugins/gpu/cupti_api.hpp"

#include <dlfcn.h>

#include <mutex>

namespace dftrace::gpu {

const char *cupti_api::describe(CUptiResult r) const {
  const char *s = nullptr;
  if (result_string && result_string(r, &s) == CUPTI_SUCCESS && s) return s;
  return "unknown CUPTI result";
}

namespace {

template <typename F>
bool resolve(void *lib, const char *name, F *out, std::string *missing) {
  *out = reinterpret_cast<F>(::dlsym(lib, name));
  if (!*out) *missing += (missing->empty() ? "" : ", ") + std::string(name);
  return *out != nullptr;
}

}  // namespace

const cupti_api *load_cupti(std::string *why) {
  static std::once_flag once;
  static cupti_api api;
  static bool ok = false;
  static std::string error;
  std::call_once(once, [] {
    // DFTRACE_CUPTI_SONAME / DFTRACE_CUPTI_BUILD_PATH come from CMake (the CUPTI it found).
    const char *candidates[] = {DFTRACE_CUPTI_SONAME, DFTRACE_CUPTI_BUILD_PATH, "libcupti.so"};
    void *lib = nullptr;
    for (const char *c : candidates) {
      if (!c || !*c) continue;
      lib = ::dlopen(c, RTLD_NOW | RTLD_LOCAL);
      if (lib) break;
      const char *e = ::dlerror();
      error = e ? e : "dlopen failed";
    }
    if (!lib) {
      error = "libcupti could not be loaded (" + error + ")";
      return;
    }
    std::string missing;
    resolve(lib, "cuptiSubscribe", &api.subscribe, &missing);
    resolve(lib, "cuptiEnableDomain", &api.enable_domain, &missing);
    resolve(lib, "cuptiActivityRegisterCallbacks", &api.register_callbacks, &missing);
    resolve(lib, "cuptiActivityEnable", &api.activity_enable, &missing);
    resolve(lib, "cuptiActivityGetNextRecord", &api.next_record, &missing);
    resolve(lib, "cuptiActivityGetNumDroppedRecords", &api.dropped_records, &missing);
    resolve(lib, "cuptiActivityFlushAll", &api.flush_all, &missing);
    resolve(lib, "cuptiGetTimestamp", &api.get_timestamp, &missing);
    resolve(lib, "cuptiGetResultString", &api.result_string, &missing);
    resolve(lib, "cuptiGetCallbackName", &api.callback_name, &missing);
    resolve(lib, "cuptiSetThreadIdType", &api.set_thread_id_type, &missing);
    if (!missing.empty()) {
      error = "libcupti lacks " + missing;
      return;
    }
    ok = true;
  });
  if (!ok && why) *why = error;
  return ok ? &api : nullptr;
}

}  // namespace dftrace::gpu
