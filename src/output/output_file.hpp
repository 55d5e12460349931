// output_file.hpp: a trace file being written. A traced process's file is created at first use
// without following or replacing anything, its descriptor held at a high number while an
// interposer can give it back to the program (else opened by its path for each write and closed
// after it), appended to one whole member at a time, renamed when the rank becomes known,
// closed. A tool's output file (create()) is made
// or truncated where the user said. It knows bytes.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "output/fs_direct.hpp"

namespace dftrace::detail {

// While a write holds the trace file's descriptor, it is moved to the lowest free number at or
// above this floor (or, when the soft RLIMIT_NOFILE is not above it, to the highest free number
// below the limit), so that it is never a number the application expects to get from open,
// pipe or dup.
constexpr int k_trace_fd_floor = 1000;  // (base/held_fds.hpp: k_high_fd_floor)

// The descriptor of the trace file while it is held, or a negative value, a new one each time
// the descriptor is let go (trace_fd_none()): what an interposer compares a close, dup2 or
// close_range with (one load), and how it tells that a write came between two loads.
extern std::atomic<int> g_trace_fd;
int trace_fd_none();
// Whether an interposer that gives the descriptor up when the program meets EMFILE
// (libdftrace_io) is there: it called dftrace_trace_fd_address (on), and was not given its calls
// back to the C library since (off: I/O tracing switched off). While off, a traced process's file
// holds no descriptor between writes (output_file::hold_between_writes).
void trace_fd_guarded(bool on);
// When `fd` is the trace file's descriptor: the write holding it is waited for (after which `fd`
// is free), or the file is moved to another number and `fd` closed; true when it was moved.
bool release_trace_fd(int fd);
// Grows the process's descriptor table up to the floor now, while the process may still have
// one thread: growing it later, when the file is created and the writer thread shares the
// table, makes the kernel wait for an RCU grace period (10 to 20 ms on a small VM, most of a
// short traced process's life). Called before the writer thread starts. No allocation.
void grow_descriptor_table();

// Calls other than path(), failed() and the state's (status(), is_open(), tried(),
// wait_opening()) are made under the writer's I/O lock (one at a time); open() is safe against
// another thread's open() too (it waits for it).
class output_file {
 public:
  // Where the file will be and the text that must come first (written by the writer as its own
  // member once the file is open). Until open(), plan() and relocate() may change both.
  void plan(std::string path, std::string header);
  // The process wrote a trace file before this one (dftrace_finalize then init, an exec that
  // failed): what is at the path is likely its own, and the free name is taken without a word.
  void path_may_be_ours() { path_may_be_ours_ = true; }
  // Creates the file (once; later calls say whether it is open, a call made while another
  // thread is inside open() after waiting for it, up to 200 ms). A file or symbolic link already
  // at the path is left alone and the first free "<name>.k.pfw.gz" is used. On failure: one
  // message (none when `quiet`: the fatal-signal path, where writing one would allocate),
  // failed() is true, and the process goes on without a file. No allocation when plan() ran
  // and `quiet` (the fatal-signal path may open the file). With `first` (the header's member),
  // the file holds those bytes from the moment it has its name (never seen empty by a reader).
  bool open(bool quiet = false, const char *first = nullptr, size_t first_n = 0);
  // A tool's output: the file at `path` created, or truncated when it exists (as a shell's `>`
  // does), and appended to like a trace file; it is not the process's trace file (g_trace_fd).
  // On failure, *why is "PATH: reason" and false.
  bool create(const std::string &path, std::string *why);
  // Where the file stands. One atomic, written by whoever opens or closes the file and read by
  // the fatal-signal path on another thread (lock-free: async-signal-safe).
  enum class state : uint8_t {
    untried,  // not created yet (plan() may still change its path and header)
    opening,  // a thread is inside open(): creating the file, writing its header, naming it
    open,     // created (or, for a tool, create() made it): writes append to it
    failed,   // its creation failed: the process goes on without a file
    closed,   // close() ran
  };
  state status() const { return state_.load(std::memory_order_acquire); }
  bool is_open() const { return status() == state::open; }
  bool tried() const { return status() != state::untried; }
  // Waits (sleeping, async-signal-safe) up to `ms` milliseconds while another thread is inside
  // open(), then says where the file stands: a signal handler's last write must not find the
  // file half made.
  state wait_opening(int ms) const;
  const std::string &header() const { return header_; }
  // Appends all n bytes (one whole member), after checking that the descriptor is still the
  // file's (device and inode: a program linked with dftrace alone may have closed it and put
  // something else on its number; then the file is opened again by its path, never another).
  // A member that would cross the file-size limit (RLIMIT_FSIZE) is not written. On an error
  // the file is cut back to its last whole member; one message, and failed() from then on.
  bool write(const char *p, size_t n);
  // The same for `count` whole members at once (at most k_max_members): one writev (a short
  // write is finished member by member); a failure cuts the file back to where they began.
  static constexpr size_t k_max_members = 1024;  // IOV_MAX
  bool write_many(const struct iovec *members, size_t count);
  // The same with O_DIRECT (the flight recorder's dump, ring.direct): the bytes up to the
  // first multiple of k_direct_align in the file and the tail after the last one are written
  // as write_many writes, the rest copied through an aligned buffer (mapped at the first call,
  // kept) and written around the page cache. A file system that refuses O_DIRECT (EINVAL: a
  // tmpfs of an older kernel, ramfs, some FUSE file systems) gets write_many's writes, from
  // then on for this file (said once at log_level info). Not for the fatal-signal path.
  static constexpr size_t k_direct_align = 4096;
  static constexpr size_t k_direct_buffer = size_t{1} << 20;
  bool write_many_direct(const struct iovec *members, size_t count);
  // ring.direct auto: whether this file's dump goes with O_DIRECT (decide_direct, made at the
  // first call for the file and kept; said once at log_level info). After open().
  direct_decision direct_auto();
  // The file system refused O_DIRECT for this file (its writes go through the page cache).
  bool direct_refused() const { return direct_refused_; }
  // Bytes written so far with O_DIRECT (tests and benchmarks).
  uint64_t direct_bytes() const { return direct_bytes_; }
  // After a failure: the end line's member, when it fits where the failed member was (a full
  // file system freed that room; a file-size limit may leave room for it).
  bool write_last(const char *p, size_t n);
  // The file moves to new_path: renamed when open (a name taken by something else is left alone
  // and a free one near it used), planned with `header` otherwise. True when `header` will be
  // the file's (it was not created yet).
  bool relocate(const std::string &new_path, std::string header);
  void sync();
  void close();
  ~output_file();

  std::string path() const;  // thread-safe
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  // Why the last write failed ("PATH: reason"), for a tool's output (which logs nothing).
  std::string failure() const;

  // A traced process's file keeps its descriptor between writes (one open for the run, no
  // metadata load on a parallel file system) while an interposer guards it (trace_fd_guarded)
  // and until the program first meets EMFILE: then it is given up (move_off) and the file is
  // opened for each write from then on. Without an interposer (a program linked with dftrace
  // alone), nothing would give the number back: the file is opened for each write from the
  // start. `always` (ring mode: `dftrace trigger` finds the process by the trace file it has
  // open) holds it in every case, again after each write. Before open().
  void hold_between_writes(bool always) {
    hold_ = true;
    hold_always_ = always;
  }

  // The file opened by its path for each write and closed after it from the start, holding no
  // descriptor between writes (what a file is after the program met EMFILE; bench/
  // trace_fd_bench.cpp compares the two). Before open().
  void open_per_write() {
    hold_ = false;
    hold_always_ = false;
  }

  // release_trace_fd's work on this file.
  bool move_off(int fd);

  // fork(): the child forgets the parent's file and plans its own.
  void fork_prepare() { path_mutex_.lock(); }
  void fork_parent() { path_mutex_.unlock(); }
  void fork_child(std::string path, std::string header);

 private:
  std::string planned_;  // the path asked for
  std::string header_;
  std::string path_;  // the path in use (planned_ or a free name near it)
  mutable std::mutex path_mutex_;
  bool append(const struct iovec *v, size_t count, bool quiet, bool direct = false);
  // append's O_DIRECT write of v (defined in output_direct.cpp); 0 or the errno.
  int write_direct(const struct iovec *v, size_t count, size_t n);
  bool still_ours();  // the descriptor is the file's, or the file was opened again
  bool take_back();   // the file opened again by its path (the same inode), fd_
  void let_go();      // a trace file's descriptor closed after each write
  // The program holds every number (EMFILE): the write made by a child with a copy of the
  // table; 0 or the errno.
  int write_borrowed(const struct iovec *v, size_t count, size_t n);
  bool adopt(int fd);            // fd (the created file) moved high, its identity kept
  bool same_file(int fd) const;  // fd is open on this file (device and inode)
  void forget_descriptor();
  bool holds() const;  // fd_ kept between writes now (hold_between_writes)

  int fd_ = -1;  // -1 while open: let go between writes, opened again at the next one
  bool let_go_ = false;
  bool hold_ = true;          // fd_ kept between writes (until the program meets EMFILE)
  bool hold_always_ = false;  // ... also after the program met EMFILE
  std::atomic<state> state_{state::untried};
  static_assert(std::atomic<state>::is_always_lock_free, "read in a signal handler");
  bool reopened_ = false;      // (said once)
  bool room_failure_ = false;  // the failure was a full file system or the file-size limit
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  uint64_t size_ = 0;    // bytes of whole members in the file
  std::mutex fd_mutex_;  // a write against a move of the descriptor (release_trace_fd)
  std::atomic<bool> failed_{false};
  bool tool_ = false;              // create(): failures are said by the tool, not logged
  bool path_may_be_ours_ = false;  // path_may_be_ours()
  int fail_errno_ = 0;             // the last failure's errno, or
  char *direct_buf_ = nullptr;     // write_many_direct's aligned buffer (k_direct_buffer)
  bool direct_refused_ = false;    // the file system refused O_DIRECT (said once)
  uint64_t direct_bytes_ = 0;
  bool direct_decided_ = false;  // direct_auto_ holds the decision for this file
  direct_decision direct_auto_;
  const char *fail_what_ = nullptr;  // its reason
};

}  // namespace dftrace::detail
