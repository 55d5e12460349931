// trace_reader.hpp: opens a trace file, plans its gzip members, and delivers blocks of whole
// lines to a worker pool and then, in file order, to the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/gzip_member.hpp"

namespace dftrace::detail {

// Something wrong with the bytes of a file (not with its lines): a corrupt or truncated
// member, trailing garbage, a DT field that disagrees with its member.
struct read_issue {
  bool error = true;    // false: a warning (the data is still complete)
  uint64_t offset = 0;  // byte offset in the (compressed) file
  std::string message;
};

// One unit of planned work: a gzip member found through the DT chain, a slice of a plain
// file, or the sequential stream that covers the rest of a gzip file.
struct planned_part {
  enum kind_t : uint8_t { member, plain, stream } kind = member;
  uint64_t offset = 0;
  uint64_t length = 0;  // bytes of the file it covers (for stream: to the end of the file)
  dt_field dt{};        // valid for kind == member
};

// Results that workers attach to a block; each tool derives its own.
struct block_result {
  virtual ~block_result() = default;
};

// A block of whole lines. The text is either a view into the mapped file (plain files) or
// into buffer (inflated); moving the buffer keeps views valid. Only the last block of a file
// may end without '\n'.
struct text_block {
  size_t seq = 0;                      // position in the file's sequence of blocks
  const planned_part *part = nullptr;  // the member it came from (nullptr: a stream block)
  uint64_t in_offset = 0;              // first byte of the file it came from
  uint64_t in_bytes = 0;               // bytes of the file it consumed (progress)
  std::string_view text;
  std::unique_ptr<char[]> buffer;        // inflated text (not zero-filled first)
  bool partial_tail = false;             // the last line was cut short by damage, not by design
  std::vector<read_issue> issues;        // problems found while producing this block
  std::unique_ptr<block_result> result;  // set by the worker function

  // The text without a last line that damage cut short (that one is not a line).
  std::string_view whole_lines() const {
    if (!partial_tail) return text;
    const size_t nl = text.rfind('\n');
    return nl == std::string_view::npos ? std::string_view() : text.substr(0, nl + 1);
  }
};

// A mapped trace file and its plan. Not thread-safe to open; read-only afterwards, so any
// number of threads may read blocks from it.
class trace_file {
 public:
  trace_file() = default;
  ~trace_file();
  trace_file(const trace_file &) = delete;
  trace_file &operator=(const trace_file &) = delete;

  // Maps the file and plans it. Returns false with a one-line reason when the file cannot
  // be read at all (missing, unreadable, empty, or plainly not a trace).
  bool open(const std::string &path, std::string *why);

  const std::string &path() const { return path_; }
  uint64_t size() const { return size_; }
  const uint8_t *data() const { return data_; }
  const std::vector<planned_part> &parts() const { return parts_; }
  // Members found through their DT fields, and whether they cover the whole file.
  size_t dt_members() const { return dt_members_; }
  bool fully_described() const { return gzip_ && dt_members_ == parts_.size(); }
  // Gives back the memory of bytes [offset, offset + length) of a mapped file that the caller
  // has consumed (whole pages inside the range; the file is read again if they are touched),
  // so that reading a file larger than memory keeps the resident set flat. Never needed for
  // correctness; a no-op for files read into memory (pipes).
  void release(uint64_t offset, uint64_t length) const;
  // Issues found while planning (for example a DT chain that points past the end).
  const std::vector<read_issue> &plan_issues() const { return plan_issues_; }

 private:
  void plan();
  std::string path_;
  const uint8_t *data_ = nullptr;
  uint64_t size_ = 0;
  bool gzip_ = false;
  bool mapped_ = false;
  std::vector<char> heap_;  // used when mapping is not possible (pipes)
  std::vector<planned_part> parts_;
  size_t dt_members_ = 0;
  std::vector<read_issue> plan_issues_;
};

struct read_options {
  int threads = 2;                // workers (1: everything on the caller's thread)
  size_t block_bytes = 4u << 20;  // text per block for plain slices and streams
  size_t window = 16;             // blocks in flight ahead of the consumer
  // Parts for which this returns false are neither inflated nor delivered (time windows).
  std::function<bool(const planned_part &)> keep_part;
};

// Delivers every block of f: work(block) on a worker thread (any order, concurrently),
// then consume(block) on the calling thread in file order. Either function may be empty.
void for_each_block(const trace_file &f, const read_options &opt,
                    const std::function<void(text_block &)> &work,
                    const std::function<void(text_block &)> &consume);

// The most text that one gzip member, or one line of a stream, may inflate to (default
// 1 GiB). Beyond it the member (or the rest of the stream) is reported as damaged: a small
// hostile file cannot take unbounded memory. Settable for tests and fuzz targets.
size_t max_text_bytes();
void set_max_text_bytes(size_t n);

// Inflates one DT member into a new buffer. The DT field's uncompressed length is only a
// hint: it sizes the buffer when it is possible for the member's size, under the limit and
// equal to the gzip trailer's length; otherwise the member is inflated the slow way into a
// growing buffer, and a mismatch is reported as an issue. Returns false with an issue when
// the member is damaged; what could be inflated before the damage is still in the buffer.
bool inflate_member(const uint8_t *p, size_t n, const dt_field &dt, std::unique_ptr<char[]> &out,
                    size_t *len, std::vector<read_issue> &issues, uint64_t offset);

// Calls fn(line) for each line of text, without the '\n'. fn returns false to stop.
template <typename Fn>
inline void for_each_line(std::string_view text, Fn &&fn) {
  size_t pos = 0;
  while (pos < text.size()) {
    const void *nl = std::memchr(text.data() + pos, '\n', text.size() - pos);
    const size_t end =
        nl ? static_cast<size_t>(static_cast<const char *>(nl) - text.data()) : text.size();
    if (!fn(text.substr(pos, end - pos))) return;
    pos = end + 1;
  }
}

}  // namespace dftrace::detail
