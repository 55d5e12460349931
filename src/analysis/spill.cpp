// spill.cpp: the analysis's temporary file of layered events.
#include "analysis/spill.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "analysis/collect.hpp"

namespace dftrace::analysis {

spill_store::~spill_store() {
  if (fd_ >= 0) ::close(fd_);
}

bool spill_store::open_file() {
  const char *dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/dftrace-analyze-XXXXXX";
  fd_ = ::mkstemp(path.data());
  if (fd_ < 0) {
    error_ = path + ": " + std::strerror(errno);
    return false;
  }
  ::unlink(path.c_str());
  return true;
}

namespace {

// All n bytes at offset `at`, written (pwrite) or read (pread); false with errno set (ENOSPC or
// EIO when the call gave 0 bytes).
template <typename Call, typename Ptr>
bool whole(Call call, int fd, Ptr p, size_t n, uint64_t at, int zero_errno) {
  while (n) {
    const ssize_t k = call(fd, p, n, static_cast<off_t>(at));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      if (k == 0) errno = zero_errno;
      return false;
    }
    p += k;
    at += static_cast<uint64_t>(k);
    n -= static_cast<size_t>(k);
  }
  return true;
}

}  // namespace

bool spill_store::write(const layered_event *ev, size_t n, uint64_t *offset) {
  return write_bytes(ev, n * sizeof(layered_event), offset);
}

bool spill_store::write_bytes(const void *p, size_t bytes, uint64_t *offset) {
  if (failed_ || (fd_ < 0 && !open_file())) {
    failed_ = true;
    return false;
  }
  if (!whole(::pwrite, fd_, static_cast<const char *>(p), bytes, size_, ENOSPC)) {
    error_ = std::strerror(errno);
    failed_ = true;
    return false;
  }
  *offset = size_;
  size_ += bytes;
  return true;
}

bool spill_store::read(uint64_t offset, size_t n, std::vector<layered_event> *out) const {
  const size_t old = out->size();
  out->resize(old + n);
  if (read_bytes(offset, out->data() + old, n * sizeof(layered_event))) return true;
  out->resize(old);
  return false;
}

bool spill_store::read_bytes(uint64_t offset, void *p, size_t bytes) const {
  return fd_ >= 0 && whole(::pread, fd_, static_cast<char *>(p), bytes, offset, EIO);
}

}  // namespace dftrace::analysis
