// writer.hpp: thread buffers -> background writer -> file. Producers write binary records
// (record.hpp) into their own chunk and never lock per event; the writer thread formats them
// into lines (record_format.cpp), gathers the lines into members of about member_bytes,
// compresses them and appends them to the file.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/gzip_member.hpp"
#include "writer/record.hpp"

namespace dftrace::detail {

// A block of whole binary records (record.hpp) written by one thread. Bytes below
// `committed` never change until the writer recycles the chunk.
struct chunk {
  char *data = nullptr;  // 8-byte aligned
  uint32_t cap = 0;
  std::atomic<uint32_t> committed{0};
  // How far the writer has taken records out (time-based flushes take partial chunks).
  // Written by the writer; read by a producer that drops the chunk.
  std::atomic<uint32_t> drained{0};

  void reset() {
    committed.store(0, std::memory_order_relaxed);
    drained = 0;
  }
};

// A growable text buffer that formatting writes into directly (no zero-filling).
class text_buffer {
 public:
  char *room(size_t n) {
    if (size_ + n > cap_) grow(size_ + n);
    return data_.get() + size_;
  }
  void set_end(const char *end) { size_ = static_cast<size_t>(end - data_.get()); }
  void append(const char *p, size_t n) {
    std::memcpy(room(n), p, n);
    size_ += n;
  }
  void reserve(size_t n) {
    if (n > cap_) grow(n);
  }
  void clear() { size_ = 0; }
  const char *data() const { return data_.get(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  void grow(size_t need) {
    const size_t cap = std::max(need, cap_ * 2);
    std::unique_ptr<char[]> d(new char[cap]);
    if (size_) std::memcpy(d.get(), data_.get(), size_);
    data_ = std::move(d);
    cap_ = cap;
  }
  std::unique_ptr<char[]> data_;
  size_t size_ = 0, cap_ = 0;
};

// What one thread writes into. Owned by the thread's state; registered with the writer so
// that time-based flushes can take what it has committed.
struct thread_buffer {
  std::atomic<chunk *> current{nullptr};
  uint32_t pos = 0;  // producer's write position in current (== committed between events)
};

// What the writer is told; the runtime fills every field from the configuration, whose key
// table (src/config) is the one home of the defaults, so none is repeated here.
struct writer_settings {
  bool compress{};
  codec kind{};
  int level{};
  size_t member_bytes{};
  double flush_interval{};  // seconds
  size_t chunk_bytes{};
  size_t queue_bytes{};
  bool drop_when_full{};
  // Members compressed at once when a pass has several (the writer thread plus helpers);
  // helpers only run when there is a backlog.
  int compress_threads{};
  // How records become lines.
  line_format format;
  // Called once when the file is first needed: its path, and the header text ("[\n" and
  // the header lines) that must come first.
  std::function<std::string()> path;
  std::function<std::string()> header;
};

class writer {
 public:
  explicit writer(writer_settings settings);
  ~writer();

  // ---- producer side (any thread)
  // A fresh chunk of at least min_bytes.
  chunk *new_chunk(size_t min_bytes);
  // Hands over a chunk the producer will not touch again. May wait (block mode) or drop
  // the chunk's lines (drop mode) when more than queue_bytes are waiting.
  void submit(chunk *c);
  void register_buffer(thread_buffer *tb);
  // Hands over the buffer's current chunk and forgets the buffer.
  void unregister_buffer(thread_buffer *tb);
  // A metadata line (with its '\n'); it reaches the file before any event line that was
  // committed after this call returned.
  void push_meta(std::string line);

  // ---- control
  // Everything committed before the call is compressed and written when it returns.
  bool flush();
  // Final flush, then the text `tail()` returns (the end event and "]", which may use the
  // final counts), then close. Later calls do nothing.
  void finish(const std::function<std::string()> &tail);
  // Moves the file to a new path (the rank became known after it was opened).
  void relocate(const std::string &new_path);
  // From a fatal signal handler: write what can be written within about a second; with
  // `tail` (the process is about to die), then the text it renders (the end line and "]", no
  // allocation) as the last member, and the file is finished.
  void crash_flush(size_t (*tail)(char *buf, size_t cap) = nullptr);
  // fork() support: prepare locks everything, parent unlocks, child unlocks and forgets the
  // parent's data, file and thread (keeping `survivor`, the forking thread's buffer).
  void fork_prepare();
  void fork_parent();
  void fork_child(thread_buffer *survivor, int64_t new_pid);

  uint64_t events_written() const { return events_written_.load(std::memory_order_relaxed); }
  uint64_t events_dropped() const { return dropped_.load(std::memory_order_relaxed); }
  std::string path() const;
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  const writer_settings &settings() const { return settings_; }

 private:
  struct snap {
    chunk *c;
    uint32_t from, to;
  };
  void start_thread();
  void run();
  // One pass: metadata, handed-over chunks and (when steal) the committed part of every
  // thread's current chunk, into members. Caller holds io_mutex_.
  void cycle(bool steal);
  // The committed, not yet drained part of each thread's current chunk into snaps_ (registry
  // mutex held). `bounded` (the fatal-signal path): stop at snaps_'s capacity, never allocate.
  void take_snapshots(bool bounded);
  // The fatal-signal pass: no allocation, only tried locks; each piece of text becomes its
  // own member straight from where it lies. Caller holds io_mutex_.
  void crash_cycle();
  void crash_write(const char *p, size_t n, const member_stats &st);
  // The file's path and header, rendered ahead of time so that opening the file needs no
  // allocation (re-rendered when the rank becomes known before the file is opened).
  void render_header();
  std::string header_text_;
  std::string planned_path_;
  void append_lines(const char *p, size_t n, const member_stats &st, bool has_ts, bool events);
  // Formats the records in c->data[from, to) into the members being assembled.
  void append_records(const chunk *c, uint32_t from, uint32_t to);
  // The signal path's version: formats into crash_text_ and writes members as it fills.
  void crash_records(const chunk *c, uint32_t from, uint32_t to);
  text_buffer crash_text_;
  // Closes the member being assembled; it is compressed and written by write_members().
  void emit_member();
  // Compresses the closed members (in parallel when there are several) and writes them in
  // order. `parallel` is false on the signal path.
  void write_members(bool parallel);
  void helper_run(size_t k);
  bool open_file();
  bool write_all(const char *p, size_t n);
  void recycle(chunk *c);

  writer_settings settings_;
  member_encoder encoder_;
  member_encoder crash_encoder_;  // the signal path's own, with its buffer reserved

  std::mutex io_mutex_;  // one cycle at a time; guards the file and the member buffer
  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;  // wakes the writer
  std::condition_variable space_cv_;  // wakes blocked producers
  std::vector<chunk *> queue_;
  size_t queued_bytes_ = 0;
  bool stop_ = false;
  bool flush_wanted_ = false;

  std::mutex meta_mutex_;
  std::vector<std::string> meta_;
  size_t crash_meta_written_ = 0;  // meta_ lines a fatal-signal flush already wrote

  std::mutex registry_mutex_;
  std::vector<thread_buffer *> buffers_;

  std::mutex pool_mutex_;
  std::vector<chunk *> pool_;

  std::thread thread_;
  bool thread_started_ = false;  // guarded by queue_mutex_

  // Members of the current pass (io_mutex_): [0, closed_) are closed, the last one may be
  // being assembled. Buffers are reused from pass to pass.
  struct member {
    text_buffer text;
    member_stats stats;
    bool has_ts = false;
    uint64_t events = 0;
    std::vector<char> out;
    bool ok = false;
  };
  std::vector<std::unique_ptr<member>> members_;
  size_t open_ = 0;  // index of the member being assembled
  bool has_open_ = false;
  member &assembling();
  // Helper compressors: they take members with an index of the pass's stride.
  std::vector<std::thread> helpers_;
  std::vector<std::unique_ptr<member_encoder>> helper_encoders_;
  std::mutex helper_mutex_;
  std::condition_variable helper_cv_, helper_done_cv_;
  uint64_t helper_pass_ = 0;
  size_t helper_count_ = 0;  // members in the pass
  int helper_pending_ = 0;
  bool helper_stop_ = false;
  std::vector<char> out_;
  arg_index arg_index_;  // formatting scratch for events with many arguments (io_mutex_)
  std::vector<snap> snaps_;
  std::vector<chunk *> local_queue_;
  std::vector<std::string> local_meta_;

  int fd_ = -1;
  bool opened_ = false;
  bool finished_ = false;
  std::string path_;
  mutable std::mutex path_mutex_;
  std::atomic<bool> failed_{false};
  std::atomic<uint64_t> events_written_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace dftrace::detail
