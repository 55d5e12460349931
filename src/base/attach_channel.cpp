// attach_channel.cpp: the private directory and the files of `dftrace attach`.
#include "base/attach_channel.hpp"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

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

}  // namespace dftrace::detail
