// dftrace_c.cpp: the exported C ABI (include/dftrace/dftrace.h) over the runtime in src/.
// Every entry point catches everything: no C++ exception ever reaches the caller.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "base/format.hpp"
#include "base/held_fds.hpp"
#include "base/log.hpp"
#include "base/thread_role.hpp"
#include "config/config.hpp"
#include "dftrace/dftrace.h"
#include "dftrace/plugin.h"
#include "output/output_file.hpp"
#include "runtime/runtime.hpp"
#include "runtime/signals.hpp"

using dftrace::detail::json_quote;
using dftrace::detail::node;
using dftrace::detail::runtime;

// The opaque C handle is the address of the core's node; its first byte is the node's
// `active` flag, which dftrace_node_active_fast() in the header reads (an ABI promise).
static_assert(std::is_standard_layout_v<std::atomic<bool>> && sizeof(std::atomic<bool>) == 1,
              "the active flag is one byte");

namespace {

inline node *to_node(dftrace_node_t *n) { return reinterpret_cast<node *>(n); }
inline const node *to_node(const dftrace_node_t *n) { return reinterpret_cast<const node *>(n); }
inline dftrace_node_t *to_handle(node *n) { return reinterpret_cast<dftrace_node_t *>(n); }
inline runtime &the_runtime() { return runtime::get(); }

const char *thread_copy(const std::string &s) {
  static thread_local std::string buf;
  buf = s;
  return buf.c_str();
}

// Reports an exception caught at the ABI boundary, once per message (called inside a catch).
// Out of memory is said once, without allocating (log_once keeps the messages it said: it
// could not); the events it costs are counted as dropped where they were held. Other exceptions
// are said once each.
void report_internal_error() noexcept {
  static std::atomic<bool> memory_said{false};
  try {
    throw;
  } catch (const std::bad_alloc &) {
    if (!memory_said.exchange(true))
      dftrace::detail::log(dftrace::detail::log_level::error,
                           "out of memory: events are dropped, the program goes on");
  } catch (const std::exception &e) {
    try {
      dftrace::detail::log_once(dftrace::detail::log_level::error, e.what(), "internal error: %s",
                                e.what());
    } catch (...) {
      dftrace::detail::log(dftrace::detail::log_level::error, "internal error: %s", e.what());
    }
  } catch (...) {
    try {
      dftrace::detail::log_once(dftrace::detail::log_level::error, "unknown", "internal error");
    } catch (...) {
      dftrace::detail::log(dftrace::detail::log_level::error, "internal error");
    }
  }
}

// Runs fn; an exception becomes one message and `fallback`: nothing crosses into user code.
// While it runs, the thread counts as dftrace's own (dftrace_thread_is_internal): a signal
// handler that interrupts it and does traced I/O passes through untraced. The runtime is not
// reentrant on a thread (its event ids, its record buffer, whose commit could publish the
// interrupted record half written; its locks and allocations, which the handler's event would
// wait on; its id block, which would hand out an id twice).
template <typename Fn>
auto guarded(Fn fn, decltype(fn()) fallback) noexcept -> decltype(fn()) {
  const dftrace::detail::internal_scope own;
  try {
    return fn();
  } catch (...) {
    report_internal_error();
  }
  return fallback;
}

// The same for calls that return nothing.
template <typename Fn>
void guarded_do(Fn fn) noexcept {
  const dftrace::detail::internal_scope own;
  try {
    fn();
  } catch (...) {
    report_internal_error();
  }
}

std::string number(int64_t v) {
  char buf[32];
  return std::string(buf, dftrace::detail::write_i64(buf, v));
}
std::string number(double v) {
  char buf[40];
  return std::string(buf, dftrace::detail::write_double(buf, v));
}

// Load time: when the environment enables tracing, the first use of a node initialises it.
// The exit handler that marks the start of exit is registered here, after this library's static
// data (the configuration's tables: config_table.cpp) and that of the libraries it uses were made,
// so it runs before any of them is destroyed: a first call made by a later finaliser (libstdc++'s
// stream flush at the end of a program that never called an interposed function before) does
// not initialise dftrace from destroyed data (runtime::exit_begun).
void mark_exit_begun() { runtime::mark_exit_begun(); }
__attribute__((constructor)) void dftrace_on_load() {
  std::atexit(mark_exit_begun);  // (fails only without memory for the handler's entry)
  guarded_do([] {
    const char *v = std::getenv("DFTRACE_ENABLE");
    if (!v || !*v) v = std::getenv("DFTRACER_ENABLE");
    bool on = false;
    if (v && dftrace::detail::parse_bool(v, &on) && on) the_runtime().preload_enable();
    // attach.enable: the first use initialises too, to wait for dftrace attach (then off).
    const char *a = std::getenv("DFTRACE_ATTACH");
    if (!on && a && dftrace::detail::parse_bool(a, &on) && on) the_runtime().preload_enable();
  });
}

// One step of an iterator: the fetch phase (its `.iter` region, a new item) or the body phase
// (its `.block` region). Ends the other phase's open region and begins this phase's (unless the
// phase is not traced or its node is off); a fetch first cancels a fetch left open.
void iter_switch(dftrace_iter_t *it, bool body) {
  auto &mine = body ? it->open_block : it->open_iter;
  auto &other = body ? it->open_iter : it->open_block;
  if (!body) {
    if (mine) dftrace_region_cancel(mine);
    mine = 0;
    ++it->count;
  }
  const uint32_t untraced = body ? DFTRACE_ITER_NO_BLOCK : DFTRACE_ITER_NO_ITER;
  node *n = (it->flags & untraced) ? nullptr : to_node(body ? it->block_node : it->iter_node);
  const uint64_t previous = other;
  other = 0;
  if (!previous && (!n || (it->enable < 0 && !n->active.load(std::memory_order_relaxed)))) return;
  mine = guarded(
      [&] {
        return the_runtime().iter_step(previous, n, it->enable, static_cast<uint32_t>(it->count));
      },
      dftrace_region_t{0});
}

}  // namespace

extern "C" {

const char *dftrace_status_string(int status) {
  switch (status) {
    case DFTRACE_OK: return "ok";
    case DFTRACE_ERR_INVALID_ARGUMENT: return "invalid argument";
    case DFTRACE_ERR_CONFIG: return "configuration error";
    case DFTRACE_ERR_IO: return "I/O error";
    case DFTRACE_ERR_STATE: return "wrong state for this call";
    case DFTRACE_ERR_NOT_FOUND: return "not found";
    case DFTRACE_ERR_DISABLED: return "tracing is disabled";
    default: return "unknown status";
  }
}

const char *dftrace_version(void) { return DFTRACE_VERSION_STRING; }

void dftrace_options_init_sized(dftrace_options_t *o, size_t size) {
  // The fields of the caller's struct only: one built before the struct grew is shorter.
  constexpr size_t first = offsetof(dftrace_options_t, bind_atexit) + sizeof(int);
  if (!o || size < first) return;
  size = std::min(size, sizeof *o);
  std::memset(o, 0, size);
  o->struct_size = size;
  o->enable = -1;
  o->compression = -1;
  o->level = -1;
  o->metadata = -1;
  o->install_signal_handlers = -1;
  o->bind_atexit = -1;
  if (size >= offsetof(dftrace_options_t, io_init) + sizeof(int)) o->io_init = -1;
  // parent_pid: 0 (the memset), the OS's parent
}

#undef dftrace_options_init
void dftrace_options_init(dftrace_options_t *o) {
  dftrace_options_init_sized(o, offsetof(dftrace_options_t, bind_atexit) + sizeof(int));
}

int dftrace_init(const dftrace_options_t *options) {
  if (options && options->struct_size < sizeof(size_t)) return DFTRACE_ERR_INVALID_ARGUMENT;
  return guarded([&] { return the_runtime().init(options); }, DFTRACE_ERR_CONFIG);
}

int dftrace_finalize(void) {
  return guarded([] { return the_runtime().finalize(); }, DFTRACE_ERR_STATE);
}

int dftrace_flush(void) {
  return guarded([] { return the_runtime().flush(); }, DFTRACE_ERR_IO);
}

void dftrace_resume_after_exec(void) {
  guarded_do([] { the_runtime().preload_enable(); });
}

void dftrace_flush_from_signal(bool ending) {
  try {
    the_runtime().on_signal_flush(ending);
  } catch (...) {  // (allocates nothing; a first use that makes the runtime may fail)
  }
}

bool dftrace_is_enabled(void) {
  try {
    return the_runtime().recording();
  } catch (...) {  // the first use makes the runtime, which may find no memory
    report_internal_error();
    return false;
  }
}

void dftrace_set_enabled(bool enabled) {
  guarded_do([&] { the_runtime().set_recording(enabled); });
}

int dftrace_step(void) {
  return guarded([] { return the_runtime().step(); }, DFTRACE_ERR_STATE);
}

int dftrace_schedule_set(const dftrace_schedule_t *s) {
  if (!s || s->struct_size != sizeof(dftrace_schedule_t)) return DFTRACE_ERR_INVALID_ARGUMENT;
  return guarded(
      [s] {
        return the_runtime().set_schedule(
            {s->skip_first, s->wait, s->warmup, s->active, s->repeat});
      },
      DFTRACE_ERR_STATE);
}

int dftrace_trigger(const char *reason) {
  return guarded([reason] { return the_runtime().trigger("api", reason ? reason : ""); }, 0);
}

int dftrace_attach_wants(const char *category) {
  return guarded([category] { return the_runtime().attach_wants(category ? category : ""); }, 1);
}

int dftrace_on_window(void (*fn)(void *user), void *user) {
  return guarded([fn, user] { return the_runtime().on_window(fn, user); }, DFTRACE_ERR_STATE);
}

int dftrace_step_phase(void) {
  return guarded([] { return the_runtime().step_phase(); }, DFTRACE_ERR_STATE);
}

uint64_t dftrace_step_count(void) {
  return guarded([] { return the_runtime().steps(); }, uint64_t{0});
}

const char *dftrace_status(void) {
  return guarded([] { return thread_copy(the_runtime().status()); }, "internal error");
}

const char *dftrace_output_path(void) {
  return guarded(
      [] {
        std::string p = the_runtime().output_path();
        return p.empty() ? static_cast<const char *>(nullptr) : thread_copy(p);
      },
      static_cast<const char *>(nullptr));
}

const char *dftrace_config_describe(void) {
  return guarded([] { return thread_copy(the_runtime().config_text()); }, "");
}

int dftrace_config_get(const char *key, char *buf, size_t size) {
  if (!key || (!buf && size > 0)) return DFTRACE_ERR_INVALID_ARGUMENT;
  return guarded(
      [&] {
        std::string value;
        if (!the_runtime().config_value(key, &value))
          return static_cast<int>(DFTRACE_ERR_NOT_FOUND);
        if (size > 0) {
          const size_t n = std::min(value.size(), size - 1);
          std::memcpy(buf, value.data(), n);
          buf[n] = '\0';
        }
        return static_cast<int>(std::min<size_t>(value.size(), INT32_MAX));
      },
      static_cast<int>(DFTRACE_ERR_STATE));
}

dftrace_node_t *dftrace_node_root(void) {
  return guarded([] { return to_handle(the_runtime().nodes().root()); },
                 static_cast<dftrace_node_t *>(nullptr));
}

dftrace_node_t *dftrace_node_find(const char *path) {
  if (!path) return nullptr;
  return guarded([&] { return to_handle(the_runtime().nodes().find(path)); },
                 static_cast<dftrace_node_t *>(nullptr));
}

dftrace_node_t *dftrace_category(const char *name) {
  if (!name) return nullptr;
  return guarded([&] { return to_handle(the_runtime().nodes().category(name)); },
                 static_cast<dftrace_node_t *>(nullptr));
}

dftrace_node_t *dftrace_node_child(dftrace_node_t *parent, const char *name) {
  if (!parent || !name) return nullptr;
  return guarded([&] { return to_handle(the_runtime().nodes().child(to_node(parent), name)); },
                 static_cast<dftrace_node_t *>(nullptr));
}

dftrace_node_t *dftrace_node_derive(dftrace_node_t *parent, const char *name) {
  if (!parent || !name) return nullptr;
  return guarded([&] { return to_handle(the_runtime().nodes().derive(to_node(parent), name)); },
                 static_cast<dftrace_node_t *>(nullptr));
}

const char *dftrace_node_name(const dftrace_node_t *n) { return n ? to_node(n)->name.c_str() : ""; }
const char *dftrace_node_category(const dftrace_node_t *n) {
  return n ? to_node(n)->cat.c_str() : "";
}
const char *dftrace_node_path(const dftrace_node_t *n) { return n ? to_node(n)->path.c_str() : ""; }

void dftrace_node_enable(dftrace_node_t *n) {
  guarded(
      [&] {
        the_runtime().nodes().set_enabled(to_node(n), true);
        return 0;
      },
      0);
}
void dftrace_node_disable(dftrace_node_t *n) {
  guarded_do([&] { the_runtime().nodes().set_enabled(to_node(n), false); });
}
bool dftrace_node_is_enabled(const dftrace_node_t *n) {
  return n && to_node(n)->active.load(std::memory_order_relaxed);
}

void dftrace_node_update_int(dftrace_node_t *n, const char *key, int64_t value) {
  if (!n || !key) return;
  guarded_do([&] { the_runtime().nodes().update(to_node(n), key, number(value)); });
}
void dftrace_node_update_double(dftrace_node_t *n, const char *key, double value) {
  if (!n || !key) return;
  guarded_do([&] { the_runtime().nodes().update(to_node(n), key, number(value)); });
}
void dftrace_node_update_string(dftrace_node_t *n, const char *key, const char *value) {
  if (!n || !key) return;
  guarded_do([&] {
    if (value)
      the_runtime().nodes().update(to_node(n), key, json_quote(value));
    else
      the_runtime().nodes().update(to_node(n), key, std::nullopt);
  });
}
void dftrace_node_update_bool(dftrace_node_t *n, const char *key, bool value) {
  if (!n || !key) return;
  guarded_do([&] { the_runtime().nodes().update(to_node(n), key, value ? "true" : "false"); });
}
void dftrace_node_update_args(dftrace_node_t *n, const dftrace_arg_t *args, size_t nargs) {
  if (!n || !args || !nargs) return;
  guarded_do([&] {
    std::vector<dftrace::detail::tree::change> changes;
    changes.reserve(nargs);
    for (size_t i = 0; i < nargs; ++i) {
      const dftrace_arg_t &a = args[i];
      if (!a.key) continue;
      std::optional<std::string> v;
      switch (a.type) {
        case DFTRACE_ARG_INT: v = number(a.value.i); break;
        case DFTRACE_ARG_DOUBLE: v = number(a.value.d); break;
        case DFTRACE_ARG_BOOL: v = a.value.b ? "true" : "false"; break;
        case DFTRACE_ARG_UINT: {
          char buf[24];
          v = std::string(buf, dftrace::detail::write_u64(buf, a.value.u));
          break;
        }
        case DFTRACE_ARG_STRING:
          if (a.value.s) v = json_quote(a.value.s);
          break;
        default: continue;
      }
      changes.emplace_back(a.key, std::move(v));
    }
    the_runtime().nodes().update_many(to_node(n), changes);
  });
}

void dftrace_node_update_remove(dftrace_node_t *n, const char *key) {
  if (!n || !key) return;
  guarded_do([&] { the_runtime().nodes().update(to_node(n), key, std::nullopt); });
}

dftrace_region_t dftrace_region_begin(dftrace_node_t *n) {
  if (!n || !to_node(n)->active.load(std::memory_order_relaxed)) return 0;
  return guarded(
      [&] { return the_runtime().begin(to_node(n), DFTRACE_USE_NODE_STATE, nullptr, 0); },
      dftrace_region_t{0});
}

dftrace_region_t dftrace_region_begin_ex(dftrace_node_t *n, int enable, const dftrace_arg_t *args,
                                         size_t nargs) {
  if (!n) return 0;
  return guarded([&] { return the_runtime().begin(to_node(n), enable, args, nargs); },
                 dftrace_region_t{0});
}

// One per-use argument of an open region, of each type (the argument helpers of dftrace.h).
#define DFTRACE_REGION_ARG_FN(suffix, type, make)                                     \
  void dftrace_region_arg_##suffix(dftrace_region_t r, const char *key, type value) { \
    if (!r || !key) return;                                                           \
    const dftrace_arg_t a = make(key, value);                                         \
    guarded_do([&] { the_runtime().region_arg(r, a); });                              \
  }
DFTRACE_REGION_ARG_FN(int, int64_t, DFTRACE_ARG_I)
DFTRACE_REGION_ARG_FN(double, double, DFTRACE_ARG_D)
DFTRACE_REGION_ARG_FN(string, const char *, DFTRACE_ARG_S)
DFTRACE_REGION_ARG_FN(bool, bool, DFTRACE_ARG_B)
DFTRACE_REGION_ARG_FN(uint, uint64_t, DFTRACE_ARG_U)
#undef DFTRACE_REGION_ARG_FN

void dftrace_region_end(dftrace_region_t r) {
  if (!r) return;
  guarded_do([&] { the_runtime().end(r, nullptr, 0); });
}

void dftrace_region_end_ex(dftrace_region_t r, const dftrace_arg_t *args, size_t nargs) {
  if (!r) return;
  guarded_do([&] { the_runtime().end(r, args, nargs); });
}

struct dftrace_arg_layout {};  // the C name of dftrace::detail::prepared_args (never dereferenced)

namespace {
const dftrace::detail::prepared_args *to_layout(const dftrace_arg_layout_t *l) {
  return reinterpret_cast<const dftrace::detail::prepared_args *>(l);
}
}  // namespace

const dftrace_arg_layout_t *dftrace_arg_layout(const dftrace_arg_t *args, size_t nargs) {
  return reinterpret_cast<const dftrace_arg_layout_t *>(
      guarded([&] { return dftrace::detail::runtime::make_layout(args, nargs); },
              static_cast<const dftrace::detail::prepared_args *>(nullptr)));
}

void dftrace_region_end_values(dftrace_region_t r, const dftrace_arg_layout_t *layout,
                               const dftrace_value_t *values) {
  if (!r) return;
  if (!layout || !values) return dftrace_region_end(r);
  static_assert(sizeof(dftrace_value_t) == sizeof(uint64_t), "a value is 8 bytes");
  guarded_do([&] {
    the_runtime().end_layout(r, *to_layout(layout), reinterpret_cast<const uint64_t *>(values));
  });
}

uint64_t dftrace_leaf_begin(dftrace_node_t *n) {
  if (!n || !to_node(n)->active.load(std::memory_order_relaxed)) return 0;
  return guarded([&] { return the_runtime().leaf_begin(to_node(n)); }, uint64_t{0});
}

void dftrace_leaf_end_values(dftrace_node_t *n, uint64_t start, const dftrace_arg_layout_t *layout,
                             const dftrace_value_t *values) {
  if (!start || !n) return;
  guarded_do([&] {
    the_runtime().leaf_end(to_node(n), start, values ? to_layout(layout) : nullptr,
                           reinterpret_cast<const uint64_t *>(values));
  });
}

void dftrace_leaf_end_ex(dftrace_node_t *n, uint64_t start, const dftrace_arg_t *args,
                         size_t nargs) {
  if (!start || !n) return;
  guarded_do([&] { the_runtime().leaf_end(to_node(n), start, args, nargs); });
}

void dftrace_region_cancel(dftrace_region_t r) {
  if (!r) return;
  guarded_do([&] { the_runtime().cancel(r); });
}

int dftrace_node_start(dftrace_node_t *n) {
  if (!n) return DFTRACE_ERR_INVALID_ARGUMENT;
  if (!to_node(n)->active.load(std::memory_order_relaxed)) return DFTRACE_ERR_DISABLED;
  return guarded([&] { return the_runtime().node_start(to_node(n)); }, int{DFTRACE_ERR_DISABLED});
}

int dftrace_node_stop(dftrace_node_t *n) {
  if (!n) return DFTRACE_ERR_INVALID_ARGUMENT;
  return guarded([&] { return the_runtime().node_stop(to_node(n)); }, int{DFTRACE_ERR_STATE});
}

void dftrace_iter_begin(dftrace_iter_t *it, dftrace_node_t *n, uint32_t flags,
                        const char *iter_name, const char *block_name, int enable) {
  if (!it) return;
  std::memset(it, 0, sizeof *it);
  it->struct_size = sizeof *it;
  it->flags = flags;
  it->enable = enable;
  if (!n) {
    it->flags |= DFTRACE_ITER_NO_ITER | DFTRACE_ITER_NO_BLOCK;
    return;
  }
  guarded_do([&] {
    auto &t = the_runtime().nodes();
    it->iter_node =
        to_handle(iter_name ? t.verbatim(to_node(n), iter_name) : t.iter_of(to_node(n)));
    it->block_node =
        to_handle(block_name ? t.verbatim(to_node(n), block_name) : t.block_of(to_node(n)));
  });
}

void dftrace_iter_fetch(dftrace_iter_t *it) {
  if (it) iter_switch(it, false);
}

void dftrace_iter_body(dftrace_iter_t *it) {
  if (it) iter_switch(it, true);
}

void dftrace_iter_end(dftrace_iter_t *it) {
  if (!it) return;
  if (it->open_block) dftrace_region_end(it->open_block);
  if (it->open_iter) dftrace_region_cancel(it->open_iter);
  it->open_block = it->open_iter = 0;
}

dftrace_region_t dftrace_region_current(void) {
  return guarded([] { return the_runtime().current_region(); }, dftrace_region_t{0});
}

// The event path's clock (a tick through the map); the first call initialises the runtime when
// the environment enabled tracing (init catches what it throws).
uint64_t dftrace_now_ns(void) {
  try {
    return the_runtime().now_ns();
  } catch (...) {
    report_internal_error();
    return 0;
  }
}

bool dftrace_thread_is_internal(void) { return dftrace::detail::t_internal_thread; }

// std::atomic<int> is an int in memory (lock-free, no padding); the interposer reads it with
// one relaxed load.
static_assert(sizeof(std::atomic<int>) == sizeof(int) && std::atomic<int>::is_always_lock_free);
const int *dftrace_trace_fd_address(void) {
  dftrace::detail::trace_fd_guarded(true);  // (the interposer asks once, at its start)
  return reinterpret_cast<const int *>(&dftrace::detail::g_trace_fd);
}

bool dftrace_trace_fd_release(int fd) {
  const dftrace::detail::internal_scope own_work;
  return dftrace::detail::release_trace_fd(fd);  // (negative: waits for a write under way)
}

const int *dftrace_held_fds_address(void) {
  return reinterpret_cast<const int *>(&dftrace::detail::g_held_fds);
}

void dftrace_held_fds_release(void) {
  const dftrace::detail::internal_scope own_work;
  dftrace::detail::give_up_held_fds();
}

void dftrace_note_ending_signal(int sig) {
  try {
    the_runtime().note_ending_signal(sig);
  } catch (...) {  // (allocates nothing; a first use that makes the runtime may fail)
  }
}

bool dftrace_default_action_behind(int sig) { return dftrace::detail::default_action_behind(sig); }

void dftrace_default_action_restored(int sig) {
  try {
    the_runtime().on_default_action_restored(sig);
  } catch (...) {  // (allocates nothing; a first use that makes the runtime may fail)
  }
}

bool dftrace_hash_redefine(int kind, uint64_t hash) {
  return guarded([&] { return the_runtime().redefine_hash(kind, hash); }, false);
}

uint64_t dftrace_trace_time_ns(void) {
  return guarded([] { return the_runtime().now_ns() + the_runtime().epoch_offset_ns(); },
                 uint64_t{0});
}

void dftrace_event_complete(dftrace_node_t *n, uint64_t start_ns, uint64_t end_ns, int64_t track,
                            const dftrace_arg_t *args, size_t nargs) {
  if (!n || !to_node(n)->active.load(std::memory_order_relaxed)) return;
  guarded(
      [&] {
        the_runtime().complete_on_track(to_node(n), start_ns, end_ns, track, args, nargs);
        return 0;
      },
      0);
}

void dftrace_track_name(int64_t track, const char *name) {
  if (!name) return;
  guarded_do([&] { the_runtime().track_name(track, name); });
}

void dftrace_instant(dftrace_node_t *n, const dftrace_arg_t *args, size_t nargs) {
  if (!n || !to_node(n)->active.load(std::memory_order_relaxed)) return;
  guarded_do([&] { the_runtime().instant(to_node(n), args, nargs); });
}

void dftrace_counter_int(dftrace_node_t *n, const char *series, int64_t value) {
  if (!n || !series || !to_node(n)->active.load(std::memory_order_relaxed)) return;
  guarded_do([&] { the_runtime().counter(to_node(n), series, number(value)); });
}

void dftrace_counter_double(dftrace_node_t *n, const char *series, double value) {
  if (!n || !series || !to_node(n)->active.load(std::memory_order_relaxed)) return;
  guarded_do([&] { the_runtime().counter(to_node(n), series, number(value)); });
}

void dftrace_node_mark_start(dftrace_node_t *n) {
  guarded_do([&] { the_runtime().mark(to_node(n), true); });
}
void dftrace_node_mark_end(dftrace_node_t *n) {
  guarded_do([&] { the_runtime().mark(to_node(n), false); });
}

void dftrace_metadata(const char *key, const char *value) {
  if (!key) return;
  guarded_do([&] { the_runtime().metadata_line("CM", key, json_quote(value ? value : ""), true); });
}

void dftrace_process_property_string(const char *key, const char *value) {
  if (!key) return;
  guarded_do([&] { the_runtime().metadata_line("PR", key, json_quote(value ? value : ""), true); });
}

void dftrace_process_property_int(const char *key, int64_t value) {
  if (!key) return;
  guarded_do([&] { the_runtime().metadata_line("PR", key, number(value), true); });
}

void dftrace_process_property_json(const char *key, const char *json) {
  if (!key) return;
  guarded_do([&] {
    const std::string v = json ? json : "null";
    the_runtime().metadata_line("PR", key,
                                dftrace::detail::is_valid_json_value(v)
                                    ? dftrace::detail::json_value_on_one_line(v)
                                    : json_quote(v),
                                true);
  });
}

uint64_t dftrace_hash_define(int kind, const char *value) {
  if (!value) return 0;
  return guarded([&] { return the_runtime().define_hash(kind, value); }, uint64_t{0});
}

int dftrace_set_rank(int rank, int size) {
  return guarded([&] { return the_runtime().set_rank(rank, size); }, DFTRACE_ERR_STATE);
}

int dftrace_set_process_identity(const char *exec_name, long parent_pid) {
  return guarded([&] { return the_runtime().set_process_identity(exec_name, parent_pid); },
                 DFTRACE_ERR_STATE);
}

void dftrace_thread_name(const char *name) {
  if (!name) return;
  guarded_do([&] { the_runtime().thread_name(name); });
}

uint64_t dftrace_events_written(void) {
  return guarded([] { return the_runtime().events_written(); }, uint64_t{0});
}
uint64_t dftrace_events_dropped(void) {
  return guarded([] { return the_runtime().events_dropped(); }, uint64_t{0});
}

}  // extern "C"
