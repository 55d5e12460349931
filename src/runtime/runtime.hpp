// runtime.hpp: the process's tracing state and the per-thread event path. Everything the C
// ABI does goes through here; nothing here knows about the C ABI's types beyond args. Defined
// by job: process.cpp (identity, header), lifecycle.cpp (init, writer, finalize, fork),
// signals.cpp (fatal signals), event_path.cpp (the calling thread's events).
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dftrace/dftrace.h"

#include "base/char_buffer.hpp"
#include "base/clock.hpp"
#include "config/config.hpp"
#include "runtime/schedule.hpp"
#include "runtime/schedule_share.hpp"
#include "runtime/triggers.hpp"
#include "tree/tree.hpp"
#include "writer/writer.hpp"

namespace dftrace::detail {

// One open region on a thread.
struct activation {
  uint64_t id;
  node *n;
  uint64_t start_tick;  // clock.hpp: tick_now()
  int64_t parent_id;
  uint32_t level;
  uint32_t args_off;  // per-use arguments: scratch[args_off, args_off + args_len)
  uint32_t args_len;
  uint32_t count;  // iter item number (1, 2, ...), 0 when none
  bool ended;
  bool
      forwarded;  // an NVTX range was pushed for it (nvtx.forward), popped when it leaves the stack
};

struct thread_state {
  thread_buffer buf;
  chunk *cur = nullptr;
  writer *w = nullptr;      // the writer this state is registered with
  std::string use_args;     // per-use arguments of explicit-time events
  uint64_t generation = 0;  // the runtime generation this state is registered with
  pid_t tid = 0;
  uint64_t next_id = 0, id_end = 0;
  std::vector<activation> stack;
  char_buffer scratch;
  bool named = false;
};

// The hashes whose definition (HH, SH, FH line) this trace holds, of one kind, looked up by
// the text without copying it: every open of a traced file asks. An open-addressing table of
// (a quick hash of the text, the text, its hash); the texts are copied into blocks that never
// move, so neither a look-up nor an insertion calls the allocator but when a block or the
// table fills. A forked child's file starts a new epoch: the parent's entries stay known (a
// descriptor the child inherited has its hash, whose text is found again by its value) but are
// not defined in the child's file until written there. Not thread-safe (the runtime's hash
// mutex).
class defined_hashes {
 public:
  // The hash of `text` when its definition is in this file.
  const uint64_t *find(std::string_view text) const {
    const entry *e = find(text, key_of(text));
    return e && e->epoch == epoch_ ? &e->value : nullptr;
  }
  // Defined in this file from now on.
  void add(std::string_view text, uint64_t h) {
    const uint64_t k = key_of(text);
    if (entry *e = const_cast<entry *>(find(text, k))) {
      e->epoch = epoch_;
      return;
    }
    if ((used_ + 1) * 2 > slots_.size()) grow();
    place({k, store(text), text.size(), h, epoch_});
    ++used_;
  }
  // The text of a hash known from this file or an earlier one (a parent's), whether it is
  // defined in this file; false when unknown. A scan: once per inherited descriptor.
  bool text_of(uint64_t h, std::string_view *text, bool *defined) const {
    for (const entry &e : slots_)
      if (e.text && e.value == h) {
        *text = std::string_view(e.text, e.len);
        *defined = e.epoch == epoch_;
        return true;
      }
    return false;
  }
  void new_file() { ++epoch_; }  // a forked child's file: nothing is defined in it yet
  void clear() {
    slots_.clear();
    blocks_.clear();
    used_ = 0;
    left_ = 0;
  }

 private:
  struct entry {
    uint64_t key;
    const char *text;  // null: an empty slot
    size_t len;
    uint64_t value;
    uint32_t epoch;  // the file whose definition it has
  };
  // A quick hash of the text, 8 bytes at a time (a path: a few multiplications).
  static uint64_t key_of(std::string_view s) {
    const char *p = s.data();
    size_t n = s.size();
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    auto mix = [&h](uint64_t w) {
      h = (h ^ w) * 0xFF51AFD7ED558CCDull;
      h ^= h >> 32;
    };
    if (n >= 8) {
      for (; n > 8; p += 8, n -= 8) {
        uint64_t w;
        std::memcpy(&w, p, 8);
        mix(w);
      }
      uint64_t w;  // the last 8 bytes (overlapping the previous word)
      std::memcpy(&w, s.data() + s.size() - 8, 8);
      mix(w);
    } else {
      uint64_t w = 0;
      for (size_t i = 0; i < n; ++i) w |= uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
      mix(w);
    }
    h ^= h >> 33;  // every bit reaches the low ones, which pick the slot
    h *= 0xC4CEB9FE1A85EC53ull;
    return h ^ (h >> 33);
  }
  const entry *find(std::string_view text, uint64_t k) const {
    if (slots_.empty()) return nullptr;
    const size_t mask = slots_.size() - 1;
    for (size_t i = k & mask;; i = (i + 1) & mask) {
      const entry &e = slots_[i];
      if (!e.text) return nullptr;
      if (e.key == k && e.len == text.size() && std::memcmp(e.text, text.data(), e.len) == 0)
        return &e;
    }
  }
  void place(const entry &e) {
    const size_t mask = slots_.size() - 1;
    size_t i = e.key & mask;
    while (slots_[i].text) i = (i + 1) & mask;
    slots_[i] = e;
  }
  void grow() {
    std::vector<entry> old(slots_.empty() ? 64 : 2 * slots_.size(), entry{0, nullptr, 0, 0, 0});
    old.swap(slots_);
    for (const entry &e : old)
      if (e.text) place(e);
  }
  const char *store(std::string_view text) {
    if (text.empty()) return "";  // never null: null marks an empty slot
    if (text.size() > left_) {
      const size_t size = std::max<size_t>(k_block, text.size() + 1);
      blocks_.emplace_back(new char[size]);
      next_ = blocks_.back().get();
      left_ = size;
    }
    char *at = next_;
    std::memcpy(at, text.data(), text.size());
    next_ += text.size();
    left_ -= text.size();
    return at;
  }
  static constexpr size_t k_block = 64 * 1024;
  std::vector<entry> slots_;  // a power of two, at most half full
  size_t used_ = 0;
  std::vector<std::unique_ptr<char[]>> blocks_;
  char *next_ = nullptr;
  size_t left_ = 0;
  uint32_t epoch_ = 0;
};

struct attach_request;  // base/attach_channel.hpp

class runtime {
 public:
  static runtime &get() {
    runtime *r = s_instance.load(std::memory_order_acquire);
    return __builtin_expect(r != nullptr, 1) ? *r : create();
  }

  // Exit has begun (exit() or a return from main is running the exit handlers, or the runtime
  // was finalized by its own handler): from then on init never initialises (the static data of
  // this library and of those it uses may already be destroyed), and every call that would
  // initialise passes through untraced. Set by mark_exit_begun, an exit handler registered when
  // libdftrace loads (after its own static data, so it runs before that is destroyed).
  static bool exit_begun() { return s_exit_begun.load(std::memory_order_acquire); }
  static void mark_exit_begun() { s_exit_begun.store(true, std::memory_order_release); }

  // ---- set-up
  int init(const dftrace_options *options);
  int finalize();
  int flush();
  // The end of a training step (dftrace_step): advances the schedule, switches recording for
  // the next step, and flushes when an active window closed (returns 1 then, else 0).
  int step();
  // Replaces the schedule and restarts counting at step 0.
  int set_schedule(const schedule &s);
  int step_phase();
  // A forked child that follows its parent's schedule (schedule_share.hpp): takes the state
  // the parent published. False when this process follows no more (its thread then ends).
  bool schedule_follow();
  // A flight recorder's trigger (output.mode: ring; docs/flight-recorder.md): 1 when taken, 0
  // when not (not in ring mode, not recording, within trigger.min_gap of the last one).
  int trigger(std::string_view source, std::string_view reason);
  // dftrace attach (attach.cpp, docs/attach.md): the attach thread's work, a request waiting
  // in the channel `dir` and the end of a timed window; the ns until that end (0: none).
  uint64_t attach_poll(const std::string &dir);
  // Whether events of `category` may be written now (dftrace_attach_wants), and the callback
  // told when that may have changed (dftrace_on_window; called under init_mutex_).
  int attach_wants(std::string_view category);
  int on_window(void (*fn)(void *), void *user);
  uint64_t steps() const { return step_.load(std::memory_order_relaxed); }
  bool initialized() const { return initialized_.load(std::memory_order_acquire); }
  bool recording() const { return recording_.load(std::memory_order_relaxed); }
  void set_recording(bool on);
  void preload_enable();
  std::string status() const;
  std::string output_path() const;
  std::string config_text() const;
  // One key's effective value (config_value); false for an unknown key.
  bool config_value(std::string_view key, std::string *value) const;
  uint64_t events_written() const;
  uint64_t events_dropped() const;
  tree &nodes() { return tree_; }
  const config &cfg() const { return cfg_; }

  // ---- the event path (calling thread)
  uint64_t begin(node *n, int enable, const dftrace_arg *args, size_t nargs);
  void end(uint64_t region, const dftrace_arg *args, size_t nargs);
  // A layout of numeric argument keys (dftrace_arg_layout: writer/record.hpp prepared_args),
  // or null; never freed.
  static const prepared_args *make_layout(const dftrace_arg *args, size_t nargs);
  // Ends a region with a prepared layout's arguments (values[i]: the bits of the i-th value).
  void end_layout(uint64_t region, const prepared_args &layout, const uint64_t *values);
  // Leaf events (dftrace_leaf_begin/_end): no activation on the stack, one record at the end,
  // nested in the innermost open region. leaf_begin: the start tick, 0 when not recording.
  uint64_t leaf_begin(node *n);
  // layout may be null (no per-use arguments); else values[i] is its i-th value.
  void leaf_end(node *n, uint64_t start, const prepared_args *layout, const uint64_t *values);
  void leaf_end(node *n, uint64_t start, const dftrace_arg *args, size_t nargs);
  // Iter loops: ends `previous` (if any) and begins the next event on `n` with its item
  // `count`, at one clock read (the two events are back to back).
  uint64_t iter_step(uint64_t previous, node *n, int enable, uint32_t count);
  void cancel(uint64_t region);
  // Start and stop by node on the calling thread (dftrace_node_start/_stop). node_start begins
  // a region as begin(n, node state) does: DFTRACE_OK, or DFTRACE_ERR_DISABLED when nothing was
  // begun. node_stop ends the innermost open region of `n` on this thread, however it was
  // begun: DFTRACE_OK, or DFTRACE_ERR_STATE when none is open here (never begun, ended,
  // begun on another thread or before fork). A region of a finished trace is closed unwritten.
  int node_start(node *n);
  int node_stop(node *n);
  void region_arg(uint64_t region, const dftrace_arg &arg);
  void instant(node *n, const dftrace_arg *args, size_t nargs);
  uint64_t current_region();
  void complete_on_track(node *n, uint64_t start_ns, uint64_t end_ns, int64_t track,
                         const dftrace_arg *args, size_t nargs);
  void track_name(int64_t track, std::string_view name);
  void counter(node *n, std::string_view series, std::string_view json_value);
  // One counter line of several series: `members` is JSON object members ("a":1,"b":2.5).
  void counter_members(node *n, std::string_view members);
  void mark(node *n, bool start);
  void metadata_line(std::string_view type, std::string_view name, std::string_view json_value,
                     bool with_hhash);
  uint64_t define_hash(int kind, std::string_view value);
  // A hash this process or the one it was forked from defined, defined in this process's file
  // when it is not yet (a forked child's event on an inherited descriptor). False if unknown.
  bool redefine_hash(int kind, uint64_t hash);
  int set_rank(int rank, int size);
  // The program name and parent a launcher gave a process that was initialised before it
  // could say so (dftrace_set_process_identity).
  int set_process_identity(const char *exec_name, long parent_pid);
  void thread_name(std::string_view name);
  // CLOCK_MONOTONIC ns through the event path's clock (a tick and the map), as events are
  // stamped: what dftrace_now_ns() returns, so explicit-time events and marks agree with them.
  // Tracing enabled by the environment: the first call initialises (then chooses the tick source).
  uint64_t now_ns() {
    if (__builtin_expect(!initialized(), 0)) {
      if (!tree_.root()->active.load(std::memory_order_relaxed)) return mono_ns();
      init(nullptr);
      if (!initialized()) return mono_ns();
    }
    return ticks().to_ns(tick_now());
  }
  // Realtime minus monotonic (plus the test skew): trace time = mono_ns() + this. Fixed at
  // the first call or at init, whichever comes first.
  uint64_t epoch_offset_ns();
  static int64_t test_clock_skew_ns();

  // ---- process events
  void on_fork_prepare();
  void on_fork_parent();
  void on_fork_child();
  // `dies`: the default action follows (no handler of the application's to run).
  void on_fatal_signal(int sig, bool dies);
  // What on_fatal_signal writes (signal-safe); the end line only when `ending`, else the
  // trace stays open.
  void on_signal_flush(bool ending);
  // The process ends next by `sig`, which it sends itself: the end line's "signal" (as
  // on_fatal_signal's). Signal-safe.
  void note_ending_signal(int sig) { last_signal_.store(sig, std::memory_order_relaxed); }
  // The application put back the default action of `sig`: a request to end (SIGINT, SIGTERM,
  // SIGHUP, SIGPIPE) gets the fatal-signal handler in front of it again, as at initialisation
  // (Python does so for SIGINT as it finalizes, before it kills itself with it).
  // Signal-safe.
  void on_default_action_restored(int sig);

  // Appends per-use arguments to out in their raw form (writer/record.hpp: raw_arg).
  static void append_args(std::string &out, const dftrace_arg *args, size_t nargs);
  static void append_args(char_buffer &out, const dftrace_arg *args, size_t nargs);

 private:
  runtime() = default;
  static runtime &create();
  static std::atomic<runtime *> s_instance;
  static std::atomic<bool> s_exit_begun;
  thread_state &thread();  // inline, in event_path.cpp
  // The same, out of line, for the other files; and the thread's state if it has one.
  thread_state &calling_thread();
  thread_state *calling_thread_state();
  // The key whose destructor frees a thread's state (once per process, from init).
  static void create_thread_key();
  // init's steps (lifecycle.cpp).
  void install_process_hooks();
  void identify_process();             // host, command line, program name (process.cpp)
  void define_header_hashes_locked();  // the hashes the header defines (hash_mutex_ held)
  void install_exit_and_signals();
  void apply_category_rules();
  void start_clock();
  void start_recording_locked();
  // Off for good with `reason` (initialised, not recording); returns status.
  int stay_off_locked(std::string reason, int status);
  void create_writer_locked();
  void choose_codec(writer_settings &ws) const;
  void ring_settings(writer_settings &ws) const;
  // aggregation.file's rules, compiled for the writer (null when there are none).
  std::shared_ptr<const event_rules> compile_rules();
  std::shared_ptr<event_rules> rules_;  // the same, kept to tell it the rank
  thread_state *bind_thread();
  uint64_t next_id(thread_state &ts);
  uint64_t alloc_global_id() { return id_counter_.fetch_add(1, std::memory_order_relaxed); }
  char *reserve(thread_state &ts, size_t n);
  void commit(thread_state &ts, char *end);
  void write_complete(thread_state &ts, const activation &a, uint64_t end_ns);
  uint64_t begin_at(node *n, int enable, const dftrace_arg *args, size_t nargs, uint32_t count,
                    uint64_t now);
  void end_at(uint64_t region, const dftrace_arg *args, size_t nargs, uint64_t now);
  // end_at's work, the per-use arguments appended by append(scratch) when there are any.
  template <typename Append>
  void end_with(uint64_t region, bool has_args, Append append, uint64_t now);
  // Ends the activation at ts.stack[at] (end_with's and node_stop's common part).
  template <typename Append>
  void end_activation(thread_state &ts, size_t at, bool has_args, Append append, uint64_t now);
  // Removes the innermost activation (and its NVTX range, when it has one).
  void pop_activation(thread_state &ts);
  // One event into the thread's chunk, as a binary record (record.hpp).
  // start and end: ticks when ticked, else monotonic ns (explicit-time events).
  // use_args: raw entries, JSON text or a prepared layout's address and values (kind).
  void write_record(thread_state &ts, rec_type type, node *n, uint64_t id, uint64_t start,
                    uint64_t end, int64_t tid, uint32_t level, int64_t parent_id,
                    std::string_view use_args, uint32_t count = 0, args_kind kind = args_kind::raw,
                    bool ticked = true);
  // The same, the per-use part (use_len bytes) written by put_use(dst).
  template <typename PutUse>
  void write_record_with(thread_state &ts, rec_type type, node *n, uint64_t id, uint64_t start,
                         uint64_t end, int64_t tid, uint32_t level, int64_t parent_id,
                         size_t use_len, PutUse put_use, uint32_t count, args_kind kind,
                         bool ticked);
  // A leaf's record: tick `start` to now, nested in the innermost open region.
  template <typename PutUse>
  void write_leaf(thread_state &ts, node *n, uint64_t start, size_t use_len, PutUse put_use,
                  args_kind kind);
  // The header: "[" and the lines that come first (HH, SH, PR, process_name, the start event).
  std::string header_text();
  // How the runtime's own metadata lines are written (pid, hhash, precision).
  line_format line_fmt() const;
  // The trace file's path: output.file, else output_prefix expanded (docs/format.md section 1).
  std::string path_from_config();
  void refresh_thread_ids(thread_state &ts);
  void emit_thread_name(thread_state &ts, std::string_view name);
  // The fatal-signal handlers (signals.cpp); again in a forked child, where an
  // interpreter has started by then (what it could not take at initialisation).
  void install_signal_handlers();
  friend void signals_in_fork_child();
  void reset_process_info();

  std::atomic<bool> initialized_{false};
  std::atomic<bool> recording_{false};
  bool forward_ = false;  // nvtx.forward with a tool attached (runtime/nvtx_forward.hpp)
  // Recording is on when the user wants it (dftrace_set_enabled) and the schedule does.
  bool user_on_ = true;
  bool gate_ = true;
  schedule schedule_;
  std::atomic<uint64_t> step_{0};
  // The schedule and the attach window shared with forked children: the page this process
  // publishes in, or (while following_) the one its parent publishes in. A child follows until
  // it counts a step or sets a schedule itself.
  schedule_page *share_ = nullptr;
  bool following_ = false;
  // With attach.enable, the page is a file of the channel (PID.page) that children started by
  // exec find and follow (lifecycle.cpp): this process made it (own_page_), or at init it
  // follows an ancestor's (follow_ancestor_locked).
  bool own_page_ = false;
  void follow_ancestor_locked();
  void own_page_locked();
  void publish_schedule_locked();
  bool sync_schedule_locked();  // false: the page is unreadable, no longer followed
  void stop_following_locked(const char *how = "as this process counts steps of its own");
  // Ring mode: slow steps, and the steps of full detail left after a trigger (ring.after in
  // steps; 0: none, or ring.after is a time).
  step_watch step_watch_;
  uint64_t hold_steps_left_ = 0;
  int trigger_signal_ = 0;  // trigger.signal, when its handler is installed (the header says it)
  int trigger_locked(std::string_view source, std::string_view reason, uint64_t now);
  void apply_recording_locked();
  // dftrace attach (attach.cpp): the window open now, if any.
  struct attach_window {
    bool open = false, pending = false;  // pending: a window of steps opens at the next step
    uint64_t start_ns = 0, end_ns = 0, until_ns = 0, steps_left = 0;  // end_ns: `to`
    uint64_t steps = 0, for_ns = 0;                                   // as asked
    std::string what, after, level;
    bool user_on = false;    // as it was before the window
    bool inherited = false;  // the parent's window, followed (it ends when the parent's does)
    uint64_t gen = 0;        // windows opened here (the shared page says it)
    uint64_t followed = 0;   // a child: the parent's last window followed (its gen)
    // While its own window hands over to the parent's it follows: recording is not switched
    // off between them, and the parent's starts where its own ended.
    bool handover = false;
  } attach_;
  window_state window_locked() const;                     // attach_ as the shared page says it
  void follow_window_locked(const window_state &w);       // a child: the parent's window
  void follow_window_ring_locked(const window_state &w);  // the same in ring mode: a trigger
  uint64_t ring_followed_ = 0;       // the parent's last window taken as a trigger (its gen)
  bool ring_followed_open_ = false;  // its full detail is on here
  void announce_ring_locked();       // the writer told where to announce its full detail
  // init: the thread that waits for requests (attach.enable); `sweep`: the channel's files of
  // processes that are gone removed first (not in a forked child: its parent did at its init).
  void attach_start_locked(bool sweep = true);
  void attach_stop_locked();  // finalize: the thread ends, PID.ready is removed
  std::string attach_open_locked(const std::string &request_text);  // "" when opened, else why
  std::string attach_ring_locked(const attach_request &r);          // the same, in ring mode
  void attach_switch_locked(bool on);
  void attach_step_locked();  // a dftrace_step: a pending window opens, an open one counts
  void attach_close_locked(std::string_view how);  // `to`: read after recording is off
  void (*window_fn_)(void *) = nullptr;
  void *window_user_ = nullptr;
  void window_changed_locked() {
    if (window_fn_) window_fn_(window_user_);
  }
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> id_counter_{k_first_event_id};
  uint64_t header_id_ = 1;  // ids 1..k_first_event_id-1 belong to the header
  static constexpr uint64_t k_first_event_id = 33;
  mutable std::mutex init_mutex_;
  config cfg_;
  std::string disabled_reason_ = "not initialised";
  tree tree_;
  std::unique_ptr<writer> writer_;
  std::vector<std::unique_ptr<writer>> old_writers_;  // finished; kept for late threads

  // process information
  pid_t pid_ = 0;
  pid_t ppid_ = 0;
  uint64_t epoch_offset_ns_ = 0;  // realtime - monotonic, at init
  uint64_t start_mono_ = 0;
  std::string host_;
  uint64_t host_hash_ = 0;
  std::string exec_;
  std::string cmdline_;
  std::string hhash_field_;  // "hhash":H  (empty when metadata is off)
  int rank_ = -1;
  int size_ = -1;
  // The topology's PR lines (hwloc), found once per process: the header is rendered again
  // when the rank becomes known.
  std::vector<std::pair<std::string, std::string>> topology_;
  bool topology_known_ = false;
  std::atomic<int> last_signal_{0};  // the last fatal signal received (footer: "signal")

  std::mutex hash_mutex_;
  defined_hashes defined_[4];
};

}  // namespace dftrace::detail
