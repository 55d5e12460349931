// output_file.cpp: creating, appending to, renaming and closing the trace file being written.
#include "output/output_file.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <new>
#include <optional>

#include "base/held_fds.hpp"
#include "base/lock_within.hpp"
#include "base/log.hpp"
#include "output/write_whole.hpp"

namespace dftrace::detail {

std::atomic<int> g_trace_fd{-1};

namespace {
std::atomic<bool> g_trace_fd_guarded{false};
}  // namespace

void trace_fd_guarded(bool on) { g_trace_fd_guarded.store(on, std::memory_order_release); }

int trace_fd_none() {
  static std::atomic<unsigned> lets_go{0};
  return -2 - static_cast<int>(lets_go.fetch_add(1, std::memory_order_relaxed) & 0x3fffffffu);
}

namespace {

std::atomic<output_file *> g_trace_file{nullptr};

// dftrace's own calls on its file go to the kernel, never through an interposer
// (libdftrace_io): one refuses a close of the trace's descriptor, which is how it keeps the
// application from closing it, and one that records the call may wait on a lock that a fork
// in progress holds while it waits for this writer.
int sys_close(int fd) { return static_cast<int>(::syscall(SYS_close, fd)); }
int sys_open(const char *path, int flags, mode_t mode) {
  return static_cast<int>(::syscall(SYS_openat, AT_FDCWD, path, flags, mode));
}
ssize_t sys_write(int fd, const void *p, size_t n) { return ::syscall(SYS_write, fd, p, n); }
ssize_t sys_writev(int fd, const struct iovec *v, size_t count) {
  return ::syscall(SYS_writev, fd, v, static_cast<int>(count));
}
bool sys_identity(int fd, dev_t *dev, ino_t *ino, uint64_t *size) {
  struct stat st;
  if (::syscall(SYS_fstat, fd, &st) != 0) return false;
  *dev = st.st_dev;
  *ino = st.st_ino;
  if (size) *size = static_cast<uint64_t>(st.st_size);
  return true;
}

int move_high(int fd) { return move_fd_high(fd, k_trace_fd_floor); }

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
    if (::syscall(SYS_mkdirat, AT_FDCWD, buf, 0755) != 0 && errno != EEXIST) return false;
    buf[i] = saved;
  }
  return true;
}

// Creates the file only if nothing is at `path`: no symbolic link is followed and no file this
// process did not create is truncated (a link planted in a shared /tmp must not make the trace
// overwrite its target).
int create_new(const char *path) {
  return sys_open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, 0644);
}

// Whether `path` is a trace of this user's (a regular file, not a link, beginning as a trace
// does: a gzip member or "["): the one this process's earlier image wrote before an exec (the
// same program and pid), or an earlier run's; nothing to warn of.
bool regular_file_of_ours(const char *path) {
  struct stat st;
  if (::syscall(SYS_newfstatat, AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
      !S_ISREG(st.st_mode) || st.st_uid != ::geteuid())
    return false;
  const int fd = sys_open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
  if (fd < 0) return false;
  unsigned char b[2] = {0, 0};
  const bool whole = ::syscall(SYS_read, fd, b, 2) == 2;
  sys_close(fd);
  return whole && ((b[0] == 0x1f && b[1] == 0x8b) || (b[0] == '[' && b[1] == '\n'));
}

// Renames without replacing anything at `to` (defined below).
bool rename_new(const char *from, const char *to);

// Creates the file at `path` holding `first` from the moment it has that name: a hidden file
// beside it (".<name>.tmp") is created, written and renamed without replacing anything, so a
// reader that opens the file as soon as it appears finds its first member whole, and a file
// system too full for that member leaves no empty file behind. -1 with errno on failure (EEXIST:
// something is at `path`); the hidden file is then removed. No allocation.
int create_with(const char *path, const char *first, size_t n) {
  char tmp[4096];
  const char *slash = std::strrchr(path, '/');
  const size_t dir = slash ? static_cast<size_t>(slash - path) + 1 : 0;
  const size_t len = std::strlen(path);
  if (len + 6 > sizeof tmp) {
    errno = ENAMETOOLONG;
    return -1;
  }
  std::memcpy(tmp, path, dir);
  tmp[dir] = '.';
  std::memcpy(tmp + dir + 1, path + dir, len - dir);
  std::memcpy(tmp + len + 1, ".tmp", 5);
  const int fd = create_new(tmp);
  if (fd < 0) return -1;
  const auto give_up = [&]() {
    const int err = errno;
    sys_close(fd);
    ::syscall(SYS_unlinkat, AT_FDCWD, tmp, 0);
    errno = err;
    return -1;
  };
  for (size_t done = 0; done < n;) {
    const ssize_t w = sys_write(fd, first + done, n - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return give_up();
    }
    done += static_cast<size_t>(w);
  }
  if (!rename_new(tmp, path)) return give_up();
  return fd;
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

// The program holds every number its soft RLIMIT_NOFILE allows (EMFILE): the work is done by a
// child that shares this memory but has a copy of the descriptor table, in which the number
// below the limit is freed (the program's table stays as it is). fn(arg) runs there with system
// calls only, on `stack`. Every signal is blocked around it (it runs no handler of the
// program's); its exit signal is 0, so the program's SIGCHLD and wait() never see it. False
// when no child could be made (errno).
bool run_borrowed(int (*fn)(void *), void *arg, char *stack, size_t stack_n) {
  sigset_t all, old;
  sigfillset(&all);
  ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, sizeof(long));
  const int pid = ::clone(fn, stack + stack_n, CLONE_VM | CLONE_VFORK, arg);
  const int err = errno;
  if (pid > 0) {
    int st = 0;
    while (::syscall(SYS_wait4, pid, &st, __WCLONE, nullptr) < 0 && errno == EINTR) {
    }
  }
  ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, nullptr, sizeof(long));
  errno = err;
  return pid > 0;
}

// The highest number the program may have (the soft RLIMIT_NOFILE less one), or -1.
int top_number() {
  struct rlimit rl;
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur < 1 ||
      rl.rlim_cur > static_cast<rlim_t>(INT_MAX))
    return -1;
  return static_cast<int>(rl.rlim_cur) - 1;
}

// A write made by a borrowed child, and what came of it (err).
struct borrowed_write {
  const char *path;
  const struct iovec *v;
  size_t count, n;
  uint64_t size;
  dev_t dev;
  ino_t ino;
  int top;
  int err;
};
alignas(64) char g_write_stack[16384];  // used under the file's lock only

int borrowed_write_child(void *arg) {
  auto *b = static_cast<borrowed_write *>(arg);
  sys_close(b->top);
  const int fd = sys_open(b->path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0);
  if (fd < 0) {
    b->err = errno;
    return 0;
  }
  dev_t dev;
  ino_t ino;
  if (!sys_identity(fd, &dev, &ino, nullptr) || dev != b->dev || ino != b->ino)
    b->err = ESTALE;
  else
    b->err = write_whole(fd, b->v, b->count, b->n, b->size);
  sys_close(fd);
  return 0;
}

// The file's creation (create_with or create_new) made by a borrowed child.
struct borrowed_create {
  const char *path;
  const char *first;
  size_t n;
  int top;
  dev_t dev;
  ino_t ino;
  uint64_t size;
  int err;
};
alignas(64) char g_create_stack[16384];  // open() is made by one thread at a time

int borrowed_create_child(void *arg) {
  auto *b = static_cast<borrowed_create *>(arg);
  sys_close(b->top);
  const int fd = b->n ? create_with(b->path, b->first, b->n) : create_new(b->path);
  b->err = fd < 0 ? errno : 0;
  if (fd >= 0 && !sys_identity(fd, &b->dev, &b->ino, &b->size)) b->err = errno;
  if (fd >= 0) sys_close(fd);
  return 0;
}

}  // namespace

// Writes all n bytes of v to fd (a short write is finished member by member); on an error, a
// member written in part (a full file system) is cut off at `size` (the file ends with whole
// members) and the errno is returned; 0 when all was written. Only system calls: a child made
// by write_borrowed runs it.
int write_whole(int fd, const struct iovec *v, size_t count, size_t n, uint64_t size) {
  size_t done = 0, first = 0, off = 0;
  while (done < n) {
    while (v[first].iov_len == 0) ++first;
    const char *at = static_cast<const char *>(v[first].iov_base) + off;
    const ssize_t w = off > 0 || first + 1 == count ? sys_write(fd, at, v[first].iov_len - off)
                                                    : sys_writev(fd, v + first, count - first);
    if (w < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      while (done > 0 && ::syscall(SYS_ftruncate, fd, static_cast<off_t>(size)) != 0 &&
             errno == EINTR) {
      }
      return err;
    }
    done += static_cast<size_t>(w);
    for (size_t k = static_cast<size_t>(w); k > 0;) {
      const size_t take = std::min(k, v[first].iov_len - off);
      off += take;
      k -= take;
      if (off == v[first].iov_len) {
        ++first;
        off = 0;
      }
    }
  }
  return 0;
}

void grow_descriptor_table() {
  const int fd = sys_open("/", O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
  if (fd < 0) return;
  const int high = move_high(fd);  // closes fd when it moved
  sys_close(high);
}

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

output_file::state output_file::wait_opening(int ms) const {
  const struct timespec step = {0, 1000000};
  state s = status();
  for (int i = 0; i < ms && s == state::opening; ++i) {
    nanosleep(&step, nullptr);
    s = status();
  }
  return s;
}

bool output_file::open(bool quiet, const char *first, size_t first_n) {
  // Untried -> opening by one thread only; another finds where the file stands, once the one
  // inside has done (up to 200 ms: the fatal-signal path's bound).
  state s = state::untried;
  if (!state_.compare_exchange_strong(s, state::opening, std::memory_order_acq_rel)) {
    if (s == state::opening) s = wait_opening(200);
    return s == state::open;
  }
  const auto give_up = [this]() {
    failed_ = true;
    state_.store(state::failed, std::memory_order_release);
    return false;
  };
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
    return give_up();
  }
  // (the new descriptor is at a low number until adopt moves it: a program's call that meets
  // EMFILE meanwhile waits for that and is made again)
  const momentary_fds creating;
  // A number made for the file, or k_borrowed: the program holds every number, a borrowed
  // child created the file and `made` is its identity.
  constexpr int k_borrowed = INT_MAX;
  borrowed_create made{};
  const auto create = [&](const char *path) {
    const int fd = first_n ? create_with(path, first, first_n) : create_new(path);
    if (fd >= 0 || errno != EMFILE || (made.top = top_number()) < 0) return fd;
    made = borrowed_create{path, first, first_n, made.top, 0, 0, 0, EIO};
    if (!run_borrowed(borrowed_create_child, &made, g_create_stack, sizeof g_create_stack))
      return -1;
    errno = made.err;
    return made.err == 0 ? k_borrowed : -1;
  };
  int fd = create(p.c_str());
  if (fd < 0 && errno == EEXIST) {
    // Something is already there (a file from elsewhere, or a symbolic link): leave it alone and
    // take the first free name "<name>.1.pfw.gz", "<name>.2.pfw.gz", ...
    char fresh[4096];
    for (int k = 1; k < 1000; ++k) {
      if (!fresh_name(p, k, fresh, sizeof fresh)) break;
      fd = create(fresh);
      if (fd >= 0) {
        if (!quiet && !path_may_be_ours_ && !regular_file_of_ours(p.c_str()))
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
  if (fd == k_borrowed) {
    dev_ = made.dev;
    ino_ = made.ino;
    size_ = made.size;
    g_trace_file.store(this, std::memory_order_release);
    fd_ = -1;
    let_go_ = true;
    hold_ = hold_always_;  // made while the program held every number
  } else if (fd < 0 || !adopt(fd)) {
    if (!quiet)
      log(log_level::error, "can not open '%s' for writing: %s; tracing continues without a file",
          p.c_str(), std::strerror(errno));
    return give_up();
  }
  state_.store(state::open, std::memory_order_release);
  return true;
}

bool output_file::create(const std::string &path, std::string *why) {
  planned_ = path;
  {
    std::lock_guard<std::mutex> lock(path_mutex_);
    path_ = path;
  }
  const int fd = sys_open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0 || !sys_identity(fd, &dev_, &ino_, &size_)) {
    *why = path + ": " + std::strerror(errno);
    if (fd >= 0) sys_close(fd);
    failed_ = true;
    state_.store(state::failed, std::memory_order_release);
    return false;
  }
  fd_ = fd;
  tool_ = true;
  state_.store(state::open, std::memory_order_release);
  return true;
}

std::string output_file::failure() const {
  return path() + ": write failed: " + (fail_what_ ? fail_what_ : std::strerror(fail_errno_));
}

bool output_file::adopt(int fd) {
  if (!sys_identity(fd, &dev_, &ino_, &size_)) {
    const int err = errno;
    sys_close(fd);
    errno = err;
    return false;
  }
  g_trace_file.store(this, std::memory_order_release);
  if (holds()) {
    fd_ = move_high(fd);
    g_trace_fd.store(fd_, std::memory_order_release);
    return true;
  }
  sys_close(fd);  // held only while a write is under way (let_go)
  fd_ = -1;
  let_go_ = true;
  return true;
}

bool output_file::holds() const {
  return hold_always_ || (hold_ && g_trace_fd_guarded.load(std::memory_order_acquire));
}

bool output_file::same_file(int fd) const {
  dev_t dev;
  ino_t ino;
  return fd >= 0 && sys_identity(fd, &dev, &ino, nullptr) && dev == dev_ && ino == ino_;
}

bool output_file::take_back() {
  const momentary_fds opening;  // (low until moved high, as in open())
  const int fd = sys_open(path_.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0);
  if (fd < 0) return false;
  if (!same_file(fd)) {
    sys_close(fd);
    errno = ESTALE;
    return false;
  }
  fd_ = move_high(fd);
  g_trace_fd.store(fd_, std::memory_order_release);
  return true;
}

void output_file::let_go() {
  if (tool_ || holds() || fd_ < 0) return;
  int expected = fd_;
  g_trace_fd.compare_exchange_strong(expected, trace_fd_none(), std::memory_order_acq_rel);
  if (same_file(fd_)) sys_close(fd_);  // only the file: the number may be the program's now
  fd_ = -1;
  let_go_ = true;
}

bool output_file::still_ours() {
  if (fd_ >= 0 && same_file(fd_)) return true;
  if (fd_ < 0 && let_go_) return take_back();
  // The number is not the file's any more (closed behind dftrace's back, perhaps reused by the
  // program): it is never touched again. The file is opened again by its path, when what is
  // there is still this file (nothing is created over something else).
  int expected = fd_;
  g_trace_fd.compare_exchange_strong(expected, trace_fd_none());
  fd_ = -1;
  if (!take_back()) return false;
  if (!reopened_) {  // nothing was lost: said at `info`, the program's stderr stays its own
    reopened_ = true;
    log(log_level::info,
        "the descriptor of '%s' was closed or replaced by the program; the file was opened "
        "again and nothing was written elsewhere",
        path_.c_str());
  }
  return true;
}

bool output_file::move_off(int fd) {
  const bool locked = lock_within(fd_mutex_, std::chrono::milliseconds(1000));
  bool moved = false;
  if (fd >= 0 && fd == fd_) {
    moved = true;
    const int to = move_high(fd);
    if (to == fd) {  // no other number free: closed, opened again by path at the next write
      sys_close(fd);
      fd_ = -1;
      let_go_ = true;
      hold_ = hold_always_;  // the program needs every number: let go after each write
    } else {
      fd_ = to;
    }
    g_trace_fd.store(fd_ >= 0 ? fd_ : trace_fd_none(), std::memory_order_release);
  }
  if (locked) fd_mutex_.unlock();
  return moved;
}

bool release_trace_fd(int fd) {
  output_file *f = g_trace_file.load(std::memory_order_acquire);
  return f && f->move_off(fd);
}

bool output_file::write(const char *p, size_t n) {
  if (!is_open() || failed_) return false;
  const iovec v{const_cast<char *>(p), n};
  return append(&v, 1, false);
}

bool output_file::write_many(const struct iovec *members, size_t count) {
  if (!is_open() || failed_ || count > k_max_members) return false;
  return count == 0 || append(members, count, false);
}

bool output_file::write_last(const char *p, size_t n) {
  if (!is_open() || !failed_ || !room_failure_) return false;
  const iovec v{const_cast<char *>(p), n};
  return append(&v, 1, true);
}

bool output_file::append(const struct iovec *v, size_t count, bool quiet, bool direct) {
  const bool locked = lock_within(fd_mutex_, std::chrono::milliseconds(1000));
  // A file opened for this write alone takes a number until let_go(): a program's call that
  // meets EMFILE meanwhile waits for it and is made again (destroyed after `unlock` below).
  std::optional<momentary_fds> writing;
  if (!holds()) writing.emplace();
  struct unlock_at_end {
    output_file &f;
    bool locked;
    ~unlock_at_end() {
      f.let_go();  // no descriptor of the program's is held between writes
      if (locked) f.fd_mutex_.unlock();
    }
  } unlock{*this, locked};
  const auto fail = [&](const char *what, int err, bool room) {
    fail_errno_ = err;
    fail_what_ = what;
    if (!quiet && !tool_ && !failed_.load(std::memory_order_relaxed))
      log(log_level::error,
          "writing '%s' failed: %s; later events are counted as dropped, the file keeps every "
          "member written before",
          path_.c_str(), what ? what : std::strerror(err));
    room_failure_ = room;
    failed_ = true;
    return false;
  };
  size_t n = 0;
  for (size_t i = 0; i < count; ++i) n += v[i].iov_len;
  // Never past the file-size limit: the kernel would send SIGXFSZ, whose default kills the
  // program (its disposition is the program's).
  struct rlimit fl;
  if (::getrlimit(RLIMIT_FSIZE, &fl) == 0 && fl.rlim_cur != RLIM_INFINITY &&
      size_ + n > static_cast<uint64_t>(fl.rlim_cur))
    return fail("the file would grow past the file-size limit (RLIMIT_FSIZE)", EFBIG, true);
  int err = 0;
  if (still_ours()) {
    err = direct && !direct_refused_ && fd_ >= 0 ? write_direct(v, count, n)
                                                 : write_whole(fd_, v, count, n, size_);
  } else if (errno == EMFILE && let_go_ && locked) {
    // The program holds every number its limit allows: the write is made by a child that
    // shares this memory but has a copy of the table, where one number is freed for it.
    err = write_borrowed(v, count, n);
  } else {
    return fail(nullptr, errno, false);
  }
  if (err != 0) return fail(nullptr, err, err == ENOSPC || err == EDQUOT || err == EFBIG);
  size_ += n;
  return true;
}

int output_file::write_borrowed(const struct iovec *v, size_t count, size_t n) {
  const int top = top_number();
  if (top < 0) return EMFILE;
  borrowed_write b{path_.c_str(), v, count, n, size_, dev_, ino_, top, EIO};
  if (!run_borrowed(borrowed_write_child, &b, g_write_stack, sizeof g_write_stack)) return errno;
  return b.err;
}

bool output_file::relocate(const std::string &new_path, std::string header) {
  if (!tried()) {  // not created yet: plan the new name and header
    plan(new_path, std::move(header));
    return true;
  }
  std::lock_guard<std::mutex> lock(path_mutex_);
  if (!is_open() || new_path == path_) return false;
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
        return false;
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
  return false;
}

void output_file::sync() {
  // (the fatal-signal path calls it: the lock is waited for a bounded time)
  if (!lock_within(fd_mutex_, std::chrono::milliseconds(1000))) return;
  if (is_open() && still_ours()) ::syscall(SYS_fsync, fd_);
  let_go();
  fd_mutex_.unlock();
}

void output_file::forget_descriptor() {
  int expected = fd_;
  if (expected >= 0) g_trace_fd.compare_exchange_strong(expected, trace_fd_none());
  output_file *self = this;
  g_trace_file.compare_exchange_strong(self, nullptr);
  fd_ = -1;
  state s = state::open;  // (a file never created stays as it is)
  state_.compare_exchange_strong(s, state::closed, std::memory_order_acq_rel);
}

void output_file::close() {
  const std::lock_guard<std::mutex> lock(fd_mutex_);
  if (same_file(fd_)) sys_close(fd_);  // only the file: the number may be the program's now
  forget_descriptor();
}

output_file::~output_file() {
  if (direct_buf_) munmap(direct_buf_, k_direct_buffer);
  output_file *self = this;
  g_trace_file.compare_exchange_strong(self, nullptr);
}

void output_file::fork_child(std::string path, std::string header) {
  // The parent's descriptor (the parent goes on writing it), when it still is the file: a
  // program may have closed the number and put its own file or pipe there.
  if (same_file(fd_)) sys_close(fd_);
  forget_descriptor();
  size_ = 0;
  reopened_ = false;
  room_failure_ = false;
  direct_refused_ = false;  // (its buffer stays, the child's copy)
  direct_bytes_ = 0;
  direct_decided_ = false;
  state_.store(state::untried, std::memory_order_release);
  failed_ = false;
  new (&fd_mutex_) std::mutex();
  new (&path_mutex_) std::mutex();  // made anew, not unlocked (writer.cpp's fork_child says why)
  path_.clear();
  plan(std::move(path), std::move(header));
}

}  // namespace dftrace::detail
