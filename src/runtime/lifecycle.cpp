// lifecycle.cpp: the process's tracing state over time: initialisation (as named steps), the
// writer, recording and the schedule, flush, finalize, and fork.
#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "base/attach_channel.hpp"
#include "base/held_fds.hpp"
#include "base/log.hpp"
#include "base/thread_role.hpp"
#include "dftrace/dftrace.h"
#include "runtime/extensions.hpp"
#include "runtime/nvtx_forward.hpp"
#include "runtime/runtime.hpp"
#include "runtime/signals.hpp"
#include "runtime/telemetry_sampler.hpp"
#include "writer/event_rules.hpp"

namespace dftrace::detail {

namespace {

pthread_once_t g_once = PTHREAD_ONCE_INIT;

void at_exit() {
  runtime::mark_exit_begun();
  try {
    runtime::get().finalize();
  } catch (...) {
    // an exit handler must not throw (std::terminate): the trace is as the writer left it
  }
}
void fork_prepare() { runtime::get().on_fork_prepare(); }
void fork_parent() { runtime::get().on_fork_parent(); }
void fork_child() { runtime::get().on_fork_child(); }
// The parent's ring-mode window last closed on its page (its gen; none open): windows over
// before this process follows the page are not its own to take (sync_schedule_locked).
uint64_t ring_window_over(const schedule_page &page) {
  const uint64_t ring = page.ring_state();
  return ring & 1 ? 0 : (ring >> 1) | k_ring_window;
}
// The schedule follower's step (schedule_share.hpp): it ends with the process's exit.
bool follow_parent_schedule(bool changed) {
  if (runtime::exit_begun()) return false;
  return !changed || runtime::get().schedule_follow();
}

std::string seconds_text(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%gs", s);
  return buf;
}

}  // namespace

std::atomic<runtime *> runtime::s_instance{nullptr};
std::atomic<bool> runtime::s_exit_begun{false};

runtime &runtime::create() {
  // Never destroyed: threads and exit handlers may use it during process teardown.
  static runtime *r = new runtime;
  s_instance.store(r, std::memory_order_release);
  return *r;
}

// ---------------------------------------------------------------- initialisation

int runtime::init(const dftrace_options *options) {
  lifecycle_scope own_work;  // its I/O is not the application's (base/thread_role.hpp)
  std::lock_guard<std::mutex> lock(init_mutex_);
  if (initialized_.load()) return recording() ? DFTRACE_OK : DFTRACE_ERR_DISABLED;
  // Too late once exit has begun: what initialisation reads (the configuration's tables,
  // yaml-cpp, the C++ streams) may already be destroyed. Off for good, quietly (log() may be
  // gone too).
  if (exit_begun()) return stay_off_locked("the process was exiting", DFTRACE_ERR_STATE);
  install_process_hooks();
  try {
    ticks().prepare();  // the first tick slope spans initialisation
    cfg_ = load_config(options);
    set_log_level(static_cast<log_level>(cfg_.log_level));
    reset_process_info();
    if (cfg_.parent_pid > 0) ppid_ = static_cast<pid_t>(cfg_.parent_pid);  // spawned by it
    identify_process();
    {
      std::lock_guard<std::mutex> hl(hash_mutex_);
      for (auto &m : defined_) m.clear();
      define_header_hashes_locked();
    }
    install_exit_and_signals();
    apply_category_rules();
    start_clock();
    topology_known_ = false;
    initialized_.store(true, std::memory_order_release);
    if (cfg_.config_unusable)
      return stay_off_locked("the configuration file " + cfg_.config_file + " is not a file",
                             DFTRACE_ERR_CONFIG);
    attach_start_locked();  // attach.enable: wait for dftrace attach, traced or not (attach.cpp)
    if (!cfg_.enable) {
      const int status = stay_off_locked(
          "disabled by configuration (enable it with DFTRACE_ENABLE=1, `enable: true` "
          "in the YAML file, or the init options)",
          DFTRACE_ERR_DISABLED);
      log(log_level::info, "not recording: %s", disabled_reason_.c_str());
      follow_ancestor_locked();  // a window open in the process that started this one
      return status;
    }
    start_recording_locked();
    follow_ancestor_locked();
    return DFTRACE_OK;
  } catch (const std::exception &e) {
    // Off for good: said once, and no later call tries again (each first use on a thread
    // would otherwise initialise, and fail, anew).
    log(log_level::error, "initialisation failed (%s); tracing is off", e.what());
    return stay_off_locked(std::string("initialisation failed: ") + e.what(), DFTRACE_ERR_CONFIG);
  }
}

int runtime::stay_off_locked(std::string reason, int status) {
  disabled_reason_ = std::move(reason);
  recording_.store(false);
  tree_.set_recording(false);
  initialized_.store(true, std::memory_order_release);
  return status;
}

void runtime::install_process_hooks() {
  // Before anything can fail: every later thread binding needs the key, failed init or not.
  pthread_once(&g_once, [] {
    create_thread_key();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
  });
}

void runtime::install_exit_and_signals() {
  static bool exit_bound = false;
  if (cfg_.atexit && !exit_bound) {
    exit_bound = true;
    std::atexit(at_exit);
  }
  if (cfg_.signals) install_signal_handlers();
  // SIGXFSZ keeps the program's disposition: the writer never writes past the file-size
  // limit (src/writer/output_file.cpp), so that the signal is the program's own.
}

void runtime::apply_category_rules() {
  // io.*: the I/O interposers' categories (src/plugins/io) are switched like any category, so
  // that `categories` rules given after can still turn them back on.
  std::vector<std::pair<std::string, bool>> rules;
  if (!cfg_.io || !cfg_.posix) rules.emplace_back("POSIX", false);
  if (!cfg_.io || !cfg_.stdio) rules.emplace_back("STDIO", false);
  if (!cfg_.io) rules.emplace_back("H5", false);
  rules.insert(rules.end(), cfg_.categories.begin(), cfg_.categories.end());
  tree_.set_rules(std::move(rules));
  // aggregation.*: which nodes' events are folded (the writer folds them).
  if (cfg_.aggregation)
    tree_.set_aggregation(cfg_.aggregation_full, cfg_.aggregation_rules);
  else
    tree_.set_aggregation(false, {});
}

void runtime::start_clock() {
  // The event path's clock, fixed before any event reads it (base/clock.hpp).
  const char *why = "";
  const bool forced = cfg_.timer_source == "tsc";
  if (!ticks().start(cfg_.timer_source != "monotonic", forced, &why)) {
    if (forced)
      log(log_level::warn,
          "timer.source is tsc but the TSC can not be used (%s); using CLOCK_MONOTONIC", why);
  } else if (forced && !kernel_uses_tsc()) {
    log_once(log_level::info, "tsc-forced",
             "timer.source is tsc: using the invariant TSC although the kernel keeps time with "
             "another clocksource");
  }
  // Every time in the trace comes from ticks through the map, the start line's too.
  start_mono_ = ticks().to_ns(tick_now());
}

void runtime::start_recording_locked() {
  // Before the header is made: it says which signal triggers (dftrace trigger PID reads it).
  trigger_signal_ =
      cfg_.ring && cfg_.trigger_signal &&
              install_trigger_signal(cfg_.trigger_signal, python_host() == python::starting)
          ? cfg_.trigger_signal
          : 0;
  create_writer_locked();
  step_watch_.start(mono_ns());
  hold_steps_left_ = 0;
  schedule_ = {cfg_.schedule_skip_first, cfg_.schedule_wait, cfg_.schedule_warmup,
               cfg_.schedule_active, cfg_.schedule_repeat};
  user_on_ = true;
  gate_ = schedule_.records(step_.load());
  apply_recording_locked();
  forward_ = nvtx_forward::start(cfg_.nvtx_forward);
  start_extensions(cfg_);
  telemetry_start(cfg_.telemetry_interval, telemetry_lock_path(cfg_, host_));
}

// ---------------------------------------------------------------- the writer

void runtime::create_writer_locked() {
  if (writer_) return;
  writer_settings ws;
  ws.compress = cfg_.compression;
  choose_codec(ws);
  // The sizes as `dftrace config` shows them, ring mode's included (config.hpp).
  const writer_sizes sizes = effective_writer_sizes(cfg_);
  ws.member_bytes = sizes.member_bytes;
  ws.flush_interval = sizes.flush_interval;
  ws.later_file = !old_writers_.empty();
  ws.chunk_bytes = sizes.chunk_bytes;
  ws.queue_bytes = sizes.queue_bytes;
  ws.drop_when_full = cfg_.on_full_drop;
  ws.compress_threads = cfg_.compress_threads;
  ws.format.ticks = &ticks();
  ws.format.pid = pid_;
  ws.format.epoch_offset_ns = epoch_offset_ns_;
  ws.format.ns_precision = cfg_.ns_precision;
  ws.format.metadata = cfg_.metadata;
  ws.format.aggregate_interval_ns = static_cast<uint64_t>(cfg_.aggregation_interval * 1e9);
  ws.format.budget_per_s = cfg_.budget;
  ws.format.budget_bytes_per_h = cfg_.budget_bytes;
  ws.format.sample = cfg_.sample;
  ws.format.rules = compile_rules();
  ws.format.hhash_field = hhash_field_;
  ws.path = path_from_config();
  ws.header = header_text();
  if (cfg_.ring) ring_settings(ws);
  writer_ = std::make_unique<writer>(std::move(ws));
  announce_ring_locked();
  generation_.fetch_add(1, std::memory_order_release);
  disabled_reason_.clear();
}

void runtime::choose_codec(writer_settings &ws) const {
  codec c = codec_auto();
  if (cfg_.compressor != "auto" && !codec_from_name(cfg_.compressor, &c)) c = codec_auto();
  if (!codec_available(c)) {
    log(log_level::warn, "compressor '%s' is not available in this build; using %s",
        cfg_.compressor.c_str(), codec_name(codec_auto()));
    c = codec_auto();
  }
  ws.kind = c;
  ws.level = cfg_.level >= 0 ? cfg_.level : codec_default_level(c);
  if (ws.level < codec_min_level(c) || ws.level > codec_max_level(c)) {
    log(log_level::warn, "output.level %d is outside %s's range %d..%d; using %d", ws.level,
        codec_name(c), codec_min_level(c), codec_max_level(c), codec_default_level(c));
    ws.level = codec_default_level(c);
  }
}

void runtime::ring_settings(writer_settings &ws) const {
  ws.ring_seconds = cfg_.ring_seconds;
  ws.ring_bytes = cfg_.ring_bytes;
  ws.ring_after_seconds = cfg_.ring_after_steps ? 0 : cfg_.ring_after_seconds;
  ws.ring_after_text = cfg_.ring_after_steps ? std::to_string(cfg_.ring_after_steps) + " steps"
                                             : seconds_text(cfg_.ring_after_seconds);
  ws.trigger_min_gap = cfg_.trigger_min_gap;
  ws.ring_direct = cfg_.ring_direct == config::ring_direct_mode::on;
  ws.ring_direct_auto = cfg_.ring_direct == config::ring_direct_mode::automatic;
}

std::shared_ptr<const event_rules> runtime::compile_rules() {
  rules_.reset();
  if (!cfg_.aggregation || (cfg_.aggregation_include.empty() && cfg_.aggregation_exclude.empty()))
    return nullptr;
  auto rules = std::make_shared<event_rules>();
  std::string why;
  for (int inclusion = 1; inclusion >= 0; --inclusion)
    for (const std::string &text : inclusion ? cfg_.aggregation_include : cfg_.aggregation_exclude)
      if (!rules->add(inclusion != 0, text, &why))
        log(log_level::warn, "aggregation.file: %s: the %s rule \"%s\" is ignored: %s",
            cfg_.aggregation_file.c_str(), inclusion ? "inclusion" : "exclusion", text.c_str(),
            why.c_str());
  if (rules->empty()) return nullptr;
  rules->set_app(exec_);
  rules->set_rank(rank_);
  rules_ = rules;
  return rules;
}

void runtime::set_recording(bool on) {
  if (on && !initialized_.load()) init(nullptr);
  std::lock_guard<std::mutex> lock(init_mutex_);
  if (on && initialized_.load()) create_writer_locked();
  if (!on && writer_) disabled_reason_ = "switched off by dftrace_set_enabled(false)";
  user_on_ = on;
  apply_recording_locked();
  if (cfg_.attach) window_changed_locked();
}

void runtime::apply_recording_locked() {
  if (user_on_ && !gate_ && writer_)
    disabled_reason_ =
        "outside the schedule's active steps (step " + std::to_string(step_.load()) + ")";
  const bool on = user_on_ && gate_ && writer_ != nullptr;
  if (!on && attach_.handover) return;  // (attach_poll: its own window to the parent's)
  recording_.store(on, std::memory_order_relaxed);
  tree_.set_recording(on);
}

int runtime::step() {
  if (!initialized_.load()) init(nullptr);
  std::lock_guard<std::mutex> lock(init_mutex_);
  if (following_) {  // its own steps from here, counted on
    stop_following_locked();
    own_page_locked();
  }
  const uint64_t ended = step_.fetch_add(1);
  if (attach_.pending || attach_.open) attach_step_locked();
  if (writer_ && writer_->ring_on()) {
    const uint64_t now = mono_ns();
    std::string why;
    if (hold_steps_left_ && --hold_steps_left_ == 0) writer_->ring_release();
    if (step_watch_.ended(now, ended, cfg_.trigger_step_factor, cfg_.trigger_step_ns, &why))
      trigger_locked("slow_step", why, now);
  }
  if (!schedule_.on()) return 0;
  const bool gate = schedule_.records(ended + 1);
  if (gate != gate_) {
    gate_ = gate;
    apply_recording_locked();
  }
  publish_schedule_locked();
  if (!schedule_.window_ends_after(ended)) return 0;
  // The window's events on disk before the caller is told (on_trace_ready).
  if (writer_ && !writer_->flush()) return DFTRACE_ERR_IO;
  return 1;
}

int runtime::trigger(std::string_view source, std::string_view reason) {
  if (!initialized_.load()) return 0;  // a trigger never starts tracing
  std::lock_guard<std::mutex> lock(init_mutex_);
  return trigger_locked(source, reason, mono_ns());
}

int runtime::trigger_locked(std::string_view source, std::string_view reason, uint64_t now) {
  if (!writer_ || !writer_->ring_on() || !writer_->trigger(source, reason, now)) return 0;
  if (cfg_.ring_after_steps) hold_steps_left_ = cfg_.ring_after_steps;
  return 1;
}

int runtime::set_schedule(const schedule &s) {
  if (s.active == 0 && (s.wait || s.warmup || s.skip_first || s.repeat))
    return DFTRACE_ERR_INVALID_ARGUMENT;
  if (!initialized_.load()) init(nullptr);
  std::lock_guard<std::mutex> lock(init_mutex_);
  if (following_) {
    stop_following_locked();
    own_page_locked();
  }
  schedule_ = s;
  step_.store(0);
  gate_ = schedule_.records(0);
  apply_recording_locked();
  publish_schedule_locked();
  return DFTRACE_OK;
}

int runtime::step_phase() {
  if (!initialized_.load()) init(nullptr);  // the schedule comes from the configuration
  std::lock_guard<std::mutex> lock(init_mutex_);
  if (following_) sync_schedule_locked();  // what the parent's step says now
  return static_cast<int>(schedule_.phase(step_.load()));
}

// ---------------------------------------------------------------- the schedule and forks

void runtime::publish_schedule_locked() {
  if (share_ && !following_) share_->publish({schedule_, step_.load(), gate_, window_locked()});
  announce_ring_locked();
}

void runtime::announce_ring_locked() {
  // Ring mode: the full detail after each trigger is told on the page this process publishes,
  // for its children to follow (docs/attach.md, "A process in ring mode").
  if (!writer_ || !writer_->ring_on()) return;
  if (share_ && !following_)
    writer_->ring_announce(share_->ring_word(), share_->wake_word());
  else
    writer_->ring_announce(nullptr, nullptr);
}

bool runtime::sync_schedule_locked() {
  schedule_state st;
  if (!share_->read(&st)) {
    // Its publisher was killed while it wrote (the page stays half-written): as if it had none.
    log(log_level::warn,
        "the page of the schedule and window this process follows stays "
        "half-written (its publisher was killed?): it follows it no more");
    stop_following_locked("as the parent's page stayed half-written");
    own_page_locked();  // (for the processes it starts by exec, as after a step of its own)
    return false;
  }
  schedule_ = st.s;
  step_.store(st.step);
  // The parent's window: an attach window, or in ring mode the full detail after its trigger.
  window_state w = st.window;
  const uint64_t ring = share_->ring_state();
  const window_state ring_window{true, 0, st.window.pid, (ring >> 1) | k_ring_window, 0, 0};
  if (!w.open && (ring & 1)) {
    w = ring_window;
  } else if (!w.open && cfg_.ring && (ring >> 1) && ring_window.gen != ring_followed_) {
    // A window of the parent's that opened and closed before this thread woke (a busy machine
    // wakes it late): its ring is written all the same, the window taken and released at once.
    follow_window_locked(ring_window);
  }
  follow_window_locked(w);  // (it sets the gate as the parent's window does)
  if (st.gate == gate_) return true;
  gate_ = st.gate;
  apply_recording_locked();
  // The parent's window ended: this process's part of it on disk as well.
  if (!gate_ && writer_) writer_->flush();
  return true;
}

bool runtime::schedule_follow() {
  lifecycle_scope own_work;
  std::lock_guard<std::mutex> lock(init_mutex_);
  if (!following_ || !initialized_.load()) return false;
  return sync_schedule_locked();
}

void runtime::stop_following_locked(const char *how) {
  // A window of the parent's ends here as well: this process's steps are its own from now.
  if (attach_.open && attach_.inherited) attach_close_locked(how);
  if (ring_followed_open_) {  // in ring mode, the full detail it followed (its own goes on)
    ring_followed_open_ = false;
    if (writer_) writer_->ring_release(true);
  }
  following_ = false;
  share_ = nullptr;  // the parent's; this process makes its own page at its next fork
  schedule_follower_stop();
}

void runtime::follow_ancestor_locked() {
  // A process started by exec (spawn, posix_spawn, a subprocess) inherits nothing of its
  // parent's memory: it finds the page of the nearest ancestor that publishes one in the
  // channel, and follows it as a forked child does (in ring mode too: its ring is written when
  // the ancestor's window opens). One with no such ancestor has its own page (for the
  // processes it starts). Nothing is said when none is found.
  if (!cfg_.attach || share_ || following_) return;
  const std::string dir = attach_dir_path(cfg_.attach_dir);
  std::string why;
  if (!attach_dir_ready(dir, false, &why)) return;  // (attach_start_locked said why)
  pid_t publisher = 0;
  if (const schedule_page *page = ancestor_page(dir, &publisher)) {
    // Read-only: a follower never publishes (publish_schedule_locked).
    share_ = const_cast<schedule_page *>(page);
    following_ = schedule_follower_start(share_, follow_parent_schedule);
    if (following_) {
      log(log_level::info, "attach: following the windows of pid %d", static_cast<int>(publisher));
      ring_followed_ = ring_window_over(*share_);
      sync_schedule_locked();  // a window open already opens here now
      return;
    }
    share_ = nullptr;
  }
  own_page_locked();
}

void runtime::own_page_locked() {
  if (!cfg_.attach || share_ || !initialized_.load()) return;
  const std::string dir = attach_dir_path(cfg_.attach_dir);
  std::string why;
  if (!attach_dir_ready(dir, false, &why)) return;
  share_ = schedule_page::create_named(dir + "/" + std::to_string(pid_) + ".page");
  own_page_ = share_ != nullptr;
  publish_schedule_locked();
}

void runtime::preload_enable() {
  // Called at load time when the environment enables tracing: nodes become active so that
  // their first use initialises the runtime (with whatever init options came first).
  tree_.set_recording(true);
}

int runtime::finalize() {
  lifecycle_scope own_work;  // its I/O is not the application's (base/thread_role.hpp)
  bool failed = false;
  // Components write what they still hold (GPU activity) while the trace is open; they call
  // back into the runtime, so this runs before the lock is taken.
  if (initialized_.load()) {
    telemetry_stop();  // its last sample, while the trace is open
    stop_extensions();
  }
  std::lock_guard<std::mutex> lock(init_mutex_);
  if (!initialized_.load()) return DFTRACE_OK;
  attach_close_locked("as the trace was finalized");
  attach_stop_locked();
  if (following_) stop_following_locked();
  recording_.store(false);
  tree_.set_recording(false);
  if (writer_) {
    end_fields end;
    end.id = alloc_global_id();
    end.signal = last_signal_.load(std::memory_order_relaxed);
    writer_->finish(end);
    failed = writer_->failed();
    if (!failed)
      log(log_level::info, "wrote %llu events to %s",
          static_cast<unsigned long long>(writer_->events_written()), writer_->path().c_str());
    old_writers_.push_back(std::move(writer_));
    generation_.fetch_add(1, std::memory_order_release);
  }
  initialized_.store(false);
  disabled_reason_ = "finalized";
  // Events were lost (a full file system, the file-size limit, a file that could not be made).
  return failed ? DFTRACE_ERR_IO : DFTRACE_OK;
}

int runtime::flush() {
  lifecycle_scope own_work;  // its I/O is not the application's (base/thread_role.hpp)
  if (!writer_) return recording() ? DFTRACE_OK : DFTRACE_ERR_STATE;
  return writer_->flush() ? DFTRACE_OK : DFTRACE_ERR_IO;
}

std::string runtime::status() const {
  std::lock_guard<std::mutex> lock(init_mutex_);
  std::string s;
  if (writer_ && recording()) {
    s = "recording";
  } else {
    s = "not recording: " + disabled_reason_;
  }
  const writer *w =
      writer_ ? writer_.get() : (old_writers_.empty() ? nullptr : old_writers_.back().get());
  if (w) {
    const std::string p = w->path();
    s += "; file " + (p.empty() ? std::string("(not opened yet)") : p);
    s += "; " + std::to_string(w->events_written()) + " events written, " +
         std::to_string(w->events_dropped()) + " dropped";
    s += std::string("; ") +
         (w->settings().compress ? codec_name(w->settings().kind) : "uncompressed");
    if (w->settings().compress) s += " level " + std::to_string(w->settings().level);
    if (w->failed()) s += "; writing failed";
  }
  return s;
}

std::string runtime::output_path() const {
  std::lock_guard<std::mutex> lock(init_mutex_);
  const writer *w =
      writer_ ? writer_.get() : (old_writers_.empty() ? nullptr : old_writers_.back().get());
  return w ? w->path() : std::string();
}

std::string runtime::config_text() const {
  std::lock_guard<std::mutex> lock(init_mutex_);
  return describe(cfg_);
}

bool runtime::config_value(std::string_view key, std::string *value) const {
  std::lock_guard<std::mutex> lock(init_mutex_);
  return detail::config_value(cfg_, key, value);
}

uint64_t runtime::events_written() const {
  std::lock_guard<std::mutex> lock(init_mutex_);
  const writer *w =
      writer_ ? writer_.get() : (old_writers_.empty() ? nullptr : old_writers_.back().get());
  return w ? w->events_written() : 0;
}

uint64_t runtime::events_dropped() const {
  std::lock_guard<std::mutex> lock(init_mutex_);
  const writer *w =
      writer_ ? writer_.get() : (old_writers_.empty() ? nullptr : old_writers_.back().get());
  return w ? w->events_dropped() : 0;
}

// ---------------------------------------------------------------- fork

void runtime::on_fork_prepare() {
  init_mutex_.lock();
  // A schedule counted here, the attach windows opened here and, in ring mode, the full detail
  // after its triggers are shared with the child, which counts no step of its own.
  if (!following_ && (schedule_.on() || cfg_.attach || cfg_.ring) && initialized_.load()) {
    if (!share_) share_ = schedule_page::create();
    publish_schedule_locked();
  }
  tree_.mutex().lock();
  hash_mutex_.lock();
  if (writer_) writer_->fork_prepare();
}

void runtime::on_fork_parent() {
  if (writer_) writer_->fork_parent();
  hash_mutex_.unlock();
  tree_.mutex().unlock();
  init_mutex_.unlock();
}

void runtime::on_fork_child() {
  thread_state *ts = calling_thread_state();
  reset_process_info();
  start_mono_ = ticks().to_ns(tick_now());  // the parent's map: the same TSC
  rank_ = -1;                               // a forked child is not the rank's main process
  own_page_ = false;                        // the parent's page (PID.page) is the parent's
  if (rules_) rules_->set_rank(-1);
  if (ts) {
    // Regions open in the parent end in the parent; the child's NVTX stack is left empty.
    for (const activation &a : ts->stack)
      if (a.forwarded) nvtx_forward::pop();
    ts->stack.clear();
    ts->scratch.clear();
    refresh_thread_ids(*ts);
  }
  if (writer_)
    writer_->fork_child(ts && ts->w == writer_.get() ? &ts->buf : nullptr, pid_, path_from_config(),
                        header_text());
  // The child's steps are its own: the first lasts from the fork, no full detail is owed.
  step_watch_.start(start_mono_);
  hold_steps_left_ = 0;
  ring_followed_ = 0;  // (the writer's full detail is the parent's: a window open is taken anew)
  ring_followed_open_ = false;
  // The child's file defines nothing yet; the parent's definitions stay known, so that an
  // inherited descriptor's hash is defined again where the child uses it.
  for (auto &m : defined_) m.new_file();
  define_header_hashes_locked();
  held_fds_fork_child();  // the parent's inotify instance and node lock stay the parent's
  if (initialized_.load()) attach_start_locked(false);  // its own PID.ready and thread
  hash_mutex_.unlock();
  tree_.mutex().unlock();
  init_mutex_.unlock();
  if (ts && writer_ && ts->w == writer_.get()) {
    ts->cur = ts->buf.current.load(std::memory_order_relaxed);
    emit_thread_name(*ts, exec_);
  }
  telemetry_fork_child();
  // The parent's schedule and windows (an attach window, or in ring mode the full detail after
  // a trigger), followed until the child counts a step of its own.
  if (share_ && initialized_.load()) {
    std::lock_guard<std::mutex> lock(init_mutex_);
    following_ = schedule_follower_start(share_, follow_parent_schedule);
    if (following_) {
      // A window open or asked in the parent is the parent's: its steps or time end it.
      attach_.pending = false;
      if (attach_.open) {
        attach_.inherited = true;
        attach_.followed = attach_.gen;
        attach_.until_ns = attach_.steps_left = 0;
      }
      ring_followed_ = ring_window_over(*share_);
      sync_schedule_locked();
    } else {
      share_ = nullptr;  // the state at the fork stays; the parent's page is never written
    }
  }
}

}  // namespace dftrace::detail
