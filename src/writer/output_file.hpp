// output_file.hpp: the trace file being written: created at first use without following or
// replacing anything, appended to, renamed when the rank becomes known, closed. It knows bytes.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

namespace dftrace::detail {

// Calls other than path() and failed() are made under the writer's I/O lock (one at a time).
class output_file {
 public:
  // Where the file will be and the text that must come first (written by the writer as its own
  // member once the file is open). Until open(), plan() and relocate() may change both.
  void plan(std::string path, std::string header);
  // Creates the file (once; later calls say whether it is open). A file or symbolic link already
  // at the path is left alone and the first free "<name>.k.pfw.gz" is used. On failure: one
  // message (none when `quiet`: the fatal-signal path, where writing one would allocate),
  // failed() is true, and the process goes on without a file. No allocation when plan() ran
  // and `quiet` (the fatal-signal path may open the file).
  bool open(bool quiet = false);
  bool is_open() const { return fd_ >= 0; }
  bool tried() const { return tried_; }
  const std::string &header() const { return header_; }
  // Appends all n bytes; on an error, one message and failed() from then on.
  bool write(const char *p, size_t n);
  // The file moves to new_path: renamed when open (a name taken by something else is left alone
  // and a free one near it used), planned with `header` otherwise.
  void relocate(const std::string &new_path, std::string header);
  void sync();
  void close();

  std::string path() const;  // thread-safe
  bool failed() const { return failed_.load(std::memory_order_relaxed); }

  // fork(): the child forgets the parent's file and plans its own.
  void fork_prepare() { path_mutex_.lock(); }
  void fork_parent() { path_mutex_.unlock(); }
  void fork_child(std::string path, std::string header);

 private:
  std::string planned_;  // the path asked for
  std::string header_;
  std::string path_;  // the path in use (planned_ or a free name near it)
  mutable std::mutex path_mutex_;
  int fd_ = -1;
  bool tried_ = false;
  std::atomic<bool> failed_{false};
};

}  // namespace dftrace::detail
