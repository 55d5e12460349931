// cupti_api.hpp: the CUPTI functions this library uses, resolved with dlopen at run time so
// that libdftrace_cupti.so loads (and explains itself) on machines without CUDA.
#pragma once

#include <cupti.h>

#include <string>

namespace dftrace::gpu {

struct cupti_api {
  decltype(&::cuptiSubscribe) subscribe = nullptr;
  decltype(&::cuptiEnableDomain) enable_domain = nullptr;
  decltype(&::cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&::cuptiActivityEnable) activity_enable = nullptr;
  decltype(&::cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&::cuptiActivityGetNumDroppedRecords) dropped_records = nullptr;
  decltype(&::cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&::cuptiGetTimestamp) get_timestamp = nullptr;
  decltype(&::cuptiGetResultString) result_string = nullptr;
  decltype(&::cuptiGetCallbackName) callback_name = nullptr;
  decltype(&::cuptiSetThreadIdType) set_thread_id_type = nullptr;

  // Names a CUPTI result ("CUPTI_ERROR_UNKNOWN"); never null.
  const char *describe(CUptiResult r) const;
};

// Loads libcupti (the soname this library was built against, then the build tree's file,
// then plain libcupti.so) once. Returns null and sets *why when it can not.
const cupti_api *load_cupti(std::string *why);

}  // namespace dftrace::gpu
