// process.cpp: who the process is (pid, host, program, command line, rank), its clock offset,
// and the trace's header and path made from them.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "base/format.hpp"
#include "base/hash.hpp"
#include "base/log.hpp"
#include "base/thread_role.hpp"
#include "dftrace/dftrace.h"
#include "runtime/command_line.hpp"
#include "runtime/runtime.hpp"
#include "topology/topology.hpp"
#include "writer/event_rules.hpp"

namespace dftrace::detail {

namespace {

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

std::string base_name(const std::string &p) {
  auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// The program's name as the trace's file and header give it: exec_name when configured, else
// the executable's base name (for Python, the script's), without ".py", as one file-name word.
std::string program_name(const std::vector<std::string> &argv, const std::string &configured) {
  std::string exec = configured;
  if (exec.empty() && !argv.empty()) {
    exec = base_name(argv[0]);
    if (exec.rfind("python", 0) == 0) {
      for (size_t i = 1; i < argv.size(); ++i) {
        if (argv[i].empty() || argv[i][0] == '-') {
          if (argv[i] == "-m" || argv[i] == "-c") break;
          continue;
        }
        exec = base_name(argv[i]);
        break;
      }
    }
  }
  if (exec.size() > 3 && exec.compare(exec.size() - 3, 3, ".py") == 0) exec.resize(exec.size() - 3);
  for (char &c : exec)
    if (c == '/' || c == ' ' || static_cast<unsigned char>(c) < 0x20) c = '_';
  if (exec.empty()) exec = "unknown";
  return exec;
}

}  // namespace

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

void runtime::identify_process() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "unknown");
  host_ = host;
  host_hash_ = dftracer_hash(host_);
  hhash_field_ = cfg_.metadata ? hhash_member(host_hash_) : std::string();
  // The command line as output.cmdline and output.redact allow.
  const std::vector<std::string> argv = process_arguments();
  cmdline_ = recorded_command_line(argv, cfg_.cmdline, cfg_.redact);
  exec_ = program_name(argv, cfg_.exec_name);
}

void runtime::define_header_hashes_locked() {
  defined_[DFTRACE_HASH_HOST].add(host_, host_hash_);
  defined_[DFTRACE_HASH_STRING].add(cmdline_, dftracer_hash(cmdline_));
  defined_[DFTRACE_HASH_STRING].add(exec_, dftracer_hash(exec_));
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
    thread_state &ts = calling_thread();
    if (ts.w)
      ts.w->push_meta(name_line(line_fmt(), alloc_global_id(), "process_name", pid_,
                                "rank " + std::to_string(rank)));
  }
  if (writer_) writer_->relocate(path_from_config(), header_text());
  return DFTRACE_OK;
}

int runtime::set_process_identity(const char *exec_name, long parent_pid) {
  lifecycle_scope own_work;
  bool named = false, parented = false;
  {
    std::lock_guard<std::mutex> lock(init_mutex_);
    if (!initialized_.load()) return DFTRACE_ERR_STATE;
    named = exec_name && *exec_name && exec_ != exec_name;
    parented = parent_pid > 0 && ppid_ != static_cast<pid_t>(parent_pid);
    if (!named && !parented) return DFTRACE_OK;
    if (named) {
      exec_ = exec_name;
      std::lock_guard<std::mutex> hl(hash_mutex_);
      define_header_hashes_locked();
    }
    if (parented) ppid_ = static_cast<pid_t>(parent_pid);
    // Not created yet (the usual case: the file is made at the first flush): its header says
    // the new name and parent. Created: renamed, and PR lines say them after the start event.
    if (!writer_ || writer_->relocate(path_from_config(), header_text())) return DFTRACE_OK;
  }
  if (named) {
    metadata_line("SH", exec_, std::to_string(dftracer_hash(exec_)), true);
    metadata_line("PR", "exec", json_quote(exec_), true);
  }
  if (parented) metadata_line("PR", "ppid", std::to_string(parent_pid), true);
  return DFTRACE_OK;
}

// ---------------------------------------------------------------- header and footer

std::string runtime::path_from_config() {
  if (!cfg_.output_file.empty()) return cfg_.output_file;
  std::string p = cfg_.output_prefix;  // never empty (config_values.cpp)
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

}  // namespace dftrace::detail
