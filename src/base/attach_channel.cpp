// attach_channel.cpp: the private directory and the files of `dftrace attach`.
#include "base/attach_channel.hpp"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <dirent.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dftrace::detail {

std::string attach_dir_path(const std::string &configured) {
  if (!configured.empty()) return configured;
  return "/tmp/dftrace-attach-" + std::to_string(geteuid());
}

bool attach_dir_ready(const std::string &dir, bool create, std::string *why) {
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT || !create) {
      *why = dir + ": " + strerror(errno);
      return false;
    }
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      *why = dir + ": can not make it: " + strerror(errno);
      return false;
    }
    if (lstat(dir.c_str(), &st) != 0) {
      *why = dir + ": " + strerror(errno);
      return false;
    }
  }
  if (S_ISLNK(st.st_mode)) {
    *why = dir + " is a symbolic link; refused";
  } else if (!S_ISDIR(st.st_mode)) {
    *why = dir + " is not a directory; refused";
  } else if (st.st_uid != geteuid()) {
    *why = dir + " belongs to another user (uid " + std::to_string(st.st_uid) + "); refused";
  } else if (st.st_mode & 077) {
    char m[16];
    std::snprintf(m, sizeof m, "%03o", static_cast<unsigned>(st.st_mode & 0777));
    *why = dir + " has mode " + m + ", not 0700; refused";
  } else {
    return true;
  }
  return false;
}

std::string attach_request_text(const attach_request &r) {
  return "dftrace-attach 1\nfor " + std::to_string(r.for_ns) + "\nsteps " +
         std::to_string(r.steps) + "\nlevel " + r.level + "\n";
}

namespace {
bool parse_count(std::string_view v, uint64_t *out) {
  if (v.empty() || v.size() > 19) return false;
  uint64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = n;
  return true;
}
}  // namespace

bool parse_attach_request(std::string_view text, attach_request *r, std::string *why) {
  attach_request out;
  bool first = true, any_for = false, any_steps = false;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    if (nl == std::string_view::npos) {
      *why = "the last line has no end (a partial request)";
      return false;
    }
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    if (first) {
      if (line != "dftrace-attach 1") {
        *why = "it does not begin with \"dftrace-attach 1\"";
        return false;
      }
      first = false;
      continue;
    }
    const size_t sp = line.find(' ');
    const std::string_view key = line.substr(0, sp);
    const std::string_view value =
        sp == std::string_view::npos ? std::string_view() : line.substr(sp + 1);
    if (key == "for" && !any_for && parse_count(value, &out.for_ns)) {
      any_for = true;
    } else if (key == "steps" && !any_steps && parse_count(value, &out.steps)) {
      any_steps = true;
    } else if (key == "level" && (value == "full" || value == "io" || value == "torch")) {
      out.level = std::string(value);
    } else {
      *why = "line \"" + std::string(line.substr(0, 64)) + "\" is not understood";
      return false;
    }
  }
  if (first) {
    *why = "it is empty";
    return false;
  }
  if ((out.for_ns == 0) == (out.steps == 0)) {
    *why = "it asks for neither or both of a time and a number of steps";
    return false;
  }
  *r = out;
  return true;
}

std::string attach_absolute_dir(const std::string &dir) {
  char real[PATH_MAX];
  if (realpath(dir.c_str(), real)) return real;
  std::string out = dir;
  if (out.empty() || out[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd)) out = std::string(cwd) + "/" + out;
  }
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

uint64_t process_stat_field(pid_t pid, int field) {
  char path[64], buf[1024];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');  // the name (field 2) may hold spaces and parentheses
  for (int f = 2; f < field && p; ++f) p = strchr(p + 1, ' ');
  return p && field > 2 ? std::strtoull(p + 1, nullptr, 10) : 0;
}

uint64_t process_start_ticks(pid_t pid) { return process_stat_field(pid, 22); }

bool read_private_file(const std::string &path, size_t max, std::string *text, std::string *why) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *why = errno == ELOOP ? "it is a symbolic link" : strerror(errno);
    return false;
  }
  struct stat st;
  bool ok = false;
  if (fstat(fd, &st) != 0) {
    *why = strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    *why = "it is not a regular file";
  } else if (st.st_uid != geteuid()) {
    *why = "it belongs to another user";
  } else if (st.st_nlink != 1) {
    *why = "it has other links";
  } else if (static_cast<size_t>(st.st_size) > max) {
    *why = "it is longer than " + std::to_string(max) + " bytes";
  } else {
    text->assign(static_cast<size_t>(st.st_size), '\0');
    const ssize_t n = st.st_size ? read(fd, &(*text)[0], text->size()) : 0;
    ok = n == st.st_size;
    if (!ok) *why = "it could not be read whole";
  }
  close(fd);
  return ok;
}

bool write_private_file(const std::string &path, std::string_view text) {
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

namespace {

// The pid a channel file names ("PID.page", ...) and its kind, or 0.
pid_t channel_file(const char *name, std::string *kind) {
  char *end = nullptr;
  const long pid = std::strtol(name, &end, 10);
  if (end == name || !end || *end != '.' || pid <= 0 || pid > INT_MAX) return 0;
  const std::string k(end + 1);
  if (k != "page" && k != "ready" && k != "req" && k != "ack") return 0;
  *kind = k;
  return static_cast<pid_t>(pid);
}

// The start time a PID.page or PID.ready holds (0: none found), and the file's inode.
uint64_t recorded_start(int dfd, const char *name, const std::string &kind, pid_t pid, ino_t *ino) {
  // (system calls, never an interposer's: libdftrace_io records what the program does)
  const int fd = static_cast<int>(
      ::syscall(SYS_openat, dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0));
  if (fd < 0) return 0;
  struct stat st;
  uint64_t start = 0;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()) {
    *ino = st.st_ino;
    if (kind == "page") {
      channel_page_head h{};
      if (::syscall(SYS_pread64, fd, &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h) &&
          h.magic == k_channel_page_magic)  // (another pid's page under this name: no start)
        start = h.owner_pid == static_cast<uint64_t>(pid) ? h.owner_start : ~uint64_t{0};
    } else {
      char buf[4096];
      const ssize_t n = ::syscall(SYS_pread64, fd, buf, sizeof buf - 1, 0);
      if (n > 0) {
        buf[n] = '\0';
        const char *at = std::strstr(buf, "\nstart ");
        if (at) start = std::strtoull(at + 7, nullptr, 10);
      }
    }
  }
  ::syscall(SYS_close, fd);
  return start;
}

// `name` taken out of the channel and removed, when it is still the inode judged; a file put
// in its place in between (the process's own, new) is put back.
bool remove_judged(int dfd, const char *name, ino_t ino) {
  char aside[320];
  std::snprintf(aside, sizeof aside, "%s.sweep%d", name, static_cast<int>(getpid()));
  if (::syscall(SYS_renameat2, dfd, name, dfd, aside, 0) != 0) return false;
  struct stat st;
  if (::syscall(SYS_newfstatat, dfd, aside, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_ino == ino)
    return ::syscall(SYS_unlinkat, dfd, aside, 0) == 0;
  if (::syscall(SYS_renameat2, dfd, aside, dfd, name, RENAME_NOREPLACE) != 0)
    ::syscall(SYS_unlinkat, dfd, aside, 0);
  return false;
}

}  // namespace

size_t sweep_attach_channel(const std::string &dir) {
  const int dfd = static_cast<int>(::syscall(SYS_openat, AT_FDCWD, dir.c_str(),
                                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0));
  if (dfd < 0) return 0;
  DIR *d = fdopendir(dfd);
  if (!d) {
    close(dfd);
    return 0;
  }
  size_t removed = 0;
  while (const dirent *e = readdir(d)) {
    std::string kind;
    const pid_t pid = channel_file(e->d_name, &kind);
    if (!pid) continue;
    const uint64_t now = process_start_ticks(pid);  // 0: no such process
    ino_t ino = 0;
    bool stale = false;
    if (kind == "page" || kind == "ready") {
      const uint64_t start = recorded_start(dfd, e->d_name, kind, pid, &ino);
      stale = ino && (now == 0 || (start && start != now));
    } else if (now == 0) {
      struct stat st;
      stale = ::syscall(SYS_newfstatat, dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
              S_ISREG(st.st_mode);
      ino = st.st_ino;
    }
    if (stale && remove_judged(dfd, e->d_name, ino)) ++removed;
  }
  closedir(d);
  return removed;
}

}  // namespace dftrace::detail
