// spill.hpp: a temporary file that holds threads' layered events while the trace is read, so
// that the analysis keeps in memory only what it has not yet spilled and the group it works on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dftrace::analysis {

struct layered_event;

// An unlinked file in $TMPDIR (or /tmp): gone when the process ends, whatever happens.
// write() appends, read() reads back; both are whole or fail (false), and a store that fails
// once refuses every later write, so the caller keeps its events in memory instead.
class spill_store {
 public:
  spill_store() = default;
  spill_store(const spill_store &) = delete;
  spill_store &operator=(const spill_store &) = delete;
  ~spill_store();

  // Appends n events; *offset gets where they lie. False (nothing kept) when it cannot.
  bool write(const layered_event *ev, size_t n, uint64_t *offset);
  // Appends the n events at offset to *out.
  bool read(uint64_t offset, size_t n, std::vector<layered_event> *out) const;
  // The same for any bytes (a name's durations): append `bytes` bytes, read them back into p.
  bool write_bytes(const void *p, size_t bytes, uint64_t *offset);
  bool read_bytes(uint64_t offset, void *p, size_t bytes) const;
  uint64_t bytes() const { return size_; }
  const std::string &error() const { return error_; }

 private:
  bool open_file();
  int fd_ = -1;
  bool failed_ = false;
  uint64_t size_ = 0;
  std::string error_;
};

}  // namespace dftrace::analysis
