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

bool spill_store::write(const layered_event *ev, size_t n, uint64_t *offset) {
  if (failed_ || (fd_ < 0 && !open_file())) {
    failed_ = true;
    return false;
  }
  const char *p = reinterpret_cast<const char *>(ev);
  size_t left = n * sizeof(layered_event);
  uint64_t at = size_;
  while (left) {
    const ssize_t w = ::pwrite(fd_, p, left, static_cast<off_t>(at));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      error_ = std::strerror(w < 0 ? errno : ENOSPC);
      failed_ = true;
      return false;
    }
    p += w;
    at += static_cast<uint64_t>(w);
    left -= static_cast<size_t>(w);
  }
  *offset = size_;
  size_ = at;
  return true;
}

bool spill_store::read(uint64_t offset, size_t n, std::vector<layered_event> *out) const {
  const size_t old = out->size();
  out->resize(old + n);
  char *p = reinterpret_cast<char *>(out->data() + old);
  size_t left = n * sizeof(layered_event);
  uint64_t at = offset;
  while (left) {
    const ssize_t r = ::pread(fd_, p, left, static_cast<off_t>(at));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      out->resize(old);
      return false;
    }
    p += r;
    at += static_cast<uint64_t>(r);
    left -= static_cast<size_t>(r);
  }
  return true;
}

}  // namespace dftrace::analysis
