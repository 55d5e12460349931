// member_stream.hpp: whole lines into self-describing gzip members (a DT field each) of about
// member_bytes, compressed on a compressor_pool and appended in order to an output_file while
// the caller goes on with the next lines. The tools write their traces through it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "output/compressor_pool.hpp"
#include "output/member.hpp"
#include "output/output_file.hpp"

namespace dftrace::detail {

class member_stream {
 public:
  // The file at path is created or truncated. A path ending in .gz gets gzip members; any
  // other, the lines as plain text. `threads` compress (one: the calling thread does it all).
  // The codec is the best one built in, at DFTRACE_TOOL_LEVEL when set.
  member_stream(const std::string &path, int threads, size_t member_bytes = 1u << 20);
  ~member_stream();
  member_stream(const member_stream &) = delete;
  member_stream &operator=(const member_stream &) = delete;

  bool ok() const { return ok_.load(std::memory_order_acquire); }
  // "PATH: reason" once ok() is false.
  std::string error() const;
  // Appends one line (without '\n'); ts_ns (epoch nanoseconds) widens the member's DT range
  // (epoch microseconds) when has_ts.
  void line(std::string_view text, bool has_ts, uint64_t ts_ns);
  // The same in two steps, for callers that build the line in place: append its text to
  // open_line(), then call close_line().
  std::string &open_line() { return line_; }
  void close_line(bool has_ts, uint64_t ts_ns);
  // Writes what is left and closes the file; false (error() says why) if anything failed, no
  // memory for the last batch included. The destructor calls it.
  bool finish() noexcept;

 private:
  // Members filled by the caller, then compressed and written by the flusher. The caller waits
  // only when max_pending_ batches wait already.
  struct batch final : member_list {
    std::vector<std::unique_ptr<text_member>> members;
    size_t count = 0;  // closed members
    size_t closed() const override { return count; }
    text_member &at(size_t i) override { return *members[i]; }
  };
  text_member &current();
  void end_line(bool has_ts, uint64_t ts_ns);
  void hand_over();            // the filled batch to the flusher (or written here)
  void write_batch(batch &b);  // compressed and appended in order
  void flush_loop();           // the flusher thread
  void fail(const std::string &why);
  void fail(const std::exception &e) noexcept;  // "PATH: what", or no text without memory

  std::string path_;
  bool gz_;
  size_t member_bytes_;
  size_t batch_members_;
  output_file file_;
  std::unique_ptr<compressor_pool> pool_;
  std::unique_ptr<batch> fill_;                 // being filled by the caller
  std::deque<std::unique_ptr<batch>> pending_;  // handed over, in file order
  std::vector<std::unique_ptr<batch>> spare_;   // written, to be filled again
  size_t max_pending_;
  bool open_member_ = false;  // fill_'s member at `count` holds lines
  std::string line_;
  std::atomic<bool> ok_{true};
  std::string error_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool finished_ = false;
  std::thread flusher_;
};

}  // namespace dftrace::detail
