// event_path.cpp: the per-thread event path: the thread's state and activation stack, ids in
// blocks, per-use arguments, and binary records written into the thread's chunk.
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/format.hpp"
#include "base/hash.hpp"
#include "base/log.hpp"
#include "base/thread_role.hpp"
#include "dftrace/dftrace.h"
#include "runtime/nvtx_forward.hpp"
#include "runtime/runtime.hpp"
#include "topology/topology.hpp"

namespace dftrace::detail {

namespace {

thread_local thread_state *t_state __attribute__((tls_model("initial-exec"))) = nullptr;
pthread_key_t g_thread_key;

constexpr uint64_t k_id_block = 1024;

pid_t current_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

void thread_exit(void *p) {
  auto *ts = static_cast<thread_state *>(p);
  if (ts && ts->w) ts->w->unregister_buffer(&ts->buf);
  if (t_state == ts) t_state = nullptr;
  delete ts;
}

}  // namespace

void runtime::create_thread_key() { pthread_key_create(&g_thread_key, thread_exit); }

// ---------------------------------------------------------------- threads

void runtime::refresh_thread_ids(thread_state &ts) { ts.tid = cfg_.tids ? current_tid() : pid_; }

thread_state *runtime::bind_thread() {
  if (!initialized_.load(std::memory_order_acquire)) init(nullptr);
  thread_state *ts = t_state;
  if (!ts) {
    auto fresh = std::make_unique<thread_state>();
    fresh->stack.reserve(64);
    fresh->scratch.reserve(1024);
    ts = fresh.release();
    t_state = ts;
    pthread_setspecific(g_thread_key, ts);
  }
  std::lock_guard<std::mutex> lock(init_mutex_);
  writer *w = writer_.get();
  // The thread's first chunk before anything changes: without memory for it, the thread stays
  // unbound and its next event tries again (a thread bound to a writer always has a chunk).
  chunk *first = w ? w->new_chunk(0) : nullptr;
  if (ts->w && ts->w != w) ts->w->unregister_buffer(&ts->buf);
  ts->w = w;
  ts->generation = generation_.load(std::memory_order_acquire);
  ts->stack.clear();
  ts->scratch.clear();
  ts->next_id = ts->id_end = 0;
  refresh_thread_ids(*ts);
  if (w) {
    ts->cur = first;
    ts->buf.pos = 0;
    ts->buf.current.store(ts->cur, std::memory_order_release);
    w->register_buffer(&ts->buf);
    char name[64] = {};
    if (ts->tid == pid_ || pthread_getname_np(pthread_self(), name, sizeof name) != 0 || !name[0])
      std::snprintf(name, sizeof name, "%s",
                    ts->tid == pid_ ? exec_.c_str() : std::to_string(ts->tid).c_str());
    emit_thread_name(*ts, name);
  }
  return ts;
}

inline thread_state &runtime::thread() {
  thread_state *ts = t_state;
  if (__builtin_expect(
          ts != nullptr && ts->generation == generation_.load(std::memory_order_relaxed), 1))
    return *ts;
  return *bind_thread();
}

thread_state &runtime::calling_thread() { return thread(); }

thread_state *runtime::calling_thread_state() { return t_state; }

void runtime::emit_thread_name(thread_state &ts, std::string_view name) {
  if (!ts.w) return;
  // A thread bound to some CPUs says which (only the thread itself can ask cheaply).
  const std::string cpus = cfg_.core_affinity ? thread_affinity_json() : std::string();
  ts.w->push_meta(name_line(line_fmt(), alloc_global_id(), "thread_name", ts.tid, name, cpus));
}

void runtime::thread_name(std::string_view name) {
  if (!recording()) return;
  thread_state &ts = thread();
  emit_thread_name(ts, name);
}

inline uint64_t runtime::next_id(thread_state &ts) {
  if (__builtin_expect(ts.next_id == ts.id_end, 0)) {
    ts.next_id = id_counter_.fetch_add(k_id_block, std::memory_order_relaxed);
    ts.id_end = ts.next_id + k_id_block;
  }
  return ts.next_id++;
}

inline char *runtime::reserve(thread_state &ts, size_t n) {
  chunk *c = ts.cur;
  if (__builtin_expect(c->cap - ts.buf.pos >= n, 1)) return c->data + ts.buf.pos;
  chunk *fresh = ts.w->new_chunk(n);
  // Publish the new chunk before handing the old one over: the writer must never see a
  // recycled chunk as a thread's current one.
  ts.buf.current.store(fresh, std::memory_order_release);
  ts.cur = fresh;
  ts.buf.pos = 0;
  ts.w->submit(c);
  return fresh->data;
}

inline void runtime::commit(thread_state &ts, char *end) {
  chunk *c = ts.cur;
  const auto pos = static_cast<uint32_t>(end - c->data);
  ts.buf.pos = pos;
  c->committed.store(pos, std::memory_order_release);
}

// ---------------------------------------------------------------- arguments

namespace {

inline char *extend(std::string &out, size_t k) {
  const size_t at = out.size();
  out.resize(at + k);
  return out.data() + at;
}
inline char *extend(char_buffer &out, size_t k) { return out.extend(k); }

// A number (the usual per-use argument: a count, a hash): fixed-size copies for the header and
// the value. False (nothing written) for anything else.
inline bool append_number(char_buffer &out, const dftrace_arg &a) {
  if (a.type != DFTRACE_ARG_INT && a.type != DFTRACE_ARG_UINT && a.type != DFTRACE_ARG_DOUBLE)
    return false;
  const size_t n = std::min(std::strlen(a.key), k_max_arg_key);
  raw_arg h{};
  h.type = static_cast<uint8_t>(a.type);
  h.key_len = static_cast<uint16_t>(n);
  h.value_len = 8;
  char *p = out.extend(sizeof h + n + 8);
  std::memcpy(p, &h, sizeof h);
  copy_small(p + sizeof h, a.key, n);
  std::memcpy(p + sizeof h + n, &a.value, 8);  // the union's first 8 bytes
  return true;
}
inline bool append_number(std::string &, const dftrace_arg &) { return false; }

// Stored raw (key bytes, value bytes): the writer thread escapes and formats them, and
// resolves a key given twice (the later value wins).
template <typename Buf>
inline void append_raw_args(Buf &out, const dftrace_arg *args, size_t nargs) {
  for (size_t i = 0; i < nargs; ++i) {
    const dftrace_arg &a = args[i];
    if (!a.key || !*a.key) continue;
    if (append_number(out, a)) continue;
    raw_arg h{};
    const size_t klen = std::min(std::strlen(a.key), k_max_arg_key);
    h.key_len = static_cast<uint16_t>(klen);
    switch (a.type) {
      case DFTRACE_ARG_INT:
      case DFTRACE_ARG_DOUBLE:
      case DFTRACE_ARG_UINT: {
        h.type = static_cast<uint8_t>(a.type);
        h.value_len = 8;
        char *p = extend(out, sizeof h + klen + 8);
        std::memcpy(p, &h, sizeof h);
        std::memcpy(p + sizeof h, a.key, klen);
        std::memcpy(p + sizeof h + klen, &a.value, 8);  // the union's first 8 bytes
        continue;
      }
      case DFTRACE_ARG_BOOL: {
        h.type = DFTRACE_ARG_BOOL;
        h.value_len = 1;
        char *p = extend(out, sizeof h + klen + 1);
        std::memcpy(p, &h, sizeof h);
        std::memcpy(p + sizeof h, a.key, klen);
        p[sizeof h + klen] = a.value.b ? 1 : 0;
        continue;
      }
      case DFTRACE_ARG_STRING:
        h.type = a.value.s ? DFTRACE_ARG_STRING : 0;
        h.value_len = a.value.s ? static_cast<uint32_t>(std::strlen(a.value.s)) : 0;
        break;
      default:
        h.type = 0;  // a type from a newer header: written as null
        h.value_len = 0;
        break;
    }
    char *p = extend(out, sizeof h + klen + h.value_len);
    std::memcpy(p, &h, sizeof h);
    std::memcpy(p + sizeof h, a.key, klen);
    if (h.value_len) std::memcpy(p + sizeof h + klen, a.value.s, h.value_len);
  }
}

}  // namespace

void runtime::append_args(std::string &out, const dftrace_arg *args, size_t nargs) {
  append_raw_args(out, args, nargs);
}

void runtime::append_args(char_buffer &out, const dftrace_arg *args, size_t nargs) {
  append_raw_args(out, args, nargs);
}

// ---------------------------------------------------------------- events

uint64_t runtime::begin(node *n, int enable, const dftrace_arg *args, size_t nargs) {
  return begin_at(n, enable, args, nargs, 0, 0);
}

uint64_t runtime::iter_step(uint64_t previous, node *n, int enable, uint32_t count) {
  // A loop's first step may be the process's first call: bind the thread (which initialises
  // the runtime and chooses the tick source) before the tick is read, or a CLOCK_MONOTONIC
  // reading would be converted as a TSC tick.
  if (!previous && n) {
    const bool on = enable < 0 ? n->active.load(std::memory_order_relaxed)
                               : (enable > 0 && recording_.load(std::memory_order_relaxed));
    if (!on) return 0;
    thread();
  }
  const uint64_t now = tick_now();
  if (previous) end_at(previous, nullptr, 0, now);
  return n ? begin_at(n, enable, nullptr, 0, count, now) : 0;
}

uint64_t runtime::begin_at(node *n, int enable, const dftrace_arg *args, size_t nargs,
                           uint32_t count, uint64_t now) {
  if (!n || !enable) return 0;
  const std::atomic<bool> &on = enable < 0 ? n->active : recording_;  // (read twice, below)
  if (!on.load(std::memory_order_relaxed)) return 0;
  thread_state &ts = thread();
  if (!ts.w) return 0;
  // The first use may have initialised the runtime just now (enabled by the environment),
  // which applies the configuration's category switches: look again.
  if (enable < 0 && !n->active.load(std::memory_order_relaxed)) return 0;
  activation a;
  a.id = next_id(ts);
  a.n = n;
  a.ended = false;
  if (ts.stack.empty()) {
    a.parent_id = -1;
    a.level = 1;
  } else {
    a.parent_id = static_cast<int64_t>(ts.stack.back().id);
    a.level = static_cast<uint32_t>(ts.stack.size() + 1);
  }
  a.args_off = static_cast<uint32_t>(ts.scratch.size());
  a.args_len = 0;
  a.count = count;
  if (nargs && args) {
    append_args(ts.scratch, args, nargs);
    a.args_len = static_cast<uint32_t>(ts.scratch.size() - a.args_off);
  }
  // The NVTX range opens before the region's clock read, and closes after its end's.
  a.forwarded = forward_;
  if (__builtin_expect(forward_, 0)) nvtx_forward::push(n);
  a.start_tick = now ? now : tick_now();
  // Switched off on another thread since the check above (a window's close while this thread
  // was preempted): the event would begin after the window's `to`; it is not recorded.
  std::atomic_signal_fence(std::memory_order_seq_cst);  // (the load stays after the clock read)
  if (__builtin_expect(!on.load(std::memory_order_relaxed), 0)) {
    if (a.forwarded) nvtx_forward::pop();
    ts.scratch.resize(a.args_off);
    return 0;
  }
  ts.stack.push_back(a);
  return a.id;
}

// write_record's last three arguments, by name.
constexpr uint32_t k_no_count = 0;                  // no "count" (only iter items have one)
constexpr args_kind k_raw_args = args_kind::raw;    // per-use arguments stored raw (key, value)
constexpr args_kind k_json_args = args_kind::json;  // already JSON text (counters, marks)
constexpr bool k_monotonic_ns = false;              // start and end are monotonic ns, not ticks

__attribute__((always_inline)) inline void runtime::write_complete(thread_state &ts,
                                                                   const activation &a,
                                                                   uint64_t end_tick) {
  write_record(ts, rec_type::complete, a.n, a.id, a.start_tick, end_tick, ts.tid, a.level,
               a.parent_id, std::string_view(ts.scratch.data() + a.args_off, a.args_len), a.count);
}

__attribute__((always_inline)) inline void runtime::write_record(
    thread_state &ts, rec_type type, node *n, uint64_t id, uint64_t start, uint64_t end,
    int64_t tid, uint32_t level, int64_t parent_id, std::string_view use_args, uint32_t count,
    args_kind kind, bool ticked) {
  write_record_with(
      ts, type, n, id, start, end, tid, level, parent_id, use_args.size(),
      [&](char *p) { std::memcpy(p, use_args.data(), use_args.size()); }, count, kind, ticked);
}

template <typename PutUse>
__attribute__((always_inline)) inline void runtime::write_record_with(
    thread_state &ts, rec_type type, node *n, uint64_t id, uint64_t start, uint64_t end,
    int64_t tid, uint32_t level, int64_t parent_id, size_t use_len, PutUse put_use, uint32_t count,
    args_kind kind, bool ticked) {
  // A binary record; the writer thread formats the line. The node's arguments are copied as
  // they are now (the event's end), lock-free.
  const arg_store &args = *n->args_src.load(std::memory_order_acquire);
  size_t room = args.size_hint() + 16;
  for (;;) {
    char *const p0 = reserve(ts, rec_size(room + use_len));
    rec &r = *reinterpret_cast<rec *>(p0);
    char *const payload = p0 + sizeof(rec);
    const long got =
        type == rec_type::counter || type == rec_type::mark ? 0 : args.copy_to(payload, room);
    if (got < 0) {
      room = static_cast<size_t>(-got);
      continue;
    }
    if (use_len) put_use(payload + got);
    r.type = type;
    r.aggregate = type == rec_type::complete && n->aggregate.load(std::memory_order_relaxed);
    r.use_args_kind = kind;
    r.ticked = ticked ? 1 : 0;
    r.name_cat = &n->name_cat;
    r.id = id;
    r.start = start;
    r.end = end;
    r.parent_id = parent_id;
    r.tid = tid;
    r.level = level;
    r.node_args_len = static_cast<uint32_t>(got);
    r.use_args_len = static_cast<uint32_t>(use_len);
    r.count = count;
    r.size = static_cast<uint32_t>(rec_size(static_cast<size_t>(got) + use_len));
    commit(ts, p0 + r.size);
    return;
  }
}

void runtime::end(uint64_t region, const dftrace_arg *args, size_t nargs) {
  if (region) end_at(region, args, nargs, tick_now());
}

void runtime::end_at(uint64_t region, const dftrace_arg *args, size_t nargs, uint64_t now) {
  end_with(
      region, nargs && args, [&](char_buffer &out) { append_args(out, args, nargs); }, now);
}

const prepared_args *runtime::make_layout(const dftrace_arg *args, size_t nargs) {
  if (!args || nargs == 0 || nargs > 64) return nullptr;
  for (size_t i = 0; i < nargs; ++i) {
    const dftrace_arg &a = args[i];
    if (!a.key || !*a.key ||
        (a.type != DFTRACE_ARG_INT && a.type != DFTRACE_ARG_UINT && a.type != DFTRACE_ARG_DOUBLE))
      return nullptr;
  }
  // The arguments' raw form, as an event stores them; each value's 8 bytes are its slot.
  std::string raw;
  append_raw_args(raw, args, nargs);
  std::unique_ptr<prepared_args> l = prepare_args(std::move(raw));
  // Never freed (documented: one per call site), but kept reachable: a layout may be used by
  // any thread until the process ends.
  static std::mutex m;
  static auto *all = new std::vector<std::unique_ptr<prepared_args>>();
  std::lock_guard<std::mutex> lock(m);
  all->push_back(std::move(l));
  return all->back().get();
}

void runtime::end_layout(uint64_t region, const prepared_args &layout, const uint64_t *values) {
  end_with(
      region, true,
      [&](char_buffer &out) {
        char *p = out.extend(layout.raw.size());
        std::memcpy(p, layout.raw.data(), layout.raw.size());
        for (size_t i = 0; i < layout.slots.size(); ++i)
          std::memcpy(p + layout.slots[i], &values[i], 8);
      },
      tick_now());
}

uint64_t runtime::leaf_begin(node *n) {
  if (!n->active.load(std::memory_order_relaxed)) return 0;
  thread_state &ts = thread();
  // The first use may have initialised the runtime, and switched this node off.
  if (!ts.w || !n->active.load(std::memory_order_relaxed)) return 0;
  if (__builtin_expect(forward_, 0)) nvtx_forward::push(n);
  const uint64_t t = tick_now();
  std::atomic_signal_fence(std::memory_order_seq_cst);  // switched off since: as in begin_at
  if (__builtin_expect(!n->active.load(std::memory_order_relaxed), 0)) {
    if (forward_) nvtx_forward::pop();
    return 0;
  }
  return t ? t : 1;  // 0 says "not recording"
}

template <typename PutUse>
inline void runtime::write_leaf(thread_state &ts, node *n, uint64_t start, size_t use_len,
                                PutUse put_use, args_kind kind) {
  const uint64_t now = tick_now();
  if (__builtin_expect(forward_, 0)) nvtx_forward::pop();
  write_record_with(ts, rec_type::complete, n, next_id(ts), start, now, ts.tid,
                    static_cast<uint32_t>(ts.stack.size() + 1),
                    ts.stack.empty() ? -1 : static_cast<int64_t>(ts.stack.back().id), use_len,
                    put_use, k_no_count, kind, true);
}

void runtime::leaf_end(node *n, uint64_t start, const prepared_args *layout,
                       const uint64_t *values) {
  thread_state *ts = t_state;
  // Begun under another writer (finalised or forked since): nothing to end.
  if (!ts || ts->generation != generation_.load(std::memory_order_relaxed) || !ts->w) return;
  const size_t k = layout ? layout->slots.size() : 0;
  // The layout's address, then its values (writer/record.hpp: prepared_args).
  write_leaf(
      *ts, n, start, k ? sizeof layout + 8 * k : 0,
      [&](char *p) {
        std::memcpy(p, &layout, sizeof layout);
        std::memcpy(p + sizeof layout, values, 8 * k);
      },
      k ? args_kind::prepared : k_raw_args);
}

void runtime::leaf_end(node *n, uint64_t start, const dftrace_arg *args, size_t nargs) {
  thread_state *ts = t_state;
  if (!ts || ts->generation != generation_.load(std::memory_order_relaxed) || !ts->w) return;
  ts->use_args.clear();  // reused: no allocation once warm
  if (nargs && args) append_args(ts->use_args, args, nargs);
  const std::string &u = ts->use_args;
  write_leaf(
      *ts, n, start, u.size(), [&](char *p) { std::memcpy(p, u.data(), u.size()); }, k_raw_args);
}

template <typename Append>
void runtime::end_with(uint64_t region, bool has_args, Append append, uint64_t now) {
  if (!region) return;
  thread_state *tsp = t_state;
  if (!tsp || tsp->stack.empty()) return;
  thread_state &ts = *tsp;
  size_t i = ts.stack.size();
  while (i > 0 && (ts.stack[i - 1].id != region || ts.stack[i - 1].ended)) --i;
  if (i == 0) return;  // begun on another thread, or already ended
  end_activation(ts, i - 1, has_args, append, now);
}

template <typename Append>
__attribute__((always_inline)) inline void runtime::end_activation(thread_state &ts, size_t at,
                                                                   bool has_args, Append append,
                                                                   uint64_t now) {
  activation &a = ts.stack[at];
  const bool top = at + 1 == ts.stack.size();
  if (has_args && top) {
    append(ts.scratch);
    a.args_len = static_cast<uint32_t>(ts.scratch.size() - a.args_off);
  }
  if (ts.generation == generation_.load(std::memory_order_relaxed) && ts.w)
    write_complete(ts, a, now);
  if (!top) {
    a.ended = true;  // leaves the stack (and closes its NVTX range) with the regions inside it
    return;
  }
  pop_activation(ts);
  while (!ts.stack.empty() && ts.stack.back().ended) pop_activation(ts);
  const size_t keep = ts.stack.empty() ? 0 : ts.stack.back().args_off + ts.stack.back().args_len;
  if (ts.scratch.size() != keep) ts.scratch.resize(keep);
}

int runtime::node_start(node *n) {
  return begin(n, DFTRACE_USE_NODE_STATE, nullptr, 0) ? DFTRACE_OK : DFTRACE_ERR_DISABLED;
}

int runtime::node_stop(node *n) {
  thread_state *ts = t_state;
  if (!ts) return DFTRACE_ERR_STATE;
  // Only pointers are compared: a node that is not one is simply not found.
  for (size_t i = ts->stack.size(); i > 0; --i) {
    const activation &a = ts->stack[i - 1];
    if (a.n == n && !a.ended) {
      end_activation(
          *ts, i - 1, false, [](char_buffer &) {}, tick_now());
      return DFTRACE_OK;
    }
  }
  return DFTRACE_ERR_STATE;  // none open on this thread (ended, begun elsewhere, or before fork)
}

inline void runtime::pop_activation(thread_state &ts) {
  if (__builtin_expect(ts.stack.back().forwarded, 0)) nvtx_forward::pop();
  ts.stack.pop_back();
}

void runtime::cancel(uint64_t region) {
  if (!region) return;
  thread_state *tsp = t_state;
  if (!tsp) return;
  thread_state &ts = *tsp;
  for (size_t i = ts.stack.size(); i > 0; --i) {
    if (ts.stack[i - 1].id == region && !ts.stack[i - 1].ended) {
      if (i == ts.stack.size()) {
        pop_activation(ts);
        while (!ts.stack.empty() && ts.stack.back().ended) pop_activation(ts);
        ts.scratch.resize(ts.stack.empty() ? 0
                                           : ts.stack.back().args_off + ts.stack.back().args_len);
      } else {
        ts.stack[i - 1].ended = true;
      }
      return;
    }
  }
}

void runtime::region_arg(uint64_t region, const dftrace_arg &arg) {
  if (!region) return;
  thread_state *tsp = t_state;
  if (!tsp || tsp->stack.empty()) return;
  activation &a = tsp->stack.back();
  if (a.id != region) return;  // only the innermost open region can grow its arguments
  append_args(tsp->scratch, &arg, 1);
  a.args_len = static_cast<uint32_t>(tsp->scratch.size() - a.args_off);
}

void runtime::instant(node *n, const dftrace_arg *args, size_t nargs) {
  if (!n || !n->active.load(std::memory_order_relaxed)) return;
  thread_state &ts = thread();
  if (!ts.w) return;
  ts.use_args.clear();
  if (nargs && args) append_args(ts.use_args, args, nargs);
  if (__builtin_expect(forward_, 0)) nvtx_forward::mark(n);
  const uint64_t now = tick_now();
  std::atomic_signal_fence(std::memory_order_seq_cst);  // switched off since: as in begin_at
  if (__builtin_expect(!n->active.load(std::memory_order_relaxed), 0)) return;
  write_record(ts, rec_type::instant, n, next_id(ts), now, now, ts.tid,
               static_cast<uint32_t>(ts.stack.size() + 1),
               ts.stack.empty() ? -1 : static_cast<int64_t>(ts.stack.back().id), ts.use_args);
}

uint64_t runtime::current_region() {
  thread_state *ts = t_state;
  if (!ts) return 0;
  for (size_t i = ts->stack.size(); i > 0; --i)
    if (!ts->stack[i - 1].ended) return ts->stack[i - 1].id;
  return 0;
}

void runtime::complete_on_track(node *n, uint64_t start_ns, uint64_t end_ns, int64_t track,
                                const dftrace_arg *args, size_t nargs) {
  if (!n || !n->active.load(std::memory_order_relaxed)) return;
  thread_state &ts = thread();
  if (!ts.w) return;
  if (end_ns < start_ns) end_ns = start_ns;
  ts.use_args.clear();  // reused: no allocation once warm
  if (nargs && args) append_args(ts.use_args, args, nargs);
  write_record(ts, rec_type::complete, n, next_id(ts), start_ns, end_ns, track, 1, -1, ts.use_args,
               k_no_count, k_raw_args, k_monotonic_ns);
}

void runtime::track_name(int64_t track, std::string_view name) {
  if (!recording()) return;
  thread_state &ts = thread();
  if (!ts.w) return;
  ts.w->push_meta(name_line(line_fmt(), alloc_global_id(), "thread_name", track, name));
}

void runtime::counter(node *n, std::string_view series, std::string_view json_value) {
  if (!n || !n->active.load(std::memory_order_relaxed) || series.empty()) return;
  thread_state &ts = thread();
  if (!ts.w) return;
  const uint64_t now = tick_now();
  ts.use_args.clear();
  ts.use_args += json_quote(series);
  ts.use_args += ':';
  ts.use_args.append(json_value.data(), json_value.size());
  write_record(ts, rec_type::counter, n, 0, now, now, ts.tid, 0, -1, ts.use_args, k_no_count,
               k_json_args);
}

void runtime::counter_members(node *n, std::string_view members) {
  if (!n || !n->active.load(std::memory_order_relaxed) || members.empty()) return;
  thread_state &ts = thread();
  if (!ts.w) return;
  const uint64_t now = tick_now();
  ts.use_args.assign(members.data(), members.size());
  write_record(ts, rec_type::counter, n, 0, now, now, ts.tid, 0, -1, ts.use_args, k_no_count,
               k_json_args);
}

void runtime::metadata_line(std::string_view type, std::string_view name,
                            std::string_view json_value, bool with_hhash) {
  // Not recording: nothing, unless the environment enabled tracing and this is the first use.
  if (!recording() && !tree_.root()->active.load(std::memory_order_relaxed)) return;
  thread_state &ts = thread();
  if (!ts.w || !recording()) return;
  const uint64_t id = alloc_global_id();
  // Written where it is (a file's FH line, at its first open: no allocation), or, when the
  // name is long, into a string made for it.
  char buf[2048];
  if (const size_t n = meta_line_into(buf, sizeof buf, pid_, hhash_field_, id, type, ts.tid,
                                      with_hhash, name, json_value))
    ts.w->push_meta(std::string_view(buf, n));
  else
    ts.w->push_meta(meta_line(pid_, hhash_field_, id, type, ts.tid, with_hhash, name, json_value));
}

void runtime::mark(node *n, bool start) {
  if (!n || !n->active.load(std::memory_order_relaxed)) return;
  thread_state &ts = thread();  // the first use may initialise (and switch this node off)
  if (!ts.w || !n->active.load(std::memory_order_relaxed)) return;
  // A record stamped with a tick, as events are: the writer converts both with one map, so a
  // mark brackets the events it closes (base/README.md, "Clock").
  ts.use_args.clear();
  ts.use_args += json_quote(n->name + (start ? ".start" : ".end"));
  const uint64_t now = tick_now();
  write_record(ts, rec_type::mark, n, next_id(ts), now, now, ts.tid, 0, -1, ts.use_args, k_no_count,
               k_json_args);
}

uint64_t runtime::define_hash(int kind, std::string_view value) {
  if (kind < DFTRACE_HASH_HOST || kind > DFTRACE_HASH_FILE) return 0;
  const std::string_view v = value;
  {
    std::lock_guard<std::mutex> lock(hash_mutex_);
    if (const uint64_t *known = defined_[kind].find(v)) return *known;  // no copy, no allocation
  }
  const uint64_t h = dftracer_hash(v);
  static const char *const types[] = {"", "HH", "SH", "FH"};
  // Writes the definition, starting the trace when this is the first use of a process the
  // environment enabled (an interposer's first call defines its file before any event).
  char digits[24];
  metadata_line(types[kind], v,
                std::string_view(digits, static_cast<size_t>(write_u64(digits, h) - digits)), true);
  // Remembered only once written: a hash defined while not recording is defined again later.
  if (recording()) {
    std::lock_guard<std::mutex> lock(hash_mutex_);
    defined_[kind].add(v, h);
  }
  return h;
}

bool runtime::redefine_hash(int kind, uint64_t hash) {
  if (kind < DFTRACE_HASH_HOST || kind > DFTRACE_HASH_FILE) return false;
  std::string text;
  {
    std::lock_guard<std::mutex> lock(hash_mutex_);
    std::string_view v;
    bool defined = false;
    if (!defined_[kind].text_of(hash, &v, &defined)) return false;
    if (defined) return true;
    text.assign(v);  // (the table may grow while the line is written)
  }
  return define_hash(kind, text) == hash;
}

}  // namespace dftrace::detail
