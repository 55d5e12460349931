/* dftracer/dftracer.h: DFTracer 1.0.8's C and C++ annotation API, implemented on dftrace.
 *
 * A code annotated for DFTracer builds unchanged against dftrace: keep `#include
 * <dftracer/dftracer.h>`, link -ldftrace instead of -ldftracer. Events keep DFTracer's
 * categories (C_APP / CPP_APP) and names (the function name, or the region's name), and are
 * written in dftrace's trace format. As with DFTracer, nothing is recorded unless
 * DFTRACER_ENABLE=1 (or DFTRACE_ENABLE=1) is set.
 *
 * Everything here is inline over the dftrace C ABI: the library exports no DFTracer symbol.
 * The region handle (struct DFTracerData *) carries the dftrace region id, not a pointer to
 * memory: never dereference it (DFTracer's users never do).
 * Differences from DFTracer, on purpose: per-thread nesting; update() values are written as
 * event arguments in the order they were set; the log_file argument of initialize_main is the
 * trace-file prefix (so that each process still writes its own file). */
#ifndef DFTRACER_DFTRACER_H
#define DFTRACER_DFTRACER_H

#include <dftrace/dftrace.h>
#include <stdint.h>

#define DF_DATA_EVENT 0
#define DF_METADATA_EVENT 1

typedef const char *ConstEventNameType;
typedef uint64_t TimeResolution;

#ifdef __cplusplus
extern "C" {
#endif

struct DFTracerData {
  void *profiler;
};

__attribute__((unused)) static ConstEventNameType C_LOG_CATEGORY = "C_APP";

static inline void dftracer_compat_init(const char *log_file, const char *data_dirs,
                                        int *process_id, int bind) {
  (void)process_id;
  dftrace_options_t o;
  dftrace_options_init(&o);
  o.output_prefix = log_file;
  o.bind_atexit = 1;
  o.install_signal_handlers = bind ? -1 : 0;
  /* DFTracer binds I/O tracing in FUNCTION mode unless _NO_BIND: the data directories given
   * join DFTRACER_DATA_DIR's. */
  o.io_data_dir = data_dirs;
  if (!bind) o.io_init = 0;
  dftrace_init(&o);
}

static inline void initialize_main(const char *log_file, const char *data_dirs, int *process_id) {
  dftracer_compat_init(log_file, data_dirs, process_id, 1);
}

static inline void initialize_no_bind(const char *log_file, const char *data_dirs,
                                      int *process_id) {
  dftracer_compat_init(log_file, data_dirs, process_id, 0);
}

static inline void finalize(void) { dftrace_finalize(); }

/* The region id travels in the handle's value. */
static inline struct DFTracerData *dftracer_compat_handle(dftrace_region_t r) {
  return (struct DFTracerData *)(uintptr_t)r;
}
static inline dftrace_region_t dftracer_compat_region(struct DFTracerData *d) {
  return (dftrace_region_t)(uintptr_t)d;
}

static inline struct DFTracerData *dftracer_compat_begin(dftrace_node_t *node) {
  return dftrace_node_active_fast(node) ? dftracer_compat_handle(dftrace_region_begin(node)) : NULL;
}

static inline struct DFTracerData *initialize_region(ConstEventNameType name,
                                                     ConstEventNameType cat, int event_type) {
  if (event_type == DF_METADATA_EVENT) { /* name is the key, cat the value */
    dftrace_metadata(name, cat);
    return NULL;
  }
  return dftracer_compat_begin(dftrace_node_child(dftrace_category(cat), name));
}

static inline void finalize_region(struct DFTracerData *data) {
  dftrace_region_end(dftracer_compat_region(data));
}

static inline void update_metadata_int(struct DFTracerData *data, const char *key, int value) {
  dftrace_region_arg_int(dftracer_compat_region(data), key, value);
}

static inline void update_metadata_string(struct DFTracerData *data, const char *key,
                                          const char *value) {
  dftrace_region_arg_string(dftracer_compat_region(data), key, value);
}

/* The call site's node, looked up once (the macros below expand to one per site). */
#define DFTRACER_COMPAT_SITE_NODE(var, cat, name) \
  static dftrace_node_t *var = NULL;              \
  if (var == NULL) var = dftrace_node_child(dftrace_category(cat), name)

#define DFTRACER_C_INIT(log_file, data_dirs, process_id) \
  initialize_main(log_file, data_dirs, process_id);
#define DFTRACER_C_INIT_NO_BIND(log_file, data_dirs, process_id) \
  initialize_no_bind(log_file, data_dirs, process_id);
#define DFTRACER_C_FINI() finalize()

#define DFTRACER_C_FUNCTION_START()                                       \
  DFTRACER_COMPAT_SITE_NODE(dftracer_fn_node_, C_LOG_CATEGORY, __func__); \
  struct DFTracerData *data_fn = dftracer_compat_begin(dftracer_fn_node_);
#define DFTRACER_C_FUNCTION_END() finalize_region(data_fn);

#define DFTRACER_C_REGION_START(name)                                     \
  DFTRACER_COMPAT_SITE_NODE(dftracer_node_##name, C_LOG_CATEGORY, #name); \
  struct DFTracerData *data_##name = dftracer_compat_begin(dftracer_node_##name);
#define DFTRACER_C_REGION_END(name) finalize_region(data_##name);

#define DFTRACER_C_METADATA(name, key, val) \
  { dftrace_metadata(key, val); }

#define DFTRACER_C_FUNCTION_UPDATE_INT(key, val) update_metadata_int(data_fn, key, val);
#define DFTRACER_C_FUNCTION_UPDATE_STR(key, val) update_metadata_string(data_fn, key, val);
#define DFTRACER_C_REGION_UPDATE_INT(name, key, val) update_metadata_int(data_##name, key, val);
#define DFTRACER_C_REGION_UPDATE_STR(name, key, val) update_metadata_string(data_##name, key, val);

#ifdef __cplusplus
} /* extern "C" */

/* ---------------------------------------------------------------- C++ */

__attribute__((unused)) static ConstEventNameType CPP_LOG_CATEGORY = "CPP_APP";

/* One region (or, with DF_METADATA_EVENT, one metadata line) for as long as the object lives. */
class DFTracer {
 public:
  DFTracer(ConstEventNameType name, ConstEventNameType cat, int event_type = DF_DATA_EVENT)
      : region_(0) {
    if (event_type == DF_METADATA_EVENT) {
      dftrace_metadata(name, cat);
      return;
    }
    dftrace_node_t *n = dftrace_node_child(dftrace_category(cat), name);
    if (dftrace_node_active_fast(n)) region_ = dftrace_region_begin(n);
  }
  /* Used by the macros: the node was looked up once for the call site. */
  explicit DFTracer(dftrace_node_t *site)
      : region_(dftrace_node_active_fast(site) ? dftrace_region_begin(site) : 0) {}
  DFTracer(const DFTracer &) = delete;
  DFTracer &operator=(const DFTracer &) = delete;
  DFTracer(DFTracer &&o) noexcept : region_(o.region_) { o.region_ = 0; }

  void update(const char *key, int value) { dftrace_region_arg_int(region_, key, value); }
  void update(const char *key, const char *value) {
    dftrace_region_arg_string(region_, key, value);
  }
  void finalize() {
    dftrace_region_end(region_);
    region_ = 0;
  }
  ~DFTracer() { finalize(); }

 private:
  dftrace_region_t region_;
};

#define DFTRACER_COMPAT_CPP_SITE(cat, name)                                           \
  ([]() {                                                                             \
    static dftrace_node_t *const n = dftrace_node_child(dftrace_category(cat), name); \
    return n;                                                                         \
  }())

/* The C++ set starts and ends the trace as the C set does. */
#define DFTRACER_CPP_INIT(log_file, data_dirs, process_id) \
  DFTRACER_C_INIT(log_file, data_dirs, process_id)
#define DFTRACER_CPP_INIT_NO_BIND(log_file, data_dirs, process_id) \
  DFTRACER_C_INIT_NO_BIND(log_file, data_dirs, process_id)
#define DFTRACER_CPP_FINI() DFTRACER_C_FINI()
#define DFTRACER_CPP_FUNCTION()                                             \
  static dftrace_node_t *const dftracer_cpp_fn_node_ =                      \
      dftrace_node_child(dftrace_category(CPP_LOG_CATEGORY), __FUNCTION__); \
  DFTracer profiler_dft_fn(dftracer_cpp_fn_node_);
#define DFTRACER_CPP_METADATA(name, key, value) \
  { DFTracer profiler_##name(key, value, DF_METADATA_EVENT); }
#define DFTRACER_CPP_REGION(name) \
  DFTracer profiler_##name(DFTRACER_COMPAT_CPP_SITE(CPP_LOG_CATEGORY, #name));
#define DFTRACER_CPP_REGION_START(name) \
  DFTracer *profiler_##name = new DFTracer(DFTRACER_COMPAT_CPP_SITE(CPP_LOG_CATEGORY, #name));
#define DFTRACER_CPP_REGION_END(name) delete profiler_##name
#define DFTRACER_CPP_FUNCTION_UPDATE(key, val) profiler_dft_fn.update(key, val);
#define DFTRACER_CPP_REGION_UPDATE(name, key, val) profiler_##name.update(key, val);
#define DFTRACER_CPP_REGION_DYN_UPDATE(name, key, val) profiler_##name->update(key, val);

#endif /* __cplusplus */

#endif /* DFTRACER_DFTRACER_H */
