// cmd_attach.cpp: `dftrace attach PID... | --all DIR [--for T | --steps N] [--level L]`: a
// window of tracing in running processes that wait for it (attach.enable; docs/attach.md),
// through the user's private channel (base/attach_channel.hpp): a request file per process,
// then its answer. Only this user's processes; a process that does not wait (no PID.ready, or
// one left by an earlier process of that pid) is never asked.
#include <dirent.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "args.hpp"
#include "base/attach_channel.hpp"
#include "commands.hpp"
#include "config/config.hpp"

namespace dftrace::tools {

namespace {

using detail::attach_request;

constexpr int k_answer_wait_ms = 30000;  // the target's thread answers within a second

std::string channel_dir() {
  const char *d = std::getenv("DFTRACE_ATTACH_DIR");
  return detail::attach_dir_path(d ? d : "");
}

// A value of the PID.ready file ("key value" lines), or "".
std::string ready_value(const std::string &text, const std::string &key) {
  const std::string k = key + " ";
  size_t at = 0;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    const std::string line = text.substr(at, nl == std::string::npos ? nl : nl - at);
    if (line.compare(0, k.size(), k) == 0) return line.substr(k.size());
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return "";
}

// The PID.ready file of a live process (its start time matches), or false with why.
bool waiting(const std::string &dir, long pid, std::string *ready, std::string *why) {
  const std::string path = dir + "/" + std::to_string(pid) + ".ready";
  std::string err;
  if (!detail::read_private_file(path, 4096, ready, &err)) {
    *why = errno == ENOENT || err == strerror(ENOENT)
               ? "does not wait for dftrace attach (start it with DFTRACE_ATTACH=1)"
               : path + ": " + err;
    return false;
  }
  const uint64_t start = std::strtoull(ready_value(*ready, "start").c_str(), nullptr, 10);
  if (!start || start != detail::process_start_ticks(static_cast<pid_t>(pid))) {
    *why = "does not wait for dftrace attach (" + path + " is an earlier process's)";
    return false;
  }
  return true;
}

void sleep_ms(int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, nullptr);
}

// True when pid is a process of this user, else false after one line that says why not.
bool process_is_mine(long pid) {
  struct stat st;
  const std::string who = "attach: pid " + std::to_string(pid);
  if (stat(("/proc/" + std::to_string(pid)).c_str(), &st) != 0) {
    error_line(who + ": no such process");
    return false;
  }
  if (st.st_uid != geteuid()) {
    error_line(who + ": another user's process; refused (only its owner can attach to it)");
    return false;
  }
  return true;
}

// The first line of a small /proc file, "" when it can not be read.
std::string proc_line(const std::string &path) {
  std::string text, why;
  FILE *f = std::fopen(path.c_str(), "re");
  if (!f) return "";
  char buf[512];
  if (std::fgets(buf, sizeof buf, f)) text = buf;
  std::fclose(f);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// A thread's state letter (/proc/PID/task/TID/stat, field 3), or "?".
std::string thread_state(const std::string &task) {
  const std::string stat = proc_line(task + "/stat");
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() ? stat.substr(paren + 2, 1) : "?";
}

// What the channel and the process say when no answer came: whether the request was read,
// whether the process still waits, and where its thread that reads requests is. So that a
// request lost under load says where it was lost.
std::string channel_state(const std::string &base, long pid) {
  struct stat st;
  std::string s = lstat((base + ".req").c_str(), &st) == 0
                      ? "the request was not read (PID.req is still there)"
                      : "the request was read (PID.req is gone) but no answer was written";
  if (lstat((base + ".ready").c_str(), &st) != 0) s += "; PID.ready is gone";
  const std::string proc = "/proc/" + std::to_string(pid);
  if (access(proc.c_str(), F_OK) != 0) return s + "; the process has ended";
  s += "; the process is in state " + thread_state(proc);
  DIR *d = opendir((proc + "/task").c_str());
  std::string listener;
  while (d && listener.empty()) {
    const dirent *e = readdir(d);
    if (!e) break;
    const std::string task = proc + "/task/" + e->d_name;
    if (e->d_name[0] != '.' && proc_line(task + "/comm") == "dftrace-attach") {
      const std::string wchan = proc_line(task + "/wchan");
      listener = "its dftrace-attach thread (tid " + std::string(e->d_name) + ") is in state " +
                 thread_state(task) + (wchan.empty() || wchan == "0" ? "" : " in " + wchan);
    }
  }
  if (d) closedir(d);
  return s + "; " + (listener.empty() ? "it has no dftrace-attach thread" : listener);
}

// One process: 0 when its window is open (or will open at its next step), else 1 after one
// line that says why not.
int attach_pid(const std::string &dir, long pid, const attach_request &r) {
  const std::string who = "attach: pid " + std::to_string(pid);
  std::string ready, why;
  if (!waiting(dir, pid, &ready, &why)) {
    error_line(who + ": " + why);
    return 1;
  }
  const std::string base = dir + "/" + std::to_string(pid);
  unlink((base + ".ack").c_str());
  if (!detail::write_private_file(base + ".req", detail::attach_request_text(r))) {
    error_line(who + ": " + base + ".req: " + strerror(errno));
    return 1;
  }
  std::string answer;
  for (int waited = 0; waited < k_answer_wait_ms; waited += 20) {
    if (detail::read_private_file(base + ".ack", 4096, &answer, &why)) break;
    sleep_ms(20);
  }
  unlink((base + ".ack").c_str());
  if (answer.empty()) {
    const std::string state = channel_state(base, pid);
    unlink((base + ".req").c_str());
    error_line(who + ": no answer within " + std::to_string(k_answer_wait_ms / 1000) +
               " s; the request is withdrawn (" + state + ")");
    return 1;
  }
  while (!answer.empty() && answer.back() == '\n') answer.pop_back();
  if (answer.compare(0, 3, "ok ") != 0) {
    error_line(who + ": " + answer);
    return 1;
  }
  std::printf("pid %ld: %s (trace in %s)\n", pid, answer.c_str() + 3,
              ready_value(ready, "trace_dir").c_str());
  return 0;
}

// The pids that wait for dftrace attach with their traces in dir (their PID.ready says so).
std::vector<long> pids_for(const std::string &channel, const std::string &dir) {
  std::vector<long> out;
  DIR *d = opendir(channel.c_str());
  if (!d) return out;
  while (const dirent *e = readdir(d)) {
    const std::string name = e->d_name;
    const size_t dot = name.find(".ready");
    if (dot == std::string::npos || dot + 6 != name.size()) continue;
    const long pid = std::atol(name.c_str());
    std::string ready, why;
    if (pid > 0 && waiting(channel, pid, &ready, &why) && ready_value(ready, "trace_dir") == dir)
      out.push_back(pid);
  }
  closedir(d);
  return out;
}

// The window from the options; false (after one line) on bad use.
bool request_from(const args_t &a, attach_request *r) {
  if (a.has("--for") && a.has("--steps")) {
    error_line("attach: give --for or --steps, not both");
    return false;
  }
  if (a.has("--steps")) {
    const std::string s = a.get("--steps");
    char *end = nullptr;
    const unsigned long long n = std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || *end || n == 0 || s[0] == '-') {
      error_line("attach: --steps " + s + ": not a number of steps (1 or more)");
      return false;
    }
    r->steps = n;
  } else {
    const std::string s = a.get("--for", "30s");
    double sec = 0;
    if (!detail::parse_duration(s, &sec) || !(sec > 0) || sec > 7 * 86400.0) {
      error_line("attach: --for " + s + ": not a time (such as 30s, 500ms; at most a week)");
      return false;
    }
    r->for_ns = static_cast<uint64_t>(sec * 1e9);
  }
  r->level = a.get("--level", "full");
  if (r->level != "full" && r->level != "io" && r->level != "torch") {
    error_line("attach: --level " + r->level + ": not a level (full, io or torch)");
    return false;
  }
  return true;
}

}  // namespace

int cmd_attach(const args_t &a) {
  attach_request r;
  if (!request_from(a, &r)) return 2;
  if (a.has("--all") == !a.positional.empty()) {
    error_line("attach: give PIDs or --all DIR");
    return 2;
  }
  std::vector<long> pids;
  for (const std::string &p : a.positional) {
    char *end = nullptr;
    const long pid = std::strtol(p.c_str(), &end, 10);
    if (p.empty() || *end || pid <= 0) {
      error_line("attach: " + p + ": not a pid");
      return 2;
    }
    pids.push_back(pid);
  }
  // Another user's process, or none: said before the channel is looked at.
  int failed = 0, reached = 0;
  std::vector<long> mine;
  for (long pid : pids) (process_is_mine(pid) ? mine.push_back(pid) : void(++failed));
  if (!mine.empty() || a.has("--all")) {
    const std::string channel = channel_dir();
    std::string why;
    if (!detail::attach_dir_ready(channel, false, &why)) {
      error_line("attach: " + why + (errno == ENOENT ? " (no process of this user waits)" : ""));
      return 1;
    }
    detail::sweep_attach_channel(channel);  // what killed processes left
    if (a.has("--all")) {
      mine = pids_for(channel, detail::attach_absolute_dir(a.get("--all")));
      if (mine.empty()) {
        error_line("attach: no process that waits for dftrace attach writes into " +
                   a.get("--all"));
        return 1;
      }
    }
    for (long pid : mine) (attach_pid(channel, pid, r) ? failed : reached)++;
  }
  if (a.has("--all")) std::printf("%d process(es) attached\n", reached);
  return failed ? 1 : 0;
}

}  // namespace dftrace::tools
