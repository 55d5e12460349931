// output_direct.cpp: the trace file's appends with O_DIRECT (the flight recorder's dump of its
// ring, ring.direct): the middle of the bytes copied through an aligned buffer and written
// around the page cache, the unaligned head and tail through it as usual.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/lock_within.hpp"
#include "base/log.hpp"
#include "output/output_file.hpp"
#include "output/write_whole.hpp"

namespace dftrace::detail {

namespace {

// As output_file.cpp's: the kernel's calls, never an interposer's.
ssize_t sys_write(int fd, const void *p, size_t n) { return ::syscall(SYS_write, fd, p, n); }
int sys_getfl(int fd) { return static_cast<int>(::syscall(SYS_fcntl, fd, F_GETFL)); }
int sys_setfl(int fd, int flags) {
  return static_cast<int>(::syscall(SYS_fcntl, fd, F_SETFL, flags));
}

// The bytes of an iovec array, taken in order.
struct iov_cursor {
  const struct iovec *v;
  size_t count;
  size_t i = 0, off = 0;
  void copy(char *to, size_t n) {
    while (n > 0 && i < count) {
      const size_t take = std::min(n, v[i].iov_len - off);
      std::memcpy(to, static_cast<const char *>(v[i].iov_base) + off, take);
      to += take;
      n -= take;
      off += take;
      if (off == v[i].iov_len) {
        ++i;
        off = 0;
      }
    }
  }
};

}  // namespace

direct_decision output_file::direct_auto() {
  if (direct_decided_) return direct_auto_;
  direct_decided_ = true;
  {  // (the descriptor is not moved meanwhile: release_trace_fd; without it, by the path)
    const bool locked = lock_within(fd_mutex_, std::chrono::milliseconds(1000));
    direct_auto_ = decide_direct(locked ? fd_ : -1, path());
    if (locked) fd_mutex_.unlock();
  }
  log(log_level::info, "ring.direct auto: '%s' is on %s: the ring is written %s", path().c_str(),
      direct_auto_.fs, direct_auto_.on ? "with O_DIRECT" : "through the page cache");
  return direct_auto_;
}

bool output_file::write_many_direct(const struct iovec *members, size_t count) {
  if (!is_open() || failed_ || count > k_max_members) return false;
  return count == 0 || append(members, count, false, true);
}

int output_file::write_direct(const struct iovec *v, size_t count, size_t n) {
  if (!direct_buf_) {
    void *p = ::mmap(nullptr, k_direct_buffer, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (p == MAP_FAILED) return write_whole(fd_, v, count, n, size_);  // (no memory: as usual)
    direct_buf_ = static_cast<char *>(p);
  }
  const int flags = sys_getfl(fd_);
  if (flags < 0) return write_whole(fd_, v, count, n, size_);
  iov_cursor from{v, count};
  bool direct = false;
  int err = 0;
  // Piece by piece through the buffer: the head up to the first aligned offset of the file
  // (through the page cache), then aligned pieces with O_DIRECT while at least one block is
  // left, then the tail (through the page cache). A file system that refuses O_DIRECT (the
  // flag, or the first write) gets the rest through the page cache.
  for (size_t left = n; left > 0 && !err;) {
    const uint64_t at = size_ + (n - left);
    size_t take;
    if (at % k_direct_align != 0) {
      take = std::min<size_t>(left, k_direct_align - at % k_direct_align);
    } else if (left >= k_direct_align && !direct_refused_) {
      take = std::min(left, k_direct_buffer) & ~(k_direct_align - 1);
      if (!direct) {
        if (sys_setfl(fd_, flags | O_DIRECT) == 0) {
          direct = true;
        } else {
          direct_refused_ = errno == EINVAL;
          if (!direct_refused_) take = std::min(left, k_direct_buffer);
        }
      }
    } else {
      take = std::min(left, k_direct_buffer);
    }
    if (direct && (at % k_direct_align != 0 || take % k_direct_align != 0)) {
      direct = sys_setfl(fd_, flags) != 0;  // (a failure here is a failure of the next write)
    }
    from.copy(direct_buf_, take);
    for (size_t put = 0; put < take;) {
      const ssize_t w = sys_write(fd_, direct_buf_ + put, take - put);
      if (w >= 0) {
        put += static_cast<size_t>(w);
        if (direct) direct_bytes_ += static_cast<size_t>(w);
        if (direct && static_cast<size_t>(w) % k_direct_align != 0)  // (the rest unaligned)
          direct = sys_setfl(fd_, flags) != 0;
      } else if (errno == EINTR) {
      } else if (direct && errno == EINVAL) {  // the flag taken, the write refused
        direct_refused_ = true;
        direct = sys_setfl(fd_, flags) != 0;
        if (direct) {
          err = EINVAL;
          break;
        }
      } else {
        err = errno;
        break;
      }
    }
    left -= take;
  }
  if (direct) sys_setfl(fd_, flags);
  if (err) {  // the file ends with whole members: what this call wrote is cut off
    while (::syscall(SYS_ftruncate, fd_, static_cast<off_t>(size_)) != 0 && errno == EINTR) {
    }
  }
  if (direct_refused_) {
    log(log_level::info,
        "ring.direct: the file system of '%s' refuses O_DIRECT; the ring is written through "
        "the page cache",
        path_.c_str());
  }
  return err;
}

}  // namespace dftrace::detail
