// writer.cpp: the background writer: gathering chunks into members, compressing, writing.
#include "writer/writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>

#include "base/clock.hpp"
#include "base/log.hpp"

namespace dftrace::detail {

namespace {

// try_lock with a deadline, for the signal path: never wait forever on a lock that the
// interrupted code may hold.
bool lock_within(std::mutex &m, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!m.try_lock()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

// Creates every missing directory of the file's parent. Works in a stack buffer: it may run
// in a fatal-signal handler, where allocating is not safe.
bool make_parent_dirs(const std::string &path) {
  char buf[4096];
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return true;
  if (slash >= sizeof buf) {
    errno = ENAMETOOLONG;
    return false;
  }
  std::memcpy(buf, path.data(), slash);
  buf[slash] = '\0';
  for (size_t i = 1; i <= slash; ++i) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    const char saved = buf[i];
    buf[i] = '\0';
    if (::mkdir(buf, 0755) != 0 && errno != EEXIST) return false;
    buf[i] = saved;
  }
  return true;
}

thread_local bool t_is_writer = false;

// Creates the file only if nothing is at `path`: no symbolic link is followed and no file this
// process did not create is truncated (a link planted in a shared /tmp must not make the trace
// overwrite its target).
int create_new(const char *path) {
  return ::open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
}

// `path` with ".k" before its ".pfw" (or at its end) into buf; false when it does not fit. No
// allocation (the fatal-signal path may open the file).
bool fresh_name(const std::string &path, int k, char *buf, size_t cap) {
  const size_t slash = path.rfind('/');
  size_t cut = path.rfind(".pfw");
  if (cut == std::string::npos || (slash != std::string::npos && cut < slash)) cut = path.size();
  char num[16];
  int len = 0;
  char tmp[16];
  for (unsigned v = static_cast<unsigned>(k); v; v /= 10)
    tmp[len++] = static_cast<char>('0' + v % 10);
  for (int i = 0; i < len; ++i) num[i] = tmp[len - 1 - i];
  const size_t need = path.size() + 1 + static_cast<size_t>(len) + 1;
  if (need > cap) return false;
  std::memcpy(buf, path.data(), cut);
  buf[cut] = '.';
  std::memcpy(buf + cut + 1, num, static_cast<size_t>(len));
  std::memcpy(buf + cut + 1 + len, path.data() + cut, path.size() - cut);
  buf[need - 1] = '\0';
  return true;
}

// Renames without replacing anything at `to`; false with errno EEXIST when something is there.
bool rename_new(const char *from, const char *to) {
  if (::renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) return true;
  if (errno != EINVAL && errno != ENOSYS) return false;
  // A file system without RENAME_NOREPLACE: link (fails on EEXIST) then unlink.
  if (::link(from, to) != 0) return false;
  ::unlink(from);
  return true;
}

}  // namespace

writer::writer(writer_settings settings)
    : settings_(std::move(settings)),
      encoder_(settings_.kind, settings_.level),
      crash_encoder_(settings_.kind, settings_.level) {
  out_.reserve(settings_.member_bytes / 2);
  crash_encoder_.reserve(settings_.member_bytes + 4096);
  crash_text_.reserve(settings_.member_bytes + 4096);
  snaps_.reserve(64);
  local_queue_.reserve(256);
  settings_.format.index = &arg_index_;
}

writer::~writer() {
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    stop_ = true;
  }
  queue_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard<std::mutex> lock(helper_mutex_);
    helper_stop_ = true;
  }
  helper_cv_.notify_all();
  for (auto &h : helpers_)
    if (h.joinable()) h.join();
}

writer::member &writer::assembling() {
  if (!has_open_) {
    if (open_ == members_.size()) {
      members_.push_back(std::make_unique<member>());
      members_.back()->text.reserve(settings_.member_bytes + 4096);
    }
    member &m = *members_[open_];
    m.text.clear();
    m.stats = member_stats{};
    m.has_ts = false;
    m.events = 0;
    m.ok = false;
    has_open_ = true;
  }
  return *members_[open_];
}

chunk *writer::new_chunk(size_t min_bytes) {
  if (min_bytes <= settings_.chunk_bytes) {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    if (!pool_.empty()) {
      chunk *c = pool_.back();
      pool_.pop_back();
      return c;
    }
  }
  auto *c = new chunk;
  c->cap = static_cast<uint32_t>(std::max(min_bytes, settings_.chunk_bytes));
  c->data = static_cast<char *>(::operator new(c->cap));  // new's alignment is at least 16
  return c;
}

void writer::recycle(chunk *c) {
  if (c->cap != settings_.chunk_bytes) {  // an oversized chunk for one huge line
    ::operator delete(c->data);
    delete c;
    return;
  }
  c->reset();
  std::lock_guard<std::mutex> lock(pool_mutex_);
  pool_.push_back(c);
}

void writer::start_thread() {
  // queue_mutex_ held by the caller
  if (thread_started_ || stop_) return;
  thread_started_ = true;
  {
    // Render the file's path and header now, so that a crash can open the file without
    // allocating. (io_mutex_ before queue_mutex_ is the usual order; here queue_mutex_ is
    // held, so only try.)
    if (io_mutex_.try_lock()) {
      if (planned_path_.empty() && !opened_) render_header();
      io_mutex_.unlock();
    }
  }
  thread_ = std::thread([this] { run(); });
}

void writer::submit(chunk *c) {
  const size_t bytes = c->committed.load(std::memory_order_relaxed);
  std::unique_lock<std::mutex> lock(queue_mutex_);
  start_thread();
  if (queued_bytes_ + bytes > settings_.queue_bytes && !stop_) {
    if (settings_.drop_when_full) {
      lock.unlock();
      uint64_t n = 0;  // the records not written yet
      for (uint32_t off = c->drained.load(std::memory_order_relaxed); off < bytes;
           off += reinterpret_cast<const rec *>(c->data + off)->size)
        ++n;
      dropped_.fetch_add(n, std::memory_order_relaxed);
      recycle(c);
      return;
    }
    queue_cv_.notify_one();
    space_cv_.wait(lock, [&] { return queued_bytes_ + bytes <= settings_.queue_bytes || stop_; });
  }
  queue_.push_back(c);
  queued_bytes_ += bytes;
  // Records are about half the size of their lines: wake the writer at half a member.
  if (queued_bytes_ >= settings_.member_bytes / 2) queue_cv_.notify_one();
}

void writer::register_buffer(thread_buffer *tb) {
  {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    buffers_.push_back(tb);
    // Room for one snapshot per thread, so that the signal path never grows it.
    if (snaps_.capacity() < buffers_.size() + 8) {
      std::lock_guard<std::mutex> io(io_mutex_);
      snaps_.reserve(2 * buffers_.size() + 8);
    }
  }
  std::lock_guard<std::mutex> lock(queue_mutex_);
  start_thread();
}

void writer::unregister_buffer(thread_buffer *tb) {
  chunk *c;
  {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    for (size_t i = 0; i < buffers_.size(); ++i) {
      if (buffers_[i] == tb) {
        buffers_.erase(buffers_.begin() + static_cast<long>(i));
        break;
      }
    }
    // Under the registry lock, so that no steal is looking at it while it moves.
    c = tb->current.exchange(nullptr);
  }
  if (c) submit(c);
}

void writer::push_meta(std::string line) {
  std::lock_guard<std::mutex> lock(meta_mutex_);
  meta_.push_back(std::move(line));
}

std::string writer::path() const {
  std::lock_guard<std::mutex> lock(path_mutex_);
  return path_;
}

void writer::run() {
  t_is_writer = true;
  using clock = std::chrono::steady_clock;
  const auto interval = std::chrono::duration_cast<clock::duration>(
      std::chrono::duration<double>(settings_.flush_interval));
  auto next_steal = clock::now() + interval;
  tick_map *const tm =
      settings_.format.ticks && settings_.format.ticks->tsc() ? settings_.format.ticks : nullptr;
  std::unique_lock<std::mutex> lock(queue_mutex_);
  while (!stop_) {
    // Tick anchors keep their schedule (1 ms, 2 ms, ... 1 s apart) even when no event comes,
    // so that the tick map's slope is measured over short spans first (base/clock.hpp).
    auto wake = next_steal;
    if (tm) {
      const auto due = clock::now() + std::chrono::nanoseconds(tm->ns_until_due());
      if (due < wake) wake = due;
    }
    const bool woken = queue_cv_.wait_until(lock, wake, [&] {
      return stop_ || queued_bytes_ >= settings_.member_bytes / 2 || flush_wanted_;
    });
    if (stop_) break;
    if (tm && !woken && clock::now() < next_steal) {  // only an anchor is due
      lock.unlock();
      {
        std::lock_guard<std::mutex> io(io_mutex_);
        if (!finished_) tm->anchor();
      }
      lock.lock();
      continue;
    }
    const bool steal = clock::now() >= next_steal;
    lock.unlock();
    {
      std::lock_guard<std::mutex> io(io_mutex_);
      cycle(steal);
    }
    if (steal) next_steal = clock::now() + interval;
    lock.lock();
  }
}

void writer::append_lines(const char *p, size_t n, const member_stats &st, bool has_ts,
                          bool events) {
  if (n == 0) return;
  if (has_open_ && !members_[open_]->text.empty() &&
      members_[open_]->text.size() + n > settings_.member_bytes)
    emit_member();
  member &m = assembling();
  m.text.append(p, n);
  m.stats.lines += st.lines;
  if (events) m.events += st.lines;
  if (has_ts) m.stats.add_ts(st.ts_min, st.ts_max, m.has_ts);
}

void writer::append_records(const chunk *c, uint32_t from, uint32_t to) {
  const line_format &f = settings_.format;
  uint32_t off = from;
  while (off < to) {
    const rec &r = *reinterpret_cast<const rec *>(c->data + off);
    off += r.size;
    const size_t bound = line_bound(r);
    if (has_open_ && !members_[open_]->text.empty() &&
        members_[open_]->text.size() + bound > settings_.member_bytes)
      emit_member();
    member &m = assembling();
    if (r.use_args_len > arg_index::k_small * sizeof(raw_arg) && !r.use_args_json)
      arg_index_.fit(std::string_view(r.use_args(), r.use_args_len),
                     true);  // linear time for many arguments
    uint64_t ts;
    m.text.set_end(format_record(f, r, m.text.room(bound), &ts));
    ++m.stats.lines;
    if (r.type == rec_type::mark) continue;  // a metadata line: no event, no "ts"
    ++m.events;
    m.stats.add_ts(ts, m.has_ts);
  }
}

void writer::take_snapshots(bool bounded) {
  for (thread_buffer *tb : buffers_) {
    if (bounded && snaps_.size() == snaps_.capacity()) break;
    chunk *c = tb->current.load(std::memory_order_acquire);
    if (!c) continue;
    const uint32_t end = c->committed.load(std::memory_order_acquire);
    if (end > c->drained) {
      snaps_.push_back({c, c->drained, end});
      c->drained = end;
    }
  }
}

void writer::cycle(bool steal) {
  // 1. chunks handed over, in order
  local_queue_.clear();
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    local_queue_.swap(queue_);
    queued_bytes_ = 0;
    flush_wanted_ = false;
  }
  space_cv_.notify_all();
  // 2. the committed part of each thread's current chunk
  snaps_.clear();
  if (steal) {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    take_snapshots(false);
  }
  // 2b. a tick anchor read after every record taken above was committed: the tick map never
  //     changes where those records' ticks fall (base/clock.hpp)
  if (settings_.format.ticks) settings_.format.ticks->anchor();
  // 3. metadata: taken after the event lines were observed, so every definition that an
  //    observed event uses is in this batch or an earlier one.
  local_meta_.clear();
  {
    std::lock_guard<std::mutex> lock(meta_mutex_);
    local_meta_.swap(meta_);
    // lines already written by a fatal-signal flush that the process survived
    local_meta_.erase(local_meta_.begin(),
                      local_meta_.begin() + static_cast<long>(crash_meta_written_));
    crash_meta_written_ = 0;
  }
  for (const std::string &line : local_meta_) {
    member_stats st;
    st.lines = 1;
    append_lines(line.data(), line.size(), st, false, false);
  }
  for (chunk *c : local_queue_) {
    const uint32_t end = c->committed.load(std::memory_order_acquire);
    if (end > c->drained) append_records(c, c->drained, end);
    recycle(c);
  }
  for (const snap &sn : snaps_) append_records(sn.c, sn.from, sn.to);
  if (has_open_) emit_member();
  write_members(true);
  if (arg_index_.slots.size() > (size_t{1} << 16)) arg_index_ = arg_index{};  // after a huge event
}

void writer::crash_write(const char *p, size_t n, const member_stats &st) {
  if (n == 0 || fd_ < 0 || failed_) return;
  const char *m;
  size_t len;
  if (settings_.compress) {
    if (crash_encoder_.encode_in_place(p, n, st, &m, &len)) write_all(m, len);
  } else {
    write_all(p, n);
  }
}

void writer::crash_records(const chunk *c, uint32_t from, uint32_t to) {
  const line_format &f = settings_.format;
  member_stats st;
  bool has_ts = false;
  uint64_t events = 0;
  auto flush_text = [&] {
    if (!crash_text_.empty()) {
      crash_write(crash_text_.data(), crash_text_.size(), st);
      if (!failed_)
        events_written_.fetch_add(events, std::memory_order_relaxed);  // the end line's count
    }
    crash_text_.clear();
    st = member_stats{};
    has_ts = false;
    events = 0;
  };
  uint32_t off = from;
  while (off < to) {
    const rec &r = *reinterpret_cast<const rec *>(c->data + off);
    off += r.size;
    const size_t bound = line_bound(r);
    if (!crash_text_.empty() && crash_text_.size() + bound > settings_.member_bytes) flush_text();
    uint64_t ts;
    crash_text_.set_end(format_record(f, r, crash_text_.room(bound), &ts));
    ++st.lines;
    if (r.type == rec_type::mark) continue;  // a metadata line: no "ts"
    ++events;
    st.add_ts(ts, has_ts);
  }
  flush_text();
}

void writer::crash_cycle() {
  const auto limit = std::chrono::milliseconds(200);
  if (!opened_ && !failed_ && open_file())
    crash_write(header_text_.data(), header_text_.size(),
                scan_member_stats(header_text_.data(), header_text_.size()));
  // The same order as a regular pass: events observed first, then the metadata they need,
  // which is written before them.
  snaps_.clear();
  bool have_queue = false, have_snaps = false;
  if (lock_within(queue_mutex_, limit)) {
    local_queue_.swap(queue_);
    have_queue = true;
    queue_mutex_.unlock();
  }
  if (lock_within(registry_mutex_, limit)) {
    take_snapshots(true);  // never grow here
    have_snaps = true;
    registry_mutex_.unlock();
  }
  if (lock_within(meta_mutex_, limit)) {
    // Freeing the lines here would call the allocator: leave them, remember they are written.
    for (size_t i = crash_meta_written_; i < meta_.size(); ++i)
      crash_write(meta_[i].data(), meta_[i].size(), member_stats{1, 0, 0});
    crash_meta_written_ = meta_.size();
    meta_mutex_.unlock();
  }
  if (have_queue) {
    for (chunk *c : local_queue_) {
      const uint32_t end = c->committed.load(std::memory_order_acquire);
      if (end > c->drained) crash_records(c, c->drained, end);
    }
    local_queue_.clear();
  }
  if (have_snaps)
    for (const snap &sn : snaps_) crash_records(sn.c, sn.from, sn.to);
}

void writer::render_header() {
  // io_mutex_ held
  if (opened_) return;
  planned_path_ = settings_.path ? settings_.path() : std::string();  // the runtime always sets it
  header_text_ = settings_.header ? settings_.header() : std::string("[\n");
  std::lock_guard<std::mutex> lock(path_mutex_);
  path_.reserve(planned_path_.size() + 16);  // room for a fresh name (open_file)
}

bool writer::open_file() {
  if (opened_) return fd_ >= 0;
  opened_ = true;
  if (planned_path_.empty()) render_header();
  const std::string &p = planned_path_;
  {
    std::lock_guard<std::mutex> lock(path_mutex_);
    path_.reserve(p.size() + 16);
    path_.assign(p);  // (allocation-free when reserved; only the signal path cares)
  }
  if (!make_parent_dirs(p)) {
    log(log_level::error,
        "can not create the directory of '%s': %s; tracing continues without a file", p.c_str(),
        std::strerror(errno));
    failed_ = true;
    return false;
  }
  fd_ = create_new(p.c_str());
  if (fd_ < 0 && errno == EEXIST) {
    // Something is already there (a file from elsewhere, or a symbolic link): leave it alone and
    // take the first free name "<name>.1.pfw.gz", "<name>.2.pfw.gz", ...
    char fresh[4096];
    for (int k = 1; k < 1000; ++k) {
      if (!fresh_name(p, k, fresh, sizeof fresh)) break;
      fd_ = create_new(fresh);
      if (fd_ >= 0) {
        log(log_level::warn,
            "'%s' already exists (a file or symbolic link this process did not create); "
            "leaving it untouched and writing '%s'",
            p.c_str(), fresh);
        std::lock_guard<std::mutex> lock(path_mutex_);
        path_.assign(fresh);
        break;
      }
      if (errno != EEXIST) break;
    }
  }
  if (fd_ < 0) {
    log(log_level::error, "can not open '%s' for writing: %s; tracing continues without a file",
        p.c_str(), std::strerror(errno));
    failed_ = true;
    return false;
  }
  return true;
}

bool writer::write_all(const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      log(log_level::error,
          "writing '%s' failed: %s; later events are counted as dropped, the file keeps every "
          "member written before",
          path().c_str(), std::strerror(errno));
      failed_ = true;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

void writer::emit_member() {
  if (!has_open_) return;
  has_open_ = false;
  ++open_;
}

void writer::helper_run(size_t k) {
  // Helper k of n compresses members k+1, k+1+(n+1), ... of each pass.
  uint64_t seen = 0;
  for (;;) {
    size_t count;
    {
      std::unique_lock<std::mutex> lock(helper_mutex_);
      helper_cv_.wait(lock, [&] { return helper_stop_ || helper_pass_ != seen; });
      if (helper_stop_) return;
      seen = helper_pass_;
      count = helper_count_;
    }
    const size_t stride = helpers_.size() + 1;
    for (size_t i = k + 1; i < count; i += stride) {
      member &m = *members_[i];
      m.out.clear();
      m.ok = helper_encoders_[k]->encode(m.text.data(), m.text.size(), m.stats, m.out);
    }
    {
      std::lock_guard<std::mutex> lock(helper_mutex_);
      --helper_pending_;
    }
    helper_done_cv_.notify_all();
  }
}

void writer::write_members(bool parallel) {
  const size_t count = open_;
  if (count == 0) return;
  if (!opened_ && !failed_) {
    if (planned_path_.empty()) render_header();
    if (open_file()) {
      // The header is its own first member.
      const std::string &header = header_text_;
      member_stats hs = scan_member_stats(header.data(), header.size());
      if (settings_.compress) {
        out_.clear();
        if (encoder_.encode(header.data(), header.size(), hs, out_))
          write_all(out_.data(), out_.size());
      } else {
        write_all(header.data(), header.size());
      }
    }
  }
  const bool writing = fd_ >= 0 && !failed_;
  if (writing && settings_.compress) {
    const int want_helpers = std::max(0, settings_.compress_threads - 1);
    size_t stride = 1;
    if (parallel && count > 1 && want_helpers > 0) {
      if (helpers_.empty()) {
        std::lock_guard<std::mutex> lock(helper_mutex_);
        for (int h = 0; h < want_helpers; ++h)
          helper_encoders_.push_back(
              std::make_unique<member_encoder>(settings_.kind, settings_.level));
        for (int h = 0; h < want_helpers; ++h)
          helpers_.emplace_back([this, h] { helper_run(static_cast<size_t>(h)); });
      }
      stride = helpers_.size() + 1;
      std::lock_guard<std::mutex> lock(helper_mutex_);
      helper_count_ = count;
      helper_pending_ = static_cast<int>(helpers_.size());
      ++helper_pass_;
    }
    if (stride > 1) helper_cv_.notify_all();
    for (size_t i = 0; i < count; i += stride) {
      member &m = *members_[i];
      m.out.clear();
      m.ok = encoder_.encode(m.text.data(), m.text.size(), m.stats, m.out);
    }
    if (stride > 1) {
      std::unique_lock<std::mutex> lock(helper_mutex_);
      helper_done_cv_.wait(lock, [&] { return helper_pending_ == 0; });
    }
  }
  for (size_t i = 0; i < count; ++i) {
    member &m = *members_[i];
    bool ok = false;
    if (fd_ >= 0 && !failed_) {
      if (settings_.compress)
        ok = m.ok && write_all(m.out.data(), m.out.size());
      else
        ok = write_all(m.text.data(), m.text.size());
    }
    if (ok) {
      events_written_.fetch_add(m.events, std::memory_order_relaxed);
    } else {
      dropped_.fetch_add(m.events, std::memory_order_relaxed);
    }
  }
  open_ = 0;
}

bool writer::flush() {
  if (t_is_writer) return false;
  std::lock_guard<std::mutex> io(io_mutex_);
  if (finished_) return false;
  cycle(true);
  return !failed_;
}

void writer::finish(const std::function<std::string()> &tail_fn) {
  {
    std::lock_guard<std::mutex> io(io_mutex_);
    if (finished_) return;
    cycle(true);
    const std::string tail = tail_fn();
    const member_stats ts = scan_member_stats(tail.data(), tail.size());
    append_lines(tail.data(), tail.size(), ts, (ts.ts_min | ts.ts_max) != 0, false);
    emit_member();
    write_members(true);
    finished_ = true;
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    stop_ = true;
  }
  queue_cv_.notify_all();
  space_cv_.notify_all();
  if (thread_.joinable() && std::this_thread::get_id() != thread_.get_id()) thread_.join();
}

void writer::relocate(const std::string &new_path) {
  std::lock_guard<std::mutex> io(io_mutex_);
  if (!opened_) {  // not opened yet: plan the new name and header
    if (!planned_path_.empty()) render_header();
    return;
  }
  std::lock_guard<std::mutex> lock(path_mutex_);
  if (fd_ < 0 || new_path == path_) return;
  if (rename_new(path_.c_str(), new_path.c_str())) {
    path_ = new_path;
  } else if (errno == EEXIST) {
    char fresh[4096];
    for (int k = 1; k < 1000; ++k) {
      if (!fresh_name(new_path, k, fresh, sizeof fresh)) break;
      if (rename_new(path_.c_str(), fresh)) {
        log(log_level::warn,
            "'%s' already exists (a file or symbolic link this process did not create); "
            "leaving it untouched and renaming the trace to '%s'",
            new_path.c_str(), fresh);
        path_ = fresh;
        return;
      }
      if (errno != EEXIST) break;
    }
    log(log_level::warn,
        "can not rename '%s' to '%s' or a free name near it; keeping the first name", path_.c_str(),
        new_path.c_str());
  } else {
    log(log_level::warn, "can not rename '%s' to '%s': %s; keeping the first name", path_.c_str(),
        new_path.c_str(), std::strerror(errno));
  }
}

void writer::crash_flush(size_t (*tail)(char *buf, size_t cap)) {
  if (t_is_writer) return;
  if (!lock_within(io_mutex_, std::chrono::milliseconds(1000))) return;
  if (!finished_) {
    crash_cycle();
    if (tail && fd_ >= 0 && !failed_) {
      char buf[2048];
      const size_t n = tail(buf, sizeof buf);
      if (n) {
        crash_write(buf, n, scan_member_stats(buf, n));
        finished_ = true;  // the process is ending: nothing may follow "]"
      }
    }
    if (fd_ >= 0) ::fsync(fd_);
  }
  io_mutex_.unlock();
}

void writer::fork_prepare() {
  io_mutex_.lock();
  helper_mutex_.lock();
  queue_mutex_.lock();
  meta_mutex_.lock();
  registry_mutex_.lock();
  pool_mutex_.lock();
  path_mutex_.lock();
}

void writer::fork_parent() {
  path_mutex_.unlock();
  pool_mutex_.unlock();
  registry_mutex_.unlock();
  meta_mutex_.unlock();
  queue_mutex_.unlock();
  helper_mutex_.unlock();
  io_mutex_.unlock();
}

void writer::fork_child(thread_buffer *survivor, int64_t new_pid) {
  settings_.format.pid = new_pid;
  // Only the forking thread exists here, holding every lock (fork_prepare). The parent
  // writes its own buffered data; the child forgets it and its file, and starts afresh.
  for (chunk *c : queue_) {
    c->reset();
    if (c->cap == settings_.chunk_bytes) pool_.push_back(c);
  }
  queue_.clear();
  queued_bytes_ = 0;
  meta_.clear();
  buffers_.clear();
  if (survivor) {
    buffers_.push_back(survivor);
    if (chunk *c = survivor->current.load(std::memory_order_relaxed)) c->reset();
    survivor->pos = 0;
  }
  open_ = 0;
  has_open_ = false;
  // The parent's writer and helper threads do not exist here: forget their handles without
  // joining (a joinable std::thread must not be destroyed).
  new (&thread_) std::thread();
  for (auto &h : helpers_) new (&h) std::thread();
  helpers_.clear();
  helper_encoders_.clear();
  helper_pending_ = 0;
  helper_pass_ = 0;
  thread_started_ = false;
  stop_ = false;
  flush_wanted_ = false;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  opened_ = false;
  failed_ = false;
  path_.clear();
  planned_path_.clear();  // a new pid: a new name and header, rendered when the thread starts
  header_text_.clear();
  events_written_ = 0;
  dropped_ = 0;
  // Every synchronisation object is made anew rather than unlocked: a condition variable keeps
  // the parent's waiters in its state (the parent's writer thread was waiting on queue_cv_ at
  // fork time), and the child's new writer thread would wait behind ghosts that never leave,
  // so that a broadcast at exit could wait for them forever. Only this thread exists: nothing
  // is waiting on or holding these objects, and their old state is dropped, not destroyed.
  new (&io_mutex_) std::mutex();
  new (&helper_mutex_) std::mutex();
  new (&queue_mutex_) std::mutex();
  new (&meta_mutex_) std::mutex();
  new (&registry_mutex_) std::mutex();
  new (&pool_mutex_) std::mutex();
  new (&path_mutex_) std::mutex();
  new (&queue_cv_) std::condition_variable();
  new (&space_cv_) std::condition_variable();
  new (&helper_cv_) std::condition_variable();
  new (&helper_done_cv_) std::condition_variable();
  if (!finished_) {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    start_thread();
  }
}

}  // namespace dftrace::detail
