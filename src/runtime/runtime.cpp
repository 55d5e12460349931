// runtime.cpp: process set-up and tear-down, the per-thread event path, header and footer,
// fork, exit and fatal signals.
#include "runtime/runtime.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/format.hpp"
#include "base/hash.hpp"
#include "base/log.hpp"
#include "base/thread_role.hpp"
#include "dftrace/dftrace.h"
#include "runtime/command_line.hpp"
#include "runtime/extensions.hpp"
#include "runtime/nvtx_forward.hpp"
#include "runtime/telemetry_sampler.hpp"
#include "topology/topology.hpp"
#include "writer/event_rules.hpp"

namespace dftrace::detail {

namespace {

thread_local thread_state *t_state __attribute__((tls_model("initial-exec"))) = nullptr;
pthread_key_t g_thread_key;
pthread_once_t g_once = PTHREAD_ONCE_INIT;

constexpr uint64_t k_id_block = 1024;

uint64_t ns_of(const timespec &t) {
  return static_cast<uint64_t>(t.tv_sec) * 1000000000u + static_cast<uint64_t>(t.tv_nsec);
}

// CLOCK_REALTIME minus CLOCK_MONOTONIC, read back to back; *mono_now: the monotonic reading.
uint64_t realtime_minus_monotonic_ns(uint64_t *mono_now) {
  timespec realtime, mono;
  clock_gettime(CLOCK_REALTIME, &realtime);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  *mono_now = ns_of(mono);
  return ns_of(realtime) - *mono_now;
}

pid_t current_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

void thread_exit(void *p) {
  auto *ts = static_cast<thread_state *>(p);
  if (ts && ts->w) ts->w->unregister_buffer(&ts->buf);
  if (t_state == ts) t_state = nullptr;
  delete ts;
}

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

struct sigaction g_old_actions[65];
bool g_installed[65];
const int k_fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT};

// The default action of `sig` put back, and the signal raised: the process ends as it would
// have untraced.
void die_of(int sig) {
  ::sigaction(sig, &g_old_actions[sig], nullptr);
  g_installed[sig] = false;
  ::raise(sig);
}

// A request deferred while the thread was inside dftrace (thread_role.hpp), now that it left.
void raise_deferred_signal(int sig) {
  runtime::get().on_fatal_signal(sig, true);
  die_of(sig);
}

void fatal_signal(int sig, siginfo_t *info, void *uctx) {
  const int saved_errno = errno;
  const struct sigaction &old = g_old_actions[sig];
  // With no handler of the application's (or Python's) to run, the default action ends the
  // process right after this: the trace gets its end line, marked with the signal.
  const bool dies =
      (old.sa_flags & SA_SIGINFO) ? old.sa_sigaction == nullptr : old.sa_handler == SIG_DFL;
  if ((sig == SIGTERM || sig == SIGINT) && dies && detail::t_lifecycle != 0) {
    // The thread was in a lifecycle call (a flush, the finish at exit), maybe holding a lock
    // the trace's writing needs: the signal takes effect as the call returns.
    detail::t_deferred_signal_raise = raise_deferred_signal;
    detail::t_deferred_signal = sig;
    errno = saved_errno;
    return;
  }
  runtime::get().on_fatal_signal(sig, dies);
  if (old.sa_flags & SA_SIGINFO) {
    if (old.sa_sigaction) {
      old.sa_sigaction(sig, info, uctx);
      errno = saved_errno;
      return;
    }
  } else if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN) {
    old.sa_handler(sig);
    errno = saved_errno;
    return;
  }
  // The default action: put it back and let the signal kill the process as it would have.
  die_of(sig);
  errno = saved_errno;
}

// Whether the process is a Python interpreter (its executable, or a libpython loaded globally),
// and whether that interpreter has started. Python reads the dispositions when it starts: it
// takes SIGINT (KeyboardInterrupt) only where it finds the default action, and its
// signal.getsignal reports what it found then (a foreign handler as None, which
// multiprocessing's forkserver, saving and restoring the handler, takes for an error). Once it
// has started, it never reads them again.
enum class python { none, starting, started };
python python_host() {
  void *f = ::dlsym(RTLD_DEFAULT, "Py_IsInitialized");
  if (!f) return python::none;
  return reinterpret_cast<int (*)()>(f)() ? python::started : python::starting;
}

// The fatal-signal flush for a request to end (SIGINT, SIGTERM) only where nobody else handles
// it: the default action in place, never SIGINT under Python (its KeyboardInterrupt), and
// SIGTERM under Python only once it has started (it then reports what it found: SIG_DFL). The
// faults (SIGSEGV, ...) are always chained.
bool takes_over_request(int sig, const struct sigaction &old, python host) {
  if (sig != SIGINT && sig != SIGTERM) return true;
  if (host != python::none && (sig == SIGINT || host == python::starting)) return false;
  return !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL;
}

std::string seconds_text(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%gs", s);
  return buf;
}

std::string base_name(const std::string &p) {
  auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
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

// ---------------------------------------------------------------- set-up

void runtime::reset_process_info() {
  pid_ = ::getpid();
  ppid_ = ::getppid();
  uint64_t mono_now;
  const uint64_t offset = realtime_minus_monotonic_ns(&mono_now);
  if (epoch_offset_ns_ == 0)
    epoch_offset_ns_ = offset + test_clock_skew_ns();  // kept across fork: one clock
  start_mono_ = mono_now;
}

int64_t runtime::test_clock_skew_ns() {
  // Test only: shifts this process's trace clock by a known amount, so that the MPI clock
  // alignment can be checked against a known skew (src/plugins/mpi/README.md).
  const char *v = std::getenv("DFTRACE_TEST_CLOCK_SKEW_NS");
  if (!v || !*v) return 0;
  char *end = nullptr;
  const long long skew = std::strtoll(v, &end, 10);
  if (*end) {
    log(log_level::warn, "DFTRACE_TEST_CLOCK_SKEW_NS=%s is not an integer; ignored", v);
    return 0;
  }
  return skew;
}

uint64_t runtime::epoch_offset_ns() {
  // Before initialisation (MPI_Init may come first), fix the offset now: init keeps it.
  if (__builtin_expect(epoch_offset_ns_ == 0, 0)) {
    std::lock_guard<std::mutex> lock(init_mutex_);
    if (epoch_offset_ns_ == 0) {
      uint64_t mono_now;
      epoch_offset_ns_ = realtime_minus_monotonic_ns(&mono_now) + test_clock_skew_ns();
    }
  }
  return epoch_offset_ns_;
}

int runtime::init(const dftrace_options *options) {
  lifecycle_scope own_work;  // its I/O is not the application's (base/thread_role.hpp)
  std::lock_guard<std::mutex> lock(init_mutex_);
  if (initialized_.load()) return recording() ? DFTRACE_OK : DFTRACE_ERR_DISABLED;
  if (exit_begun()) {
    // Too late: what initialisation reads (the configuration's tables, yaml-cpp, the C++
    // streams) may already be destroyed. Off for good, quietly (log() may be gone too).
    disabled_reason_ = "the process was exiting";
    recording_.store(false);
    tree_.set_recording(false);
    initialized_.store(true, std::memory_order_release);
    return DFTRACE_ERR_STATE;
  }
  // Before anything can fail: every later thread binding needs the key, failed init or not.
  pthread_once(&g_once, [] {
    pthread_key_create(&g_thread_key, thread_exit);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
  });
  try {
    ticks().prepare();  // the first tick slope spans initialisation
    cfg_ = load_config(options);
    set_log_level(static_cast<log_level>(cfg_.log_level));
    reset_process_info();

    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "unknown");
    host_ = host;
    host_hash_ = dftracer_hash(host_);
    hhash_field_ = cfg_.metadata ? hhash_member(host_hash_) : std::string();

    // The command line as output.cmdline and output.redact allow, and the program's name
    // (for Python, the script's).
    const std::vector<std::string> argv = process_arguments();
    cmdline_ = recorded_command_line(argv, cfg_.cmdline, cfg_.redact);
    exec_ = cfg_.exec_name;
    if (exec_.empty() && !argv.empty()) {
      exec_ = base_name(argv[0]);
      if (exec_.rfind("python", 0) == 0) {
        for (size_t i = 1; i < argv.size(); ++i) {
          if (argv[i].empty() || argv[i][0] == '-') {
            if (argv[i] == "-m" || argv[i] == "-c") break;
            continue;
          }
          exec_ = base_name(argv[i]);
          break;
        }
      }
    }
    if (exec_.size() > 3 && exec_.compare(exec_.size() - 3, 3, ".py") == 0)
      exec_.resize(exec_.size() - 3);
    for (char &c : exec_)
      if (c == '/' || c == ' ' || static_cast<unsigned char>(c) < 0x20) c = '_';
    if (exec_.empty()) exec_ = "unknown";

    {
      std::lock_guard<std::mutex> hl(hash_mutex_);
      for (auto &m : defined_) m.clear();
      defined_[DFTRACE_HASH_HOST].add(host_, host_hash_);
      defined_[DFTRACE_HASH_STRING].add(cmdline_, dftracer_hash(cmdline_));
      defined_[DFTRACE_HASH_STRING].add(exec_, dftracer_hash(exec_));
    }

    static bool exit_bound = false;
    if (cfg_.atexit && !exit_bound) {
      exit_bound = true;
      std::atexit(at_exit);
    }
    if (cfg_.signals) install_signal_handlers();
    // SIGXFSZ keeps the program's disposition: the writer never writes past the file-size
    // limit (src/writer/output_file.cpp), so that the signal is the program's own.

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
    topology_known_ = false;
    initialized_.store(true, std::memory_order_release);
    if (cfg_.config_unusable) {
      recording_.store(false);
      tree_.set_recording(false);
      disabled_reason_ = "the configuration file " + cfg_.config_file + " is not a file";
      return DFTRACE_ERR_CONFIG;
    }
    if (!cfg_.enable) {
      recording_.store(false);
      tree_.set_recording(false);
      disabled_reason_ =
          "disabled by configuration (enable it with DFTRACE_ENABLE=1, `enable: true` "
          "in the YAML file, or the init options)";
      log(log_level::info, "not recording: %s", disabled_reason_.c_str());
      return DFTRACE_ERR_DISABLED;
    }
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
    return DFTRACE_OK;
  } catch (const std::exception &e) {
    // Off for good: said once, and no later call tries again (each first use on a thread
    // would otherwise initialise, and fail, anew).
    log(log_level::error, "initialisation failed (%s); tracing is off", e.what());
    disabled_reason_ = std::string("initialisation failed: ") + e.what();
    recording_.store(false);
    tree_.set_recording(false);
    initialized_.store(true, std::memory_order_release);
    return DFTRACE_ERR_CONFIG;
  }
}

void runtime::create_writer_locked() {
  if (writer_) return;
  writer_settings ws;
  ws.compress = cfg_.compression;
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
  ws.member_bytes = cfg_.member_bytes;
  ws.flush_interval = cfg_.flush_interval;
  ws.chunk_bytes = std::min(cfg_.buffer_bytes, cfg_.member_bytes);
  ws.queue_bytes = std::max(cfg_.queue_bytes, 4 * cfg_.member_bytes);
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
  if (cfg_.ring) {
    // Members closed at least every quarter of the window, so that what a trigger writes
    // covers the window to within a quarter of it; members small beside the ring, so that it
    // holds many of them.
    ws.ring_seconds = cfg_.ring_seconds;
    ws.ring_bytes = cfg_.ring_bytes;
    ws.flush_interval = std::min(ws.flush_interval, cfg_.ring_seconds / 4);
    ws.member_bytes = std::min(ws.member_bytes, std::max<size_t>(4096, cfg_.ring_bytes / 4));
    ws.chunk_bytes = std::min(ws.chunk_bytes, ws.member_bytes);
    ws.ring_after_seconds = cfg_.ring_after_steps ? 0 : cfg_.ring_after_seconds;
    ws.ring_after_text = cfg_.ring_after_steps ? std::to_string(cfg_.ring_after_steps) + " steps"
                                               : seconds_text(cfg_.ring_after_seconds);
    ws.trigger_min_gap = cfg_.trigger_min_gap;
  }
  writer_ = std::make_unique<writer>(std::move(ws));
  generation_.fetch_add(1, std::memory_order_release);
  disabled_reason_.clear();
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
}

void runtime::apply_recording_locked() {
  if (user_on_ && !gate_ && writer_)
    disabled_reason_ =
        "outside the schedule's active steps (step " + std::to_string(step_.load()) + ")";
  const bool on = user_on_ && gate_ && writer_ != nullptr;
  recording_.store(on, std::memory_order_relaxed);
  tree_.set_recording(on);
}

int runtime::step() {
  if (!initialized_.load()) init(nullptr);
  std::lock_guard<std::mutex> lock(init_mutex_);
  const uint64_t ended = step_.fetch_add(1);
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
  schedule_ = s;
  step_.store(0);
  gate_ = schedule_.records(0);
  apply_recording_locked();
  return DFTRACE_OK;
}

int runtime::step_phase() {
  if (!initialized_.load()) init(nullptr);  // the schedule comes from the configuration
  std::lock_guard<std::mutex> lock(init_mutex_);
  return static_cast<int>(schedule_.phase(step_.load()));
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

void signals_in_fork_child() {
  runtime &r = runtime::get();
  if (r.initialized() && r.cfg_.signals) r.install_signal_handlers();
}

void runtime::install_signal_handlers() {
  const python interpreter = python_host();
  // A forked child of an interpreter that was starting here (preloaded) takes what it could
  // not (its Pool workers' SIGTERM: Pool.terminate()).
  static bool again_in_children = false;
  if (interpreter == python::starting && !again_in_children) {
    again_in_children = true;
    pthread_atfork(nullptr, nullptr, signals_in_fork_child);
  }
  for (int sig : k_fatal_signals) {
    if (g_installed[sig]) continue;
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0) continue;
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) continue;  // leave ignored ones
    if (!takes_over_request(sig, old, interpreter)) continue;
    struct sigaction sa {};
    sa.sa_sigaction = fatal_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (::sigaction(sig, &sa, &g_old_actions[sig]) == 0) g_installed[sig] = true;
  }
}

void runtime::on_signal_flush(bool ending) {
  end_fields end;  // no allocation here
  if (ending) {
    end.id = alloc_global_id();
    end.signal = last_signal_.load(std::memory_order_relaxed);
  }
  if (writer_) writer_->crash_flush(ending ? &end : nullptr);
}

void runtime::on_fatal_signal(int sig, bool dies) {
  last_signal_.store(sig, std::memory_order_relaxed);
  end_fields end;  // no allocation here
  end.id = alloc_global_id();
  end.signal = sig;
  if (writer_) writer_->crash_flush(dies ? &end : nullptr, sig);
}

// ---------------------------------------------------------------- header and footer

std::string runtime::path_from_config() {
  if (!cfg_.output_file.empty()) return cfg_.output_file;
  std::string p = cfg_.output_prefix;  // never empty (config.cpp)
  if (p.back() == '/') p += "trace";
  p += "-" + exec_;
  if (rank_ >= 0) p += "-" + std::to_string(rank_);
  p += "-" + std::to_string(pid_) + "-app.pfw";
  if (cfg_.compression) p += ".gz";
  return p;
}

line_format runtime::line_fmt() const {
  line_format f;
  f.pid = pid_;
  f.epoch_offset_ns = epoch_offset_ns_;
  f.ns_precision = cfg_.ns_precision;
  f.metadata = cfg_.metadata;
  f.hhash_field = hhash_field_;
  f.aggregate_interval_ns = static_cast<uint64_t>(cfg_.aggregation_interval * 1e9);
  f.budget_per_s = cfg_.budget;
  return f;
}

std::string runtime::header_text() {
  // The header takes ids from its own range so that it reads 1, 2, 3, ... as in DFTracer.
  header_id_ = 1;
  auto header_id = [this] {
    return header_id_ < k_first_event_id ? header_id_++ : alloc_global_id();
  };
  const line_format f = line_fmt();
  std::string h = "[\n";
  auto meta = [&](std::string_view type, const std::string &name, const std::string &value) {
    h += meta_line(f, header_id(), type, pid_, true, name, value);
  };
  meta("HH", host_, std::to_string(host_hash_));
  const uint64_t cmd_hash = dftracer_hash(cmdline_);
  const uint64_t exec_hash = dftracer_hash(exec_);
  meta("SH", cmdline_, std::to_string(cmd_hash));
  meta("SH", exec_, std::to_string(exec_hash));
  // The unit of ts and dur: no hhash, so that merge and split can write it first.
  h += meta_line(f, header_id(), "PR", pid_, false, "time_metric",
                 cfg_.ns_precision ? "\"ns\"" : "\"us\"");
  meta("PR", "hostname", json_quote(host_));
  meta("PR", "exec", json_quote(exec_));
  if (rank_ >= 0) {
    meta("PR", "rank", std::to_string(rank_));
    meta("PR", "size", std::to_string(size_));
  }
  if (cfg_.core_affinity) {
    if (!topology_known_) {
      topology_ = topology_properties(pid_);
      topology_known_ = true;
    }
    for (const auto &kv : topology_) meta("PR", kv.first, kv.second);
  }
  if (trigger_signal_) {  // the flight recorder's signal (dftrace trigger PID sends it)
    const char *abbrev = sigabbrev_np(trigger_signal_);
    meta("PR", "trigger_signal",
         json_quote(abbrev ? std::string("SIG") + abbrev : std::to_string(trigger_signal_)));
  }
  h += name_line(f, header_id(), "process_name", pid_,
                 rank_ >= 0 ? "rank " + std::to_string(rank_) : exec_);
  // The start event: version, date, parent, hashes and the clock mapping.
  char date[64];
  const time_t now = static_cast<time_t>((start_mono_ + epoch_offset_ns_) / 1000000000u);
  struct tm tmv;
  localtime_r(&now, &tmv);
  std::strftime(date, sizeof date, "%a %b %d %H:%M:%S %Y", &tmv);
  h += start_line(f, {header_id(), start_mono_, DFTRACE_VERSION_STRING, date, ppid_, exec_hash,
                      cmd_hash, ticks().tsc()});
  return h;
}

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
  if (!n) return 0;
  const bool on = enable < 0 ? n->active.load(std::memory_order_relaxed)
                             : (enable > 0 && recording_.load(std::memory_order_relaxed));
  if (!on) return 0;
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
  activation &a = ts.stack[i - 1];
  const bool top = i == ts.stack.size();
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

int runtime::set_rank(int rank, int size) {
  lifecycle_scope own_work;  // its I/O is not the application's (base/thread_role.hpp)
  if (rank < 0 || size <= rank) return DFTRACE_ERR_INVALID_ARGUMENT;
  rank_ = rank;
  size_ = size;
  if (rules_) rules_->set_rank(rank);
  if (recording()) {
    metadata_line("PR", "rank", std::to_string(rank), true);
    metadata_line("PR", "size", std::to_string(size), true);
    thread_state &ts = thread();
    if (ts.w)
      ts.w->push_meta(name_line(line_fmt(), alloc_global_id(), "process_name", pid_,
                                "rank " + std::to_string(rank)));
  }
  if (writer_) writer_->relocate(path_from_config(), header_text());
  return DFTRACE_OK;
}

// ---------------------------------------------------------------- fork

void runtime::on_fork_prepare() {
  init_mutex_.lock();
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
  thread_state *ts = t_state;
  reset_process_info();
  start_mono_ = ticks().to_ns(tick_now());  // the parent's map: the same TSC
  rank_ = -1;                               // a forked child is not the rank's main process
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
  // The child's file defines nothing yet; the parent's definitions stay known, so that an
  // inherited descriptor's hash is defined again where the child uses it.
  for (auto &m : defined_) m.new_file();
  defined_[DFTRACE_HASH_HOST].add(host_, host_hash_);
  defined_[DFTRACE_HASH_STRING].add(cmdline_, dftracer_hash(cmdline_));
  defined_[DFTRACE_HASH_STRING].add(exec_, dftracer_hash(exec_));
  hash_mutex_.unlock();
  tree_.mutex().unlock();
  init_mutex_.unlock();
  if (ts && writer_ && ts->w == writer_.get()) {
    ts->cur = ts->buf.current.load(std::memory_order_relaxed);
    emit_thread_name(*ts, exec_);
  }
  telemetry_fork_child();
}

}  // namespace dftrace::detail
