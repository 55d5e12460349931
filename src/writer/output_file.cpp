// output_file.cpp: creating, appending to, renaming and closing the trace file being written.
#include "writer/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

#include "base/log.hpp"

namespace dftrace::detail {

namespace {

// Creates every missing directory of the file's parent. Works in a stack buffer: it may run
// in a fatal-signal handler, where allocating is not safe.
bool make_parent_dirs(const std::string &path) {
  char buf[4096];
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return true;
  if (slash >= sizeof buf) {
    errno = ENAMETOOLONG;
    return false;
  }
  std::memcpy(buf, path.data(), slash);
  buf[slash] = '\0';
  for (size_t i = 1; i <= slash; ++i) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    const char saved = buf[i];
    buf[i] = '\0';
    if (::mkdir(buf, 0755) != 0 && errno != EEXIST) return false;
    buf[i] = saved;
  }
  return true;
}

// Creates the file only if nothing is at `path`: no symbolic link is followed and no file this
// process did not create is truncated (a link planted in a shared /tmp must not make the trace
// overwrite its target).
int create_new(const char *path) {
  return ::open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
}

// `path` with ".k" before its ".pfw" (or at its end) into buf; false when it does not fit. No
// allocation (the fatal-signal path may open the file).
bool fresh_name(const std::string &path, int k, char *buf, size_t cap) {
  const size_t slash = path.rfind('/');
  size_t cut = path.rfind(".pfw");
  if (cut == std::string::npos || (slash != std::string::npos && cut < slash)) cut = path.size();
  char num[16];
  int len = 0;
  char tmp[16];
  for (unsigned v = static_cast<unsigned>(k); v; v /= 10)
    tmp[len++] = static_cast<char>('0' + v % 10);
  for (int i = 0; i < len; ++i) num[i] = tmp[len - 1 - i];
  const size_t need = path.size() + 1 + static_cast<size_t>(len) + 1;
  if (need > cap) return false;
  std::memcpy(buf, path.data(), cut);
  buf[cut] = '.';
  std::memcpy(buf + cut + 1, num, static_cast<size_t>(len));
  std::memcpy(buf + cut + 1 + len, path.data() + cut, path.size() - cut);
  buf[need - 1] = '\0';
  return true;
}

// Renames without replacing anything at `to`; false with errno EEXIST when something is there.
bool rename_new(const char *from, const char *to) {
  if (::renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) return true;
  if (errno != EINVAL && errno != ENOSYS) return false;
  // A file system without RENAME_NOREPLACE: link (fails on EEXIST) then unlink.
  if (::link(from, to) != 0) return false;
  ::unlink(from);
  return true;
}

}  // namespace

void output_file::plan(std::string path, std::string header) {
  planned_ = std::move(path);
  header_ = std::move(header);
  std::lock_guard<std::mutex> lock(path_mutex_);
  path_.reserve(planned_.size() + 16);  // room for a fresh name: open() does not allocate
}

std::string output_file::path() const {
  std::lock_guard<std::mutex> lock(path_mutex_);
  return path_.empty() ? planned_ : path_;
}

bool output_file::open(bool quiet) {
  if (tried_) return fd_ >= 0;
  tried_ = true;
  const std::string &p = planned_;
  {
    std::lock_guard<std::mutex> lock(path_mutex_);
    path_.assign(p);  // (allocation-free when reserved by plan)
  }
  if (!make_parent_dirs(p)) {
    if (!quiet)
      log(log_level::error,
          "can not create the directory of '%s': %s; tracing continues without a file", p.c_str(),
          std::strerror(errno));
    failed_ = true;
    return false;
  }
  fd_ = create_new(p.c_str());
  if (fd_ < 0 && errno == EEXIST) {
    // Something is already there (a file from elsewhere, or a symbolic link): leave it alone and
    // take the first free name "<name>.1.pfw.gz", "<name>.2.pfw.gz", ...
    char fresh[4096];
    for (int k = 1; k < 1000; ++k) {
      if (!fresh_name(p, k, fresh, sizeof fresh)) break;
      fd_ = create_new(fresh);
      if (fd_ >= 0) {
        if (!quiet)
          log(log_level::warn,
              "'%s' already exists (a file or symbolic link this process did not create); "
              "leaving it untouched and writing '%s'",
              p.c_str(), fresh);
        std::lock_guard<std::mutex> lock(path_mutex_);
        path_.assign(fresh);
        break;
      }
      if (errno != EEXIST) break;
    }
  }
  if (fd_ < 0) {
    if (!quiet)
      log(log_level::error, "can not open '%s' for writing: %s; tracing continues without a file",
          p.c_str(), std::strerror(errno));
    failed_ = true;
    return false;
  }
  return true;
}

bool output_file::write(const char *p, size_t n) {
  if (fd_ < 0 || failed_) return false;
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      log(log_level::error,
          "writing '%s' failed: %s; later events are counted as dropped, the file keeps every "
          "member written before",
          path_.c_str(), std::strerror(errno));
      failed_ = true;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

void output_file::relocate(const std::string &new_path, std::string header) {
  if (!tried_) {  // not created yet: plan the new name and header
    plan(new_path, std::move(header));
    return;
  }
  std::lock_guard<std::mutex> lock(path_mutex_);
  if (fd_ < 0 || new_path == path_) return;
  if (rename_new(path_.c_str(), new_path.c_str())) {
    path_ = new_path;
  } else if (errno == EEXIST) {
    char fresh[4096];
    for (int k = 1; k < 1000; ++k) {
      if (!fresh_name(new_path, k, fresh, sizeof fresh)) break;
      if (rename_new(path_.c_str(), fresh)) {
        log(log_level::warn,
            "'%s' already exists (a file or symbolic link this process did not create); "
            "leaving it untouched and renaming the trace to '%s'",
            new_path.c_str(), fresh);
        path_ = fresh;
        return;
      }
      if (errno != EEXIST) break;
    }
    log(log_level::warn,
        "can not rename '%s' to '%s' or a free name near it; keeping the first name", path_.c_str(),
        new_path.c_str());
  } else {
    log(log_level::warn, "can not rename '%s' to '%s': %s; keeping the first name", path_.c_str(),
        new_path.c_str(), std::strerror(errno));
  }
}

void output_file::sync() {
  if (fd_ >= 0) ::fsync(fd_);
}

void output_file::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void output_file::fork_child(std::string path, std::string header) {
  if (fd_ >= 0) ::close(fd_);  // the parent's descriptor: the parent goes on writing it
  fd_ = -1;
  tried_ = false;
  failed_ = false;
  new (&path_mutex_) std::mutex();  // made anew, not unlocked (writer.cpp's fork_child says why)
  path_.clear();
  plan(std::move(path), std::move(header));
}

}  // namespace dftrace::detail
