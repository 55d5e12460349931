// block_reader.cpp: a file's parts delivered as blocks of whole lines, in file order: the
// members and slices inflated in one call each, the stream inflated step by step and cut into
// blocks, and the ordered worker pool that the tools run their per-block work on.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>

#include "base/thread_group.hpp"
#include "reader/stream_inflater.hpp"
#include "reader/trace_reader.hpp"

namespace dftrace::detail {

namespace {

// At pos, after a member's end: whether another member follows; when none does, what follows
// the gzip data (zero bytes or others) becomes an issue.
bool member_follows(const uint8_t *data, uint64_t size, uint64_t pos,
                    std::vector<read_issue> &issues) {
  if (pos >= size) return false;
  if (pos + 1 < size && data[pos] == 0x1f && data[pos + 1] == 0x8b) return true;
  bool zeros = true;
  for (uint64_t i = pos; i < size && zeros; ++i) zeros = data[i] == 0;
  issues.push_back({!zeros, pos,
                    std::to_string(size - pos) + (zeros ? " zero bytes" : " bytes") +
                        " after the end of the gzip data"});
  return false;
}

// The issue of an inflate that stopped at pos with r (stalled with room to write, or failed
// for `why`): the file ends inside its last member, or the data is corrupt.
read_issue stop_issue(stream_inflater::result r, uint64_t pos, uint64_t size,
                      const std::string &why) {
  if (r == stream_inflater::stalled && pos >= size)
    return {true, pos,
            "truncated final gzip member (the file ends inside it); the lines before it are kept"};
  return {true, pos,
          "corrupt gzip data (" +
              (r == stream_inflater::stalled ? std::string("no progress") : why) +
              "); the lines before it are kept"};
}

// A stream's blocks are smaller than the reader's block: DFTracer writes a file as one member
// of a few MiB, and the workers can only share it when it is cut into several blocks.
constexpr size_t k_stream_block_bytes = 512u << 10;

// A new buffer of cap bytes that starts with p[0, n).
std::unique_ptr<char[]> copy_of(const char *p, size_t n, size_t cap) {
  std::unique_ptr<char[]> b(new char[cap]);
  std::memcpy(b.get(), p, n);
  return b;
}

// Inflates the stream part sequentially and hands out blocks of whole lines.
void run_stream(const trace_file &f, const planned_part &part, size_t block_bytes, size_t first_seq,
                const std::function<void(std::unique_ptr<text_block>)> &emit) {
  block_bytes = std::min(block_bytes, k_stream_block_bytes);
  const uint8_t *data = f.data();
  const uint64_t size = f.size();
  size_t seq = first_seq;
  uint64_t mark = part.offset;
  std::unique_ptr<char[]> buf(new char[block_bytes]);
  size_t cap = block_bytes;
  size_t used = 0;
  std::vector<read_issue> issues;
  bool damaged = false;
  uint64_t pos = part.offset;

  auto flush = [&](size_t n, uint64_t in_pos, bool last) {
    auto b = std::make_unique<text_block>();
    b->seq = seq++;
    b->in_offset = mark;
    b->in_bytes = in_pos - mark;
    mark = in_pos;
    // The block takes the buffer; only the partial line after its last newline is copied.
    std::unique_ptr<char[]> rest = last ? nullptr : copy_of(buf.get() + n, used - n, cap);
    b->buffer = std::move(buf);
    b->text = std::string_view(b->buffer.get(), n);
    if (last) {
      b->issues = std::move(issues);
      b->partial_tail = damaged && n > 0 && b->text[n - 1] != '\n';
    }
    buf = std::move(rest);
    used -= n;
    emit(std::move(b));
  };

  stream_inflater inf;
  if (!inf.ok()) {
    issues.push_back({true, part.offset, "inflate initialisation failed"});
    flush(0, part.offset, true);
    return;
  }
  for (;;) {
    if (used == cap) {
      const void *nl = memrchr(buf.get(), '\n', used);
      if (!nl) {  // a line longer than a block: grow, up to the limit
        if (cap >= max_text_bytes()) {
          issues.push_back({true, pos,
                            "a line longer than " + std::to_string(max_text_bytes()) +
                                " bytes (the reader's limit); the rest of the file "
                                "is not read"});
          damaged = true;
          break;
        }
        std::unique_ptr<char[]> bigger(new char[cap * 2]);
        std::memcpy(bigger.get(), buf.get(), used);
        buf = std::move(bigger);
        cap *= 2;
      } else {
        flush(static_cast<size_t>(static_cast<const char *>(nl) - buf.get()) + 1, pos, false);
      }
    }
    size_t consumed = 0, produced = 0;
    std::string why;
    const auto r = inf.run(data + pos, static_cast<size_t>(size - pos), buf.get() + used,
                           cap - used, &consumed, &produced, &why);
    pos += consumed;
    used += produced;
    if (r == stream_inflater::member_end) {
      if (!member_follows(data, size, pos, issues)) break;
      inf.reset();
      continue;
    }
    if (r == stream_inflater::progress) continue;
    if (r == stream_inflater::stalled && used == cap) continue;  // the loop's top makes room
    issues.push_back(stop_issue(r, pos, size, why));
    damaged = true;
    break;
  }
  flush(used, damaged ? size : std::min<uint64_t>(pos, size), true);
}

// Builds the block of a member or plain slice (on a worker thread).
std::unique_ptr<text_block> make_part_block(const trace_file &f, const planned_part &part,
                                            size_t seq) {
  auto b = std::make_unique<text_block>();
  b->seq = seq;
  b->part = &part;
  b->in_offset = part.offset;
  b->in_bytes = part.length;
  if (part.kind == planned_part::plain) {
    b->text = std::string_view(reinterpret_cast<const char *>(f.data() + part.offset),
                               static_cast<size_t>(part.length));
    return b;
  }
  size_t len = 0;
  const bool ok = inflate_member(f.data() + part.offset, static_cast<size_t>(part.length), part.dt,
                                 b->buffer, &len, b->issues, part.offset);
  b->text = std::string_view(b->buffer.get(), len);
  if (!ok) b->partial_tail = len > 0 && b->text.back() != '\n';
  return b;
}

// The first block of a file must start (after blanks) with '[' or '{'; inflated data that
// does not is some other gzip file. Marks the block (text dropped, one issue) and says so.
bool looks_like_trace(text_block &b) {
  for (char c : b.text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '[' || c == '{') return true;
    break;
  }
  if (b.text.empty()) return true;  // nothing readable: the issues already say why
  b.issues.insert(b.issues.begin(),
                  {true, b.in_offset, "not a trace (the data inside is not JSON lines)"});
  b.text = std::string_view();
  b.partial_tail = false;
  return false;
}

}  // namespace

namespace {

// One thread delivers every block in order: the members and slices, then the stream.
void read_serial(const trace_file &f, const std::vector<const planned_part *> &tasks,
                 const planned_part *stream, size_t block_bytes,
                 const std::function<void(text_block &)> &work,
                 const std::function<void(text_block &)> &consume) {
  size_t seq = 0;
  bool abandoned = false;
  auto deliver = [&](text_block &b) {
    if (b.seq == 0 && !looks_like_trace(b)) abandoned = true;
    if (abandoned && b.seq != 0) return;
    if (work) work(b);
    if (consume) consume(b);
  };
  for (const planned_part *p : tasks) {
    auto b = make_part_block(f, *p, seq++);
    deliver(*b);
  }
  if (stream)
    run_stream(f, *stream, block_bytes, seq, [&](std::unique_ptr<text_block> b) { deliver(*b); });
}

// A pool of workers over one file's parts: each worker builds blocks (a member or slice each,
// or the stream, cut by one worker while the others work on what it produced) and does `work`
// on them; the caller's thread takes the finished blocks in order (next_in_order). At most
// `window` blocks are ahead of the one the caller waits for.
class parallel_read {
 public:
  parallel_read(const trace_file &f, const std::vector<const planned_part *> &tasks,
                const planned_part *stream, size_t block_bytes, size_t window,
                const std::function<void(text_block &)> &work)
      : f_(f),
        tasks_(tasks),
        stream_(stream),
        block_bytes_(block_bytes),
        window_(window),
        work_(work),
        stream_claimed_(stream == nullptr),
        stream_done_(stream == nullptr),
        produced_(tasks.size()) {}

  // A worker thread's loop: returns when nothing is left to build, or at stop(). An exception
  // (no memory, one of `work`) stops every worker and is raised by next_in_order().
  void worker() {
    try {
      build();
    } catch (const stopped &) {
    } catch (...) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!failure_) failure_ = std::current_exception();
      stopping_ = true;
      cv_.notify_all();
    }
  }

  // The workers return as soon as they can; no block is delivered after it.
  void stop() {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
    cv_.notify_all();
  }

  // The next block in file order, once its work is done; null when all were delivered.
  std::unique_ptr<text_block> next_in_order() {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] {
      return failure_ || done_.count(consumed_) ||
             (stream_done_ && pending_.empty() && consumed_ >= produced_ &&
              next_task_ >= tasks_.size());
    });
    if (failure_) std::rethrow_exception(failure_);
    auto it = done_.find(consumed_);
    if (it == done_.end()) return nullptr;
    std::unique_ptr<text_block> b = std::move(it->second);
    done_.erase(it);
    ++consumed_;
    cv_.notify_all();
    return b;
  }

  // The file's first block is not a trace: the blocks after it are dropped.
  bool abandoned() const { return abandoned_.load(); }

 private:
  struct stopped {};  // unwinds a worker that cuts the stream, at stop()

  void build() {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      if (stopping_) return;
      if (!pending_.empty()) {
        auto b = std::move(pending_.front());
        pending_.pop_front();
        lk.unlock();
        run_work(*b);
        finish(std::move(b));
        lk.lock();
        continue;
      }
      if (next_task_ < tasks_.size()) {
        if (next_task_ < consumed_ + window_) {
          const size_t t = next_task_++;
          lk.unlock();
          auto b = make_part_block(f_, *tasks_[t], t);
          run_work(*b);
          finish(std::move(b));
          lk.lock();
          continue;
        }
      } else if (!stream_claimed_) {
        stream_claimed_ = true;
        lk.unlock();
        run_stream(f_, *stream_, block_bytes_, tasks_.size(),
                   [this](std::unique_ptr<text_block> b) { queue_stream_block(std::move(b)); });
        lk.lock();
        stream_done_ = true;
        cv_.notify_all();
        continue;
      } else if (stream_done_ && pending_.empty()) {
        return;
      }
      cv_.wait(lk);
    }
  }

  void run_work(text_block &b) {
    if (b.seq == 0 && !looks_like_trace(b)) abandoned_ = true;
    if (work_) work_(b);
  }
  void finish(std::unique_ptr<text_block> b) {
    std::lock_guard<std::mutex> lk(mu_);
    done_.emplace(b->seq, std::move(b));
    cv_.notify_all();
  }
  // A block the stream produced waits, within the window, for a worker.
  void queue_stream_block(std::unique_ptr<text_block> b) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return stopping_ || b->seq < consumed_ + window_; });
    if (stopping_) throw stopped{};
    produced_ = b->seq + 1;
    pending_.push_back(std::move(b));
    cv_.notify_all();
  }

  const trace_file &f_;
  const std::vector<const planned_part *> &tasks_;
  const planned_part *stream_;
  const size_t block_bytes_, window_;
  const std::function<void(text_block &)> &work_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> abandoned_{false};
  bool stopping_ = false;
  std::exception_ptr failure_;  // the first exception of a worker
  size_t next_task_ = 0;
  bool stream_claimed_, stream_done_;
  size_t produced_;  // stream blocks get seq numbers from tasks_.size()
  size_t consumed_ = 0;
  std::deque<std::unique_ptr<text_block>> pending_;  // stream blocks waiting for work
  std::map<size_t, std::unique_ptr<text_block>> done_;
};

}  // namespace

void for_each_block(const trace_file &f, const read_options &opt,
                    const std::function<void(text_block &)> &work,
                    const std::function<void(text_block &)> &consume) {
  // The parts to deliver: members/slices first, then at most one stream (always last).
  std::vector<const planned_part *> tasks;
  const planned_part *stream = nullptr;
  for (const planned_part &p : f.parts()) {
    if (p.kind == planned_part::stream) {
      stream = &p;
    } else if (!opt.keep_part || opt.keep_part(p)) {
      tasks.push_back(&p);
    }
  }
  const size_t block_bytes = std::max<size_t>(opt.block_bytes, 4096);
  if (opt.threads <= 1) {
    read_serial(f, tasks, stream, block_bytes, work, consume);
    return;
  }
  parallel_read reading(f, tasks, stream, block_bytes, std::max<size_t>(opt.window, 2), work);
  // As many workers as the system gives (a process or memory limit may refuse some); when it
  // gives fewer than two (the one cutting a stream waits for another to take its blocks), the
  // caller's thread reads alone. On the way out, an exception included (of `consume`, or a
  // worker's raised here), the workers are stopped and joined.
  thread_group pool([&reading] { reading.stop(); });
  for (int i = 0; i < std::max(2, opt.threads); ++i)
    if (!pool.start([&reading] { reading.worker(); })) break;
  if (pool.size() < 2) {
    reading.stop();
    pool.join();
    read_serial(f, tasks, stream, block_bytes, work, consume);
    return;
  }
  while (std::unique_ptr<text_block> b = reading.next_in_order()) {
    if (reading.abandoned() && b->seq != 0) continue;  // not a trace: drop the rest
    if (consume) consume(*b);
  }
  pool.join();
}

}  // namespace dftrace::detail
