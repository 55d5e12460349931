// attach.cpp: `dftrace attach` on the runtime's side (docs/attach.md). With attach.enable, init
// makes the private channel (base/attach_channel.hpp), says there that the process waits
// (PID.ready) and starts a thread that sleeps until a request comes (inotify on the channel, and
// once a second besides). A request opens a window of full tracing, for a time or a number of
// steps; when it ends, the process goes back to what it was doing (off, or aggregating) and a
// trigger line of source `attach` says the window. Nothing here is on the event path: a
// process that waits pays what a disabled one does.
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/attach_channel.hpp"
#include "base/clock.hpp"
#include "base/held_fds.hpp"
#include "base/log.hpp"
#include "base/thread_role.hpp"
#include "runtime/runtime.hpp"
#include "writer/trace_lines.hpp"

namespace dftrace::detail {

namespace {

// A later init (after finalize) or a forked child starts a new thread; an older one sees the
// generation change and ends.
std::atomic<uint64_t> g_listener_gen{0};

struct listener_args {
  std::string dir;
  uint64_t gen;
};

// The listener's inotify instance: held for the run at a high number, given up (closed) when
// the program meets EMFILE; requests are then found by the once-a-second look alone.
held_fd &listener_inotify() {
  static held_fd *h = new held_fd();  // (never destroyed: a detached thread uses it)
  return *h;
}

void *listener_main(void *p) {
  ++t_internal_thread;  // its file work is dftrace's, never the application's I/O
  const listener_args args = *static_cast<listener_args *>(p);
  delete static_cast<listener_args *>(p);
  uint64_t held = 0;  // the inotify instance's generation (0: none)
  {
    const momentary_fds making;  // (at the lowest free number until it is held high)
    int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (in >= 0 && inotify_add_watch(in, args.dir.c_str(), IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
      close(in);
      in = -1;  // (no inotify instance left for this user: a request waits up to a second)
    }
    if (in >= 0) held = listener_inotify().hold(in);
  }
  uint64_t wait_ns = 0;
  while (!runtime::exit_begun() && g_listener_gen.load() == args.gen) {
    int ms = 1000;
    if (wait_ns) ms = static_cast<int>(std::min<uint64_t>(1000, wait_ns / 1000000 + 1));
    // (given up meanwhile: the number may be the program's now; poll only watches it, and it is
    // read only while still held)
    pollfd pf{held ? listener_inotify().peek() : -1, POLLIN, 0};
    ::poll(&pf, pf.fd >= 0 ? 1 : 0, ms);
    if (held && (pf.revents & POLLIN)) {
      if (!listener_inotify().use(held, [](int fd) {
            char buf[4096];
            while (read(fd, buf, sizeof buf) > 0) {
            }
          }))
        held = 0;
    }
    if (runtime::exit_begun() || g_listener_gen.load() != args.gen) break;
    try {
      wait_ns = runtime::get().attach_poll(args.dir);
    } catch (...) {  // out of memory: this request is lost; the next one is read anew
      wait_ns = 0;
    }
  }
  if (held) listener_inotify().close(held);
  return nullptr;
}

void start_listener(const std::string &dir) {
  auto *args = new (std::nothrow) listener_args{dir, g_listener_gen.fetch_add(1) + 1};
  if (!args) return;
  if (!start_detached_thread(listener_main, args, "dftrace-attach")) {
    delete args;
    log(log_level::warn, "attach: the thread that waits for requests could not start");
  }
}

std::string directory_of(const std::string &path) {
  const size_t slash = path.rfind('/');
  return attach_absolute_dir(slash == std::string::npos ? "."
                             : slash == 0               ? "/"
                                                        : path.substr(0, slash));
}

// The categories a window of `level` traces (empty: every category, level full). io: the I/O
// calls as the I/O plug-ins record them; torch: the AI tree's categories, which the PyTorch
// instrumentation writes (docs/attach.md, "Levels").
std::vector<std::string> level_categories(const std::string &level) {
  if (level == "io") return {"POSIX", "STDIO", "H5", "MPIIO"};
  if (level == "torch")
    return {"compute", "data", "dataloader", "device", "comm", "checkpoint", "pipeline"};
  return {};
}

// The levels as the shared page carries them (schedule_share.hpp).
const char *const k_levels[] = {"full", "io", "torch"};

uint32_t level_code(const std::string &level) {
  for (uint32_t i = 0; i < 3; ++i)
    if (level == k_levels[i]) return i;
  return 0;
}

std::string duration_text(uint64_t ns) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%gs", ns / 1e9);
  return buf;
}

}  // namespace

void runtime::attach_start_locked(bool sweep) {
  if (!cfg_.attach) return;
  const std::string dir = attach_dir_path(cfg_.attach_dir);
  std::string why;
  if (!attach_dir_ready(dir, true, &why)) {
    log(log_level::warn, "attach: %s; dftrace attach can not reach this process", why.c_str());
    return;
  }
  if (sweep) sweep_attach_channel(dir);  // the files of processes killed before their end
  const std::string ready = "pid " + std::to_string(pid_) + "\nstart " +
                            std::to_string(process_start_ticks(pid_)) + "\ntrace_dir " +
                            directory_of(path_from_config()) + "\n";
  if (!write_private_file(dir + "/" + std::to_string(pid_) + ".ready", ready)) {
    log(log_level::warn,
        "attach: %s/%d.ready could not be written; dftrace attach can not "
        "reach this process",
        dir.c_str(), static_cast<int>(pid_));
    return;
  }
  start_listener(dir);
}

void runtime::attach_stop_locked() {
  if (!cfg_.attach) return;
  g_listener_gen.fetch_add(1);
  const std::string base = attach_dir_path(cfg_.attach_dir) + "/" + std::to_string(pid_);
  // (PID.ack stays: the asker reads and removes it, and may not have yet when a window's last
  // step is the program's last; sweep_attach_channel removes one left by a process gone.)
  unlink((base + ".ready").c_str());
  if (own_page_) {  // children started later find none (those following keep their mapping)
    unlink((base + ".page").c_str());
    own_page_ = false;
    share_ = nullptr;
  }
}

uint64_t runtime::attach_poll(const std::string &dir) {
  std::lock_guard<std::mutex> lock(init_mutex_);
  if (!initialized_.load()) return 0;
  uint64_t now = mono_ns();
  if (attach_.open && attach_.until_ns && now >= attach_.until_ns) {
    attach_.handover = following_;  // a window of the parent's still open: followed, no gap
    attach_close_locked("its time ran out");
    if (following_) sync_schedule_locked();
    attach_.handover = false;
    apply_recording_locked();  // off now if no window of the parent's followed
  }
  const std::string base = dir + "/" + std::to_string(pid_);
  struct stat st;
  if (lstat((base + ".req").c_str(), &st) == 0) {
    const momentary_fds files;  // the request's and the answer's
    std::string text, why, answer;
    const bool read = read_private_file(base + ".req", k_attach_request_max, &text, &why);
    unlink((base + ".req").c_str());
    why = read ? attach_open_locked(text) : "the request file was refused: " + why;
    answer = why.empty() ? "ok " + attach_.what : "refused: " + why + "; nothing changed";
    if (!why.empty()) log(log_level::warn, "attach: %s", answer.c_str());
    write_private_file(base + ".ack", answer + "\n");
    now = mono_ns();
  }
  if (!attach_.open || !attach_.until_ns) return 0;
  return attach_.until_ns > now ? attach_.until_ns - now : 1;
}

std::string runtime::attach_open_locked(const std::string &request_text) {
  attach_request r;
  std::string why;
  if (!parse_attach_request(request_text, &r, &why)) return "a malformed request: " + why;
  if (attach_.open || attach_.pending) return "a window is open already (" + attach_.what + ")";
  if (cfg_.ring) return attach_ring_locked(r);
  if (recording() && !cfg_.aggregation) return "the process traces in full already";
  attach_.user_on = writer_ ? user_on_ : false;  // no writer: it was off, it goes back off
  create_writer_locked();
  attach_.until_ns = r.for_ns ? mono_ns() + r.for_ns : 0;
  attach_.steps_left = attach_.steps = r.steps;
  attach_.for_ns = r.for_ns;
  attach_.inherited = false;
  attach_.after = r.for_ns ? duration_text(r.for_ns) : std::to_string(r.steps) + " steps";
  attach_.level = r.level;
  attach_.what =
      r.level + " tracing for " + attach_.after + (r.for_ns ? "" : " from the next step");
  if (r.steps) {
    attach_.pending = true;  // whole steps: it opens at the next dftrace_step
  } else {
    attach_switch_locked(true);
  }
  log(log_level::info, "attach: %s", attach_.what.c_str());
  return "";
}

std::string runtime::attach_ring_locked(const attach_request &r) {
  // The flight recorder's window: the ring (the time before), then full detail for the window
  // (for T, or the step in progress and N whole steps), then the ring again; no state of the
  // window here, the writer holds it as it holds a trigger's (trigger_end says its end).
  if (r.level != "full")
    return "--level " + r.level +
           ": a process in ring mode records every event already (use "
           "--level full)";
  if (!recording() || !writer_ || !writer_->ring_on())
    return "the process is in ring mode but not recording (its ring is empty)";
  const std::string after = r.for_ns ? duration_text(r.for_ns) : std::to_string(r.steps) + " steps";
  const std::string reason = "dftrace attach: the ring, then full tracing for " + after;
  if (!writer_->trigger("attach", reason, mono_ns(), r.for_ns / 1e9, after))
    return "a trigger was taken less than trigger.min_gap ago";
  hold_steps_left_ = r.steps ? r.steps + 1 : 0;  // the release at the end of the N-th whole step
  attach_.what = "the ring, then full tracing for " + after;
  log(log_level::info, "attach: %s", attach_.what.c_str());
  return "";
}

void runtime::attach_switch_locked(bool on) {
  if (on) {
    attach_.open = true;
    if (!attach_.inherited) ++attach_.gen;
    // (the events' clock; a window handed over to begins where the one before ended)
    attach_.start_ns = attach_.handover ? attach_.end_ns : ticks().to_ns(tick_now());
    const std::vector<std::string> cats = level_categories(attach_.level);
    if (cats.empty()) {  // full: every event, nothing folded
      if (cfg_.aggregation) tree_.set_aggregation(false, {});
    } else if (recording()) {  // aggregating: the level's categories in full, the rest folded
      auto rules = cfg_.aggregation_rules;
      for (const std::string &c : cats) rules.emplace_back(c, false);
      tree_.set_aggregation(cfg_.aggregation_full, std::move(rules));
    } else {  // off: the level's categories only
      tree_.set_scope(cats);
    }
    user_on_ = true;
    gate_ = true;
  } else {
    attach_.open = false;
    user_on_ = attach_.user_on;
    gate_ = schedule_.records(step_.load());
    tree_.set_scope({});
    if (cfg_.aggregation) tree_.set_aggregation(cfg_.aggregation_full, cfg_.aggregation_rules);
  }
  apply_recording_locked();
  // The window's end, read once recording is off for every thread (an event begun while it
  // was on began at `to` or before, as at `from` or after) and before the children are told
  // (a child's window ends after its parent's).
  if (!on) attach_.end_ns = ticks().to_ns(tick_now_ordered());
  if (!on && !user_on_) disabled_reason_ = "waiting for dftrace attach";
  publish_schedule_locked();  // forked children follow (follow_window_locked)
  window_changed_locked();
}

window_state runtime::window_locked() const {
  return {attach_.open,
          level_code(attach_.level),
          static_cast<uint32_t>(pid_),
          attach_.gen,
          attach_.for_ns,
          attach_.steps};
}

void runtime::follow_window_locked(const window_state &w) {
  if (cfg_.ring) return follow_window_ring_locked(w);
  // Only a window of the parent's is closed here; one asked of this process is its own.
  if (attach_.open && attach_.inherited && (!w.open || w.gen != attach_.followed))
    attach_close_locked("as the parent's window ended");
  if (!w.open || attach_.open || attach_.pending || w.gen == attach_.followed) return;
  attach_.followed = w.gen;
  // It traces in full by itself (not as its own window is handed over, still recording)
  if (recording() && !cfg_.aggregation && !attach_.handover) return;
  attach_.user_on = writer_ ? user_on_ : false;
  create_writer_locked();
  attach_.until_ns = attach_.steps_left = 0;  // the parent's time or steps end it
  attach_.steps = w.steps;
  attach_.for_ns = w.for_ns;
  const bool ring = w.gen & k_ring_window;
  attach_.after = ring       ? std::string("the parent's full detail")
                  : w.for_ns ? duration_text(w.for_ns)
                             : std::to_string(w.steps) + " steps";
  attach_.level = k_levels[w.level < 3 ? w.level : 0];
  attach_.what =
      attach_.level + " tracing for " + attach_.after +
      (ring ? ", after a trigger of the parent (pid " : ", the window of the parent (pid ") +
      std::to_string(w.pid) + ")";
  attach_.inherited = true;
  attach_switch_locked(true);
  log(log_level::info, "attach: %s", attach_.what.c_str());
}

void runtime::follow_window_ring_locked(const window_state &w) {
  // In ring mode the parent's window is a trigger here: this process's ring (the time before
  // it), then full detail until the parent's window closes. The writer keeps it apart from this
  // process's own window (its own trigger, attach or ring.after): each ends by itself.
  if (ring_followed_open_ && (!w.open || w.gen != ring_followed_)) {
    ring_followed_open_ = false;
    if (writer_) writer_->ring_release(true);
  }
  if (!w.open || w.gen == ring_followed_) return;
  ring_followed_ = w.gen;
  if (!writer_ || !writer_->ring_on() || !recording()) return;
  const std::string what = w.gen & k_ring_window ? "a trigger of the parent (pid "
                                                 : "an attach window of the parent (pid ";
  ring_followed_open_ = writer_->trigger("parent", what + std::to_string(w.pid) + ")", mono_ns(), 0,
                                         "the parent's window", true);
}

int runtime::attach_wants(std::string_view category) {
  if (!initialized_.load() && !exit_begun()) init(nullptr);
  std::lock_guard<std::mutex> lock(init_mutex_);
  if (!cfg_.attach || cfg_.ring || !initialized_.load()) return 1;
  if (!user_on_ || !writer_) return 0;             // waiting, off: no window open
  if (!attach_.open || attach_.user_on) return 1;  // it records by itself (aggregates, or on)
  const std::vector<std::string> cats = level_categories(attach_.level);
  return cats.empty() || std::find(cats.begin(), cats.end(), category) != cats.end();
}

int runtime::on_window(void (*fn)(void *), void *user) {
  std::lock_guard<std::mutex> lock(init_mutex_);  // no call of the old one is running after
  window_fn_ = fn;
  window_user_ = user;
  return 0;
}

void runtime::attach_step_locked() {
  if (attach_.open && attach_.inherited) return;  // the parent's steps count it
  if (attach_.pending) {
    attach_.pending = false;
    attach_switch_locked(true);
  } else if (attach_.open && attach_.steps_left && --attach_.steps_left == 0) {
    attach_close_locked("after its steps");
  }
}

void runtime::attach_close_locked(std::string_view how) {
  if (attach_.pending) attach_.pending = false;  // never opened: nothing to say
  if (!attach_.open) return;
  attach_switch_locked(false);
  trigger_fields t;
  t.source = "attach";
  const std::string reason = "dftrace attach: " + attach_.what + "; ended " + std::string(how);
  t.reason = reason;
  t.after = attach_.after;
  t.mono_ns = t.from_ns = attach_.start_ns;
  t.to_ns = attach_.end_ns;
  char buf[2048];
  if (!writer_) return;
  if (const size_t n = trigger_line_into(line_fmt(), t, buf, sizeof buf))
    writer_->push_meta(std::string_view(buf, n));
  writer_->flush();
}

}  // namespace dftrace::detail
