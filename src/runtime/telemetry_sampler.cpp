// telemetry_sampler.cpp: the sampling thread of `telemetry.interval` (telemetry_sampler.hpp).
#include "runtime/telemetry_sampler.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <vector>

#include "base/attach_channel.hpp"
#include "base/format.hpp"
#include "base/held_fds.hpp"
#include "base/log.hpp"
#include "base/thread_role.hpp"
#include "config/config.hpp"
#include "runtime/runtime.hpp"
#include "telemetry/nvml.hpp"
#include "telemetry/proc_stats.hpp"

namespace dftrace::detail {

namespace {

using namespace telemetry;

// The thread's control, shared with start/stop/fork. Made once and never freed: a thread still
// waiting when the process exits without finalize must not see it destroyed.
struct control {
  pthread_mutex_t life;  // start, stop and fork one at a time
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread{};
  bool running = false, stop = false;
  double interval_s = 0;
  std::string lock_path;
  // The node lock, held (at a high number) while this process writes the node's counters; its
  // generation, 0 when none is held. Given up when the program meets EMFILE: the process stays
  // the node's writer, its record in the file keeping the others off while it lives.
  held_fd *lock = new held_fd();
  uint64_t lock_gen = 0;
  bool owner_without_lock = false;
  void init_sync() {
    pthread_mutex_init(&life, nullptr);
    pthread_mutex_init(&mu, nullptr);
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&cv, &a);
    pthread_condattr_destroy(&a);
  }
};

control &ctl() {
  static control *c = [] {
    auto *p = new control();
    p->init_sync();
    return p;
  }();
  return *c;
}

double mono_s() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// JSON object members of one counter line.
class members {
 public:
  void clear() { s_.clear(); }
  members &num(const char *key, uint64_t v) {
    char b[24];
    return raw(key, std::string_view(b, static_cast<size_t>(write_u64(b, v) - b)));
  }
  members &num(const char *key, double v) {
    char b[32];
    v = std::round(v * 1000) / 1000;  // a millionth of a percent is noise
    return raw(key, std::string_view(b, static_cast<size_t>(write_double(b, v) - b)));
  }
  const std::string &text() const { return s_; }

 private:
  members &raw(const char *key, std::string_view value) {
    if (!s_.empty()) s_ += ',';
    s_ += '"';
    s_ += key;
    s_ += "\":";
    s_.append(value.data(), value.size());
    return *this;
  }
  std::string s_;
};

// Whether the local rank the launcher gives is 0 (or none is given): the fallback when the node
// lock can not be made (a read-only trace folder).
bool local_rank_zero() {
  for (const char *v : {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK",
                        "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "PALS_LOCAL_RANKID"}) {
    const char *s = std::getenv(v);
    if (s && *s) return std::strcmp(s, "0") == 0;
  }
  return true;
}

// What one sampling thread keeps between samples.
class sampler {
 public:
  explicit sampler(bool forked)
      : forked_(forked), tick_hz_(static_cast<double>(sysconf(_SC_CLK_TCK))) {
    tree &t = runtime::get().nodes();
    sys_ = t.category("sys");
    process_ = t.child(sys_, "process");
    cpu_ = t.child(sys_, "cpu");
    memory_ = t.child(sys_, "memory");
  }

  void sample() {
    const double now = mono_s();
    process_sample p;
    if (proc_.process("self", &p)) write_process(p, now);
    if (node_owner(now)) write_node(now);
    last_ = now;
  }

 private:
  node *named(const std::string &name) {
    node *&n = named_[name];
    if (!n) n = runtime::get().nodes().child(sys_, name);
    return n;
  }

  void write_process(const process_sample &p, double now) {
    m_.clear();
    if (p.has_stat) {
      m_.num("cpu_user_s", static_cast<double>(p.user_ticks) / tick_hz_)
          .num("cpu_system_s", static_cast<double>(p.system_ticks) / tick_hz_);
      const uint64_t ticks = p.user_ticks + p.system_ticks;
      if (last_ > 0 && now > last_ && ticks >= last_ticks_)
        m_.num("cpu_pct",
               100.0 * static_cast<double>(ticks - last_ticks_) / tick_hz_ / (now - last_));
      last_ticks_ = ticks;
    }
    if (p.has_status)
      m_.num("rss_bytes", p.rss_bytes)
          .num("peak_rss_bytes", p.peak_rss_bytes)
          .num("ctx_voluntary", p.voluntary_switches)
          .num("ctx_involuntary", p.involuntary_switches)
          .num("threads", p.threads);
    if (p.has_io)
      m_.num("read_bytes", p.read_bytes)
          .num("write_bytes", p.write_bytes)
          .num("rchar", p.rchar)
          .num("wchar", p.wchar);
    m_.num("open_fds", p.open_fds);
    runtime::get().counter_members(process_, m_.text());
  }

  // True while this process holds the node's lock, or held it and gave its descriptor up
  // (tried again about every second, so that a later process takes over when the holder ends).
  bool node_owner(double now) {
    control &c = ctl();
    if (c.owner_without_lock) return true;
    if (c.lock_gen) {
      if (c.lock->use(c.lock_gen, [](int) {})) return true;
      c.owner_without_lock = true;  // given up: the program needed every number
      return true;
    }
    if (now - lock_tried_ < 1.0) return owner_by_rank_;
    lock_tried_ = now;
    const int fd = ::open(c.lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      // No lock to be had here: the lowest local rank writes them (never a forked child).
      owner_by_rank_ = !forked_ && local_rank_zero();
      log_once(log_level::info, "telemetry-lock",
               "telemetry: the node lock %s could not be made; node counters from %s",
               c.lock_path.c_str(), owner_by_rank_ ? "this process" : "local rank 0");
      return owner_by_rank_;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0 || another_owner_lives(fd) || !claim(fd)) {
      ::close(fd);
      return false;
    }
    c.lock_gen = c.lock->hold(fd);
    if (!c.lock_gen) return false;
    gpu_open_ = gpu_.open();
    if (!gpu_open_)
      log_once(log_level::info, "telemetry-nvml", "telemetry: no GPU counters (%s)",
               gpu_.why().c_str());
    return true;
  }

  // The lock file names the process writing the node's counters ("PID START\n", its start
  // time telling a reused pid apart): one that gave its descriptor up still does, while it lives.
  static bool another_owner_lives(int fd) {
    char buf[64] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    long pid = 0;
    unsigned long long start = 0;
    if (n <= 0 || std::sscanf(buf, "%ld %llu", &pid, &start) != 2 || pid <= 0) return false;
    if (pid == static_cast<long>(::getpid())) return false;
    return process_start_ticks(static_cast<pid_t>(pid)) == start;
  }
  static bool claim(int fd) {
    char buf[64];
    const pid_t pid = ::getpid();
    const int n = std::snprintf(buf, sizeof buf, "%ld %llu\n", static_cast<long>(pid),
                                static_cast<unsigned long long>(process_start_ticks(pid)));
    return ::ftruncate(fd, 0) == 0 && ::pwrite(fd, buf, static_cast<size_t>(n), 0) == n;
  }

  void write_node(double now) {
    cpu_times ct;
    if (proc_.cpu(&ct)) {
      cpu_utilisation u;
      if (have_cpu_ && utilisation(cpu_before_, ct, &u)) {
        m_.clear();
        m_.num("user_pct", u.user_pct)
            .num("system_pct", u.system_pct)
            .num("idle_pct", u.idle_pct)
            .num("iowait_pct", u.iowait_pct)
            .num("busy_pct", u.busy_pct);
        runtime::get().counter_members(cpu_, m_.text());
      }
      cpu_before_ = ct;
      have_cpu_ = true;
    }
    memory_info mi;
    if (proc_.memory(&mi)) {
      m_.clear();
      m_.num("MemAvailable", mi.available_kb).num("MemTotal", mi.total_kb);
      runtime::get().counter_members(memory_, m_.text());
    }
    if (proc_.network(&devices_))
      write_deltas(devices_, "net-", "bytes_recv", "bytes_sent", &net_before_);
    if (proc_.disks(&devices_))
      write_deltas(devices_, "disk-", "bytes_read", "bytes_written", &disk_before_);
    if (gpu_open_ && gpu_.sample(&gpus_)) {
      for (const gpu_sample &g : gpus_) {
        m_.clear();
        m_.num("util_pct", static_cast<uint64_t>(g.util_pct))
            .num("memory_util_pct", static_cast<uint64_t>(g.memory_util_pct))
            .num("memory_used_bytes", g.memory_used_bytes)
            .num("memory_total_bytes", g.memory_total_bytes);
        runtime::get().counter_members(named("gpu-" + std::to_string(g.index)), m_.text());
      }
    }
    (void)now;
  }

  // Bytes in and out of each device since the previous sample (none at the first).
  void write_deltas(const std::vector<device_bytes> &now, const char *prefix, const char *in,
                    const char *out, std::map<std::string, device_bytes> *before) {
    for (const device_bytes &d : now) {
      auto it = before->find(d.name);
      if (it != before->end() && d.in >= it->second.in && d.out >= it->second.out) {
        m_.clear();
        m_.num(in, d.in - it->second.in).num(out, d.out - it->second.out);
        runtime::get().counter_members(named(prefix + d.name), m_.text());
      }
      (*before)[d.name] = d;
    }
  }

  const bool forked_;
  const double tick_hz_;
  proc_reader proc_;
  members m_;
  node *sys_, *process_, *cpu_, *memory_;
  std::map<std::string, node *> named_;
  double last_ = 0, lock_tried_ = -10;
  uint64_t last_ticks_ = 0;
  bool owner_by_rank_ = false, have_cpu_ = false, gpu_open_ = false;
  cpu_times cpu_before_;
  std::vector<device_bytes> devices_;
  std::map<std::string, device_bytes> net_before_, disk_before_;
  nvml_probe gpu_;
  std::vector<gpu_sample> gpus_;
};

bool g_forked = false;  // this process is a forked child of a sampling one

void *thread_main(void *) {
  ++t_internal_thread;  // its reads are dftrace's, never the application's I/O
  pthread_setname_np(pthread_self(), "dftrace-telem");  // findable (bench/telemetry_cost.sh)
  control &c = ctl();
  sampler *s = new (std::nothrow) sampler(g_forked);
  if (!s) return nullptr;
  timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  const auto step_ns = static_cast<int64_t>(c.interval_s * 1e9);
  for (;;) {
    if (runtime::exit_begun()) break;  // exit without finalize: the trace is the writer's now
    try {
      const momentary_fds reading;  // its /proc files (and the node lock's file)
      s->sample();
    } catch (...) {  // out of memory: this sample is lost, the next one tries again
    }
    // The next multiple of the interval from the start; one that already passed is skipped.
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    const int64_t now_ns = now.tv_sec * 1000000000LL + now.tv_nsec;
    int64_t next_ns = next.tv_sec * 1000000000LL + next.tv_nsec + step_ns;
    if (next_ns <= now_ns) next_ns = now_ns + step_ns - (now_ns - next_ns) % step_ns;
    next.tv_sec = next_ns / 1000000000LL;
    next.tv_nsec = next_ns % 1000000000LL;
    pthread_mutex_lock(&c.mu);
    while (!c.stop && pthread_cond_timedwait(&c.cv, &c.mu, &next) == 0) {
    }
    const bool stop = c.stop;
    pthread_mutex_unlock(&c.mu);
    if (stop) {
      try {
        const momentary_fds reading;
        s->sample();  // the state at the end
      } catch (...) {
      }
      break;
    }
  }
  delete s;
  return nullptr;
}

void start_thread(control &c) {
  c.stop = false;
  async_signals_blocked quiet;  // the application's handlers never run on this thread
  c.running = pthread_create(&c.thread, nullptr, thread_main, nullptr) == 0;
  if (!c.running) log(log_level::warn, "telemetry: the sampling thread could not start");
}

}  // namespace

std::string telemetry_lock_path(const config &cfg, const std::string &host) {
  std::string base = cfg.output_prefix;
  if (!cfg.output_file.empty()) {
    const size_t slash = cfg.output_file.rfind('/');
    base = (slash == std::string::npos ? std::string(".") : cfg.output_file.substr(0, slash)) +
           "/dftrace";
  }
  return base + "-" + host + ".telemetry.lock";
}

void telemetry_start(double interval_s, const std::string &lock_path) {
  control &c = ctl();
  if (interval_s <= 0) return;
  pthread_mutex_lock(&c.life);
  if (!c.running) {
    c.interval_s = interval_s;
    c.lock_path = lock_path;
    start_thread(c);
  }
  pthread_mutex_unlock(&c.life);
}

void telemetry_stop() {
  control &c = ctl();
  pthread_mutex_lock(&c.life);
  if (c.running) {
    pthread_mutex_lock(&c.mu);
    c.stop = true;
    pthread_cond_signal(&c.cv);
    pthread_mutex_unlock(&c.mu);
    pthread_join(c.thread, nullptr);
    c.running = false;
  }
  if (c.lock_gen) {
    c.lock->use(c.lock_gen, [](int fd) { (void)::ftruncate(fd, 0); });  // (no owner named)
    c.lock->close(c.lock_gen);  // another process of the node may take the node's counters over
    c.lock_gen = 0;
  }
  c.owner_without_lock = false;
  pthread_mutex_unlock(&c.life);
}

void telemetry_fork_child() {
  control &c = ctl();
  c.init_sync();   // the parent's thread may have held them: they are made anew
  c.lock_gen = 0;  // the parent's lock stays the parent's (held_fds_fork_child closed the copy)
  c.owner_without_lock = false;
  const bool was = c.running;
  c.running = false;
  if (!was) return;
  g_forked = true;
  start_thread(c);
}

}  // namespace dftrace::detail
