// cmd_trigger.cpp: `dftrace trigger PID... | --all DIR`: a trigger of the flight recorder
// (output.mode: ring; docs/flight-recorder.md) in running processes, by the signal each one's
// header names (its PR trigger_signal line). A process is signalled only when it is this
// user's, has a trace file open, and that file's header says that it takes the signal: a
// process that is not traced by dftrace in ring mode (a pid reused by another program) is
// never sent a signal whose default action would end it.
#include <dirent.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "args.hpp"
#include "base/gzip_member.hpp"
#include "commands.hpp"
#include "inputs.hpp"
#include "reader/trace_reader.hpp"

namespace dftrace::tools {

namespace {

// The trace files process `pid` has open (through /proc/PID/fd: this user's processes only).
std::vector<std::string> open_traces(long pid) {
  std::vector<std::string> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR *d = opendir(dir.c_str());
  if (!d) return out;
  while (const dirent *e = readdir(d)) {
    char buf[4096];
    const ssize_t n = readlink((dir + "/" + e->d_name).c_str(), buf, sizeof buf - 1);
    if (n <= 0) continue;
    const std::string p(buf, static_cast<size_t>(n));
    const auto ends = [&p](const char *s) {
      const size_t k = strlen(s);
      return p.size() >= k && p.compare(p.size() - k, k, s) == 0;
    };
    if (ends(".pfw.gz") || ends(".pfw")) out.push_back(p);
  }
  closedir(d);
  return out;
}

// The header's text (the file's first gzip member, or the first 64 KiB of a plain trace).
std::string header_text(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::string raw(1 << 16, '\0');
  f.read(&raw[0], static_cast<std::streamsize>(raw.size()));
  raw.resize(static_cast<size_t>(f.gcount()));
  const auto *p = reinterpret_cast<const uint8_t *>(raw.data());
  detail::dt_field dt;
  if (!detail::parse_dt_field(p, raw.size(), &dt)) return raw;  // plain text
  std::string member = raw;
  if (dt.compressed_len > raw.size()) {  // a header of more than 64 KiB: read it whole
    member.resize(dt.compressed_len);
    f.clear();
    f.seekg(0);
    f.read(&member[0], dt.compressed_len);
    member.resize(static_cast<size_t>(f.gcount()));
  }
  std::unique_ptr<char[]> out;
  size_t len = 0;
  std::vector<detail::read_issue> issues;
  detail::inflate_member(reinterpret_cast<const uint8_t *>(member.data()), member.size(), dt, out,
                         &len, issues, 0);
  return out ? std::string(out.get(), len) : std::string();
}

// The signal the header's PR trigger_signal line names, or 0.
int header_signal(const std::string &header) {
  const std::string key = "\"name\":\"trigger_signal\",\"value\":\"";
  const size_t at = header.find(key);
  if (at == std::string::npos) return 0;
  const size_t b = at + key.size(), e = header.find('"', b);
  const std::string name = header.substr(b, e == std::string::npos ? 0 : e - b);
  for (int s = 1; s < NSIG; ++s) {
    const char *abbrev = sigabbrev_np(s);
    if (abbrev && name == std::string("SIG") + abbrev) return s;
  }
  return name.compare(0, 3, "SIG") == 0 ? std::atoi(name.c_str() + 3) : 0;
}

// One process: 0 when signalled, else 1 after one line that says why not.
int trigger_pid(long pid, const std::string &in_dir) {
  struct stat st;
  const std::string proc = "/proc/" + std::to_string(pid);
  if (pid <= 0 || stat(proc.c_str(), &st) != 0) {
    error_line("trigger: pid " + std::to_string(pid) + ": no such process");
    return 1;
  }
  if (st.st_uid != geteuid()) {
    error_line("trigger: pid " + std::to_string(pid) +
               ": another user's process; only its owner can trigger it");
    return 1;
  }
  for (const std::string &path : open_traces(pid)) {
    if (!in_dir.empty() && path.compare(0, in_dir.size() + 1, in_dir + "/") != 0) continue;
    const int sig = header_signal(header_text(path));
    if (!sig) continue;
    if (kill(static_cast<pid_t>(pid), sig) != 0) {
      error_line("trigger: pid " + std::to_string(pid) + ": " + strerror(errno));
      return 1;
    }
    std::printf("pid %ld: %s sent (%s)\n", pid, sigabbrev_np(sig) ? sigabbrev_np(sig) : "signal",
                path.c_str());
    return 0;
  }
  error_line("trigger: pid " + std::to_string(pid) +
             ": no trace in ring mode with a trigger signal open" +
             (in_dir.empty() ? std::string() : " in " + in_dir) + "; not signalled");
  return 1;
}

// The pids in the names of the trace files in dir ("<prefix>-<exec>[-<rank>]-<pid>-app.pfw.gz").
std::set<long> pids_in(const std::string &dir) {
  std::set<long> out;
  bool ok = true;
  for (const std::string &f : expand_inputs({dir}, &ok)) {
    const size_t app = f.rfind("-app.pfw");
    if (app == std::string::npos) continue;
    const size_t dash = f.rfind('-', app - 1);
    if (dash == std::string::npos) continue;
    const long pid = std::atol(f.c_str() + dash + 1);
    if (pid > 0) out.insert(pid);
  }
  return out;
}

}  // namespace

int cmd_trigger(const args_t &a) {
  int failed = 0;
  if (a.has("--all")) {
    char real[PATH_MAX];
    const std::string dir = a.get("--all");
    if (!realpath(dir.c_str(), real)) {
      error_line("trigger: " + dir + ": " + strerror(errno));
      return 2;
    }
    const std::set<long> pids = pids_in(real);
    int sent = 0;
    for (long pid : pids) {
      struct stat st;
      if (stat(("/proc/" + std::to_string(pid)).c_str(), &st) != 0) continue;  // ended
      if (trigger_pid(pid, real) == 0) ++sent;
    }
    std::printf("%d process(es) triggered\n", sent);
    return sent ? 0 : 1;
  }
  if (a.positional.empty()) {
    error_line("trigger: give PIDs or --all DIR");
    return 2;
  }
  for (const std::string &p : a.positional) failed |= trigger_pid(std::atol(p.c_str()), "");
  return failed;
}

}  // namespace dftrace::tools
