// proc_stats.cpp: parsers and readers of /proc's process and node files (proc_stats.hpp).
#include "telemetry/proc_stats.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dftrace::detail::telemetry {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t'; }

// The unsigned decimal at the start of `s` (after blanks), and the rest after it.
bool take_u64(std::string_view &s, uint64_t *out) {
  size_t i = 0;
  while (i < s.size() && is_space(s[i])) ++i;
  if (i == s.size() || s[i] < '0' || s[i] > '9') return false;
  uint64_t v = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i)
    v = v * 10 + static_cast<uint64_t>(s[i] - '0');
  *out = v;
  s.remove_prefix(i);
  return true;
}

// Calls f(line) for each line of text.
template <typename F>
void for_each_line(std::string_view text, F f) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    f(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

// "Key:   123 kB" -> true and 123 (times 1024 when `kb_to_bytes` and the unit is kB).
bool field_value(std::string_view line, std::string_view key, uint64_t *out, bool kb_to_bytes) {
  if (line.size() <= key.size() || line.compare(0, key.size(), key) != 0 || line[key.size()] != ':')
    return false;
  std::string_view rest = line.substr(key.size() + 1);
  if (!take_u64(rest, out)) return false;
  if (kb_to_bytes && rest.find("kB") != std::string_view::npos) *out *= 1024;
  return true;
}

// A partition of `disk` (sda1 of sda, nvme0n1p1 of nvme0n1, mmcblk0p1 of mmcblk0).
bool partition_of(std::string_view name, std::string_view disk) {
  if (name.size() <= disk.size() || name.compare(0, disk.size(), disk) != 0) return false;
  std::string_view tail = name.substr(disk.size());
  if (tail[0] == 'p' && tail.size() > 1) tail.remove_prefix(1);
  for (char c : tail)
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace

bool utilisation(const cpu_times &before, const cpu_times &after, cpu_utilisation *out) {
  if (after.total() <= before.total()) return false;
  const double all = static_cast<double>(after.total() - before.total());
  auto pct = [all](uint64_t b, uint64_t a) {
    return a > b ? 100.0 * static_cast<double>(a - b) / all : 0.0;
  };
  out->user_pct = pct(before.user + before.nice, after.user + after.nice);
  out->system_pct =
      pct(before.system + before.irq + before.softirq, after.system + after.irq + after.softirq);
  out->idle_pct = pct(before.idle, after.idle);
  out->iowait_pct = pct(before.iowait, after.iowait);
  out->busy_pct = 100.0 - out->idle_pct - out->iowait_pct;
  if (out->busy_pct < 0) out->busy_pct = 0;
  return true;
}

bool parse_process_stat(std::string_view text, process_sample *out) {
  // "pid (comm) state ppid ...": comm may hold blanks and parentheses, so fields are counted
  // from the last ')'. utime and stime are fields 14 and 15, i.e. the 12th and 13th after it.
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos) return false;
  std::string_view s = text.substr(close + 1);
  size_t i = 0;
  while (i < s.size() && is_space(s[i])) ++i;
  if (i == s.size()) return false;
  s.remove_prefix(i);
  for (int skip = 0; skip < 11; ++skip) {  // state, ppid ... cmajflt
    const size_t sp = s.find(' ');
    if (sp == std::string_view::npos) return false;
    s.remove_prefix(sp + 1);
  }
  uint64_t user = 0, system = 0;
  if (!take_u64(s, &user) || !take_u64(s, &system)) return false;
  out->user_ticks = user;
  out->system_ticks = system;
  out->has_stat = true;
  return true;
}

bool parse_process_status(std::string_view text, process_sample *out) {
  int found = 0;
  for_each_line(text, [&](std::string_view line) {
    found += field_value(line, "VmRSS", &out->rss_bytes, true);
    found += field_value(line, "VmHWM", &out->peak_rss_bytes, true);
    found += field_value(line, "Threads", &out->threads, false);
    found += field_value(line, "voluntary_ctxt_switches", &out->voluntary_switches, false);
    found += field_value(line, "nonvoluntary_ctxt_switches", &out->involuntary_switches, false);
  });
  // A kernel thread has no VmRSS; Threads is always there.
  if (found == 0) return false;
  out->has_status = true;
  return true;
}

bool parse_process_io(std::string_view text, process_sample *out) {
  int found = 0;
  for_each_line(text, [&](std::string_view line) {
    found += field_value(line, "rchar", &out->rchar, false);
    found += field_value(line, "wchar", &out->wchar, false);
    found += field_value(line, "read_bytes", &out->read_bytes, false);
    found += field_value(line, "write_bytes", &out->write_bytes, false);
  });
  if (found == 0) return false;
  out->has_io = true;
  return true;
}

bool parse_cpu_times(std::string_view text, cpu_times *out) {
  if (text.size() < 4 || text.compare(0, 4, "cpu ") != 0) return false;
  std::string_view s = text.substr(4);
  cpu_times t;
  uint64_t *fields[] = {&t.user,   &t.nice, &t.system,  &t.idle,
                        &t.iowait, &t.irq,  &t.softirq, &t.steal};
  for (int k = 0; k < 4; ++k)  // user nice system idle: every kernel has them
    if (!take_u64(s, fields[k])) return false;
  for (int k = 4; k < 8; ++k)
    if (!take_u64(s, fields[k])) break;
  *out = t;
  return true;
}

bool parse_meminfo(std::string_view text, memory_info *out) {
  memory_info m;
  bool total = false, available = false;
  for_each_line(text, [&](std::string_view line) {
    total |= field_value(line, "MemTotal", &m.total_kb, false);
    available |= field_value(line, "MemAvailable", &m.available_kb, false);
  });
  if (!total || !available) return false;
  *out = m;
  return true;
}

bool parse_net_dev(std::string_view text, std::vector<device_bytes> *out) {
  out->clear();
  bool header = false;
  for_each_line(text, [&](std::string_view line) {
    const size_t colon = line.find(':');
    if (line.find('|') != std::string_view::npos) {
      header = true;
      return;
    }
    if (colon == std::string_view::npos) return;
    std::string_view name = line.substr(0, colon);
    while (!name.empty() && is_space(name.front())) name.remove_prefix(1);
    std::string_view rest = line.substr(colon + 1);
    uint64_t v[9];
    for (uint64_t &x : v)
      if (!take_u64(rest, &x)) return;
    if (name == "lo") return;
    out->push_back({std::string(name), v[0], v[8]});  // receive bytes; transmit bytes (9th)
  });
  return header;
}

bool parse_diskstats(std::string_view text, std::vector<device_bytes> *out) {
  out->clear();
  bool any = false;
  for_each_line(text, [&](std::string_view line) {
    // major minor name reads merged sectors_read ms writes merged sectors_written ...
    uint64_t major = 0, minor = 0, f[7];
    std::string_view s = line;
    if (!take_u64(s, &major) || !take_u64(s, &minor)) return;
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    const size_t sp = s.find(' ');
    if (sp == std::string_view::npos) return;
    const std::string_view name = s.substr(0, sp);
    s.remove_prefix(sp);
    for (uint64_t &x : f)
      if (!take_u64(s, &x)) return;
    any = true;
    for (const char *skip : {"loop", "ram", "zram"})
      if (name.compare(0, std::strlen(skip), skip) == 0) return;
    for (const device_bytes &d : *out)
      if (partition_of(name, d.name)) return;
    out->push_back({std::string(name), f[2] * 512, f[6] * 512});
  });
  return any;
}

bool read_text(const char *path, std::string *buf) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  if (buf->capacity() < 4096) buf->reserve(4096);
  buf->resize(buf->capacity());
  size_t len = 0;
  for (;;) {
    if (len == buf->size()) {
      if (buf->size() >= (size_t{1} << 22)) break;  // 4 MiB: no /proc file read here is larger
      buf->resize(buf->size() * 2);
    }
    const ssize_t n = ::read(fd, &(*buf)[len], buf->size() - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += static_cast<size_t>(n);
  }
  ::close(fd);
  buf->resize(len);
  return len > 0;
}

bool proc_reader::load(std::string_view rel) {
  path_.assign(root_).append("/").append(rel);
  return read_text(path_.c_str(), &text_);
}

bool proc_reader::process(std::string_view pid, process_sample *out) {
  *out = process_sample();
  const std::string dir = std::string(pid) + "/";
  bool any = false;
  if (load(dir + "stat")) any |= parse_process_stat(text_, out);
  if (load(dir + "status")) any |= parse_process_status(text_, out);
  if (load(dir + "io")) any |= parse_process_io(text_, out);
  path_.assign(root_).append("/").append(dir).append("fd");
  if (DIR *d = ::opendir(path_.c_str())) {
    uint64_t n = 0;
    while (const dirent *e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
    // Less the one opendir holds, which the live folder lists too.
    out->open_fds = n > 0 && pid == "self" && root_ == "/proc" ? n - 1 : n;
  }
  return any;
}

bool proc_reader::cpu(cpu_times *out) { return load("stat") && parse_cpu_times(text_, out); }
bool proc_reader::memory(memory_info *out) { return load("meminfo") && parse_meminfo(text_, out); }
bool proc_reader::network(std::vector<device_bytes> *out) {
  return load("net/dev") && parse_net_dev(text_, out);
}
bool proc_reader::disks(std::vector<device_bytes> *out) {
  return load("diskstats") && parse_diskstats(text_, out);
}

}  // namespace dftrace::detail::telemetry
