// member_stream.cpp: lines into members, compressed and written in order behind the caller.
#include "output/member_stream.hpp"

#include <algorithm>
#include <cstdlib>

namespace dftrace::detail {

namespace {

bool ends_with_gz(const std::string &p) {
  return p.size() >= 3 && p.compare(p.size() - 3, 3, ".gz") == 0;
}

// DFTRACE_TOOL_LEVEL: the deflate level of written traces (default: the codec's default).
int tool_level(codec c) {
  if (const char *e = std::getenv("DFTRACE_TOOL_LEVEL")) return std::atoi(e);
  return codec_default_level(c);
}

}  // namespace

member_stream::member_stream(const std::string &path, int threads, size_t member_bytes)
    : path_(path), gz_(ends_with_gz(path)), member_bytes_(member_bytes) {
  threads = std::max(1, threads);
  batch_members_ = static_cast<size_t>(threads);
  max_pending_ = 3;
  fill_ = std::make_unique<batch>();
  std::string why;
  if (!file_.create(path, &why)) {
    fail(why);
    return;
  }
  if (gz_) {
    const codec c = codec_auto();
    pool_ = std::make_unique<compressor_pool>(c, tool_level(c), threads);
  }
  if (threads > 1) flusher_ = std::thread([this] { flush_loop(); });
}

member_stream::~member_stream() { finish(); }

void member_stream::fail(const std::string &why) {
  if (!ok_.load(std::memory_order_relaxed)) return;
  error_ = why;
  ok_.store(false, std::memory_order_release);
}

void member_stream::fail(const std::exception &e) noexcept {
  try {
    fail(path_ + ": " + e.what());
  } catch (...) {  // no memory for the text: error() says so when asked
    ok_.store(false, std::memory_order_release);
  }
}

std::string member_stream::error() const {
  if (ok() || !error_.empty()) return error_;
  return path_ + ": out of memory";
}

text_member &member_stream::current() {
  batch &b = *fill_;
  if (!open_member_) {
    if (b.members.size() <= b.count) {
      b.members.push_back(std::make_unique<text_member>());
      b.members.back()->text.reserve(member_bytes_ + 4096);
    }
    text_member &m = *b.members[b.count];
    m.text.clear();
    m.stats = member_stats{};
    m.has_ts = false;
    m.ok = false;
    open_member_ = true;
  }
  return *b.members[b.count];
}

void member_stream::line(std::string_view text, bool has_ts, uint64_t ts_ns) {
  current().text.append(text.data(), text.size());
  end_line(has_ts, ts_ns);
}

void member_stream::close_line(bool has_ts, uint64_t ts_ns) {
  current().text.append(line_.data(), line_.size());
  line_.clear();
  end_line(has_ts, ts_ns);
}

void member_stream::end_line(bool has_ts, uint64_t ts_ns) {
  text_member &m = current();
  m.text.append("\n", 1);
  ++m.stats.lines;
  if (has_ts) m.stats.add_ts(ts_ns / 1000, m.has_ts);
  if (m.text.size() < member_bytes_) return;
  open_member_ = false;
  if (++fill_->count == batch_members_) hand_over();
}

void member_stream::hand_over() {
  if (open_member_) {
    open_member_ = false;
    ++fill_->count;
  }
  if (fill_->count == 0) return;
  if (!flusher_.joinable()) {
    write_batch(*fill_);
    return;
  }
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return pending_.size() < max_pending_; });
  // The next batch first: when there is no memory for it, fill_ stays whole and unsent.
  std::unique_ptr<batch> next;
  if (spare_.empty()) {
    next = std::make_unique<batch>();
  } else {
    next = std::move(spare_.back());
    spare_.pop_back();
  }
  pending_.push_back(std::move(fill_));
  fill_ = std::move(next);
  cv_.notify_all();
}

void member_stream::write_batch(batch &b) {
  if (ok() && gz_) pool_->compress(b, true);
  for (size_t i = 0; i < b.count && ok(); ++i) {
    const text_member &m = *b.members[i];
    if (gz_ && !m.ok)
      fail(path_ + ": compression failed");
    else if (!(gz_ ? file_.write(m.out.data(), m.out.size())
                   : file_.write(m.text.data(), m.text.size())))
      fail(file_.failure());
  }
  b.count = 0;
}

void member_stream::flush_loop() {
  for (;;) {
    batch *b;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !pending_.empty() || stop_; });
      if (pending_.empty()) return;
      b = pending_.front().get();  // stays at the front (the caller never touches it)
    }
    write_batch(*b);
    std::lock_guard<std::mutex> lock(mu_);
    spare_.push_back(std::move(pending_.front()));
    pending_.pop_front();
    cv_.notify_all();
  }
}

bool member_stream::finish() noexcept {
  if (finished_) return ok();
  finished_ = true;
  // The flusher is stopped and the file closed whatever happens to the last batch: an
  // exception here would leave the flusher running into the destructor (std::terminate).
  try {
    hand_over();
  } catch (const std::exception &e) {
    fail(e);
  }
  if (flusher_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      cv_.notify_all();
    }
    flusher_.join();
  }
  if (file_.is_open()) file_.close();
  return ok();
}

}  // namespace dftrace::detail
