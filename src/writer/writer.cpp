// writer.cpp: the background writer: passes that gather chunks and metadata into members, have
// them compressed and written; flush, finish, fatal signals and fork.
#include "writer/writer.hpp"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>

#include "base/clock.hpp"
#include "base/log.hpp"
#include "base/thread_role.hpp"

namespace dftrace::detail {

namespace {
thread_local bool t_is_writer = false;

// Lines (each ending with '\n') cut into pieces of whole lines of at most `limit` bytes (a
// longer line is a piece of its own): f(start, bytes, lines) for each. No allocation of its
// own (the fatal-signal path writes metadata this way, and skips a piece longer than its
// encoder's reserve).
template <typename F>
void for_each_piece(const char *p, size_t n, size_t limit, F f) {
  while (n > 0) {
    size_t take = n;
    if (n > limit) {
      const void *nl = memrchr(p, '\n', limit);               // the last line end within the limit
      if (!nl) nl = std::memchr(p + limit, '\n', n - limit);  // one line longer than it
      take = nl ? static_cast<size_t>(static_cast<const char *>(nl) - p) + 1 : n;
    }
    f(p, take, static_cast<uint32_t>(std::count(p, p + take, '\n')));
    p += take;
    n -= take;
  }
}
}  // namespace

namespace {
wake_word g_writer_wake;  // constant-initialized: a signal handler may reach it at any time
}  // namespace

wake_word &writer_wake() { return g_writer_wake; }

void writer::wake_thread() noexcept { writer_wake().wake(); }

writer::writer(writer_settings settings)
    : settings_(std::move(settings)),
      pool_(settings_.chunk_bytes),
      builder_(settings_.member_bytes, settings_.format),
      compressors_(settings_.kind, settings_.level, settings_.compress_threads),
      crash_encoder_(settings_.kind, settings_.level) {
  file_.plan(settings_.path, settings_.header);
  if (settings_.later_file) file_.path_may_be_ours();
  if (settings_.ring_seconds > 0) {
    ring_ = std::make_unique<member_ring>(static_cast<uint64_t>(settings_.ring_seconds * 1e9),
                                          settings_.ring_bytes);
    ring_iov_.reserve(output_file::k_max_members);
    take_triggers_ = [this] { ring_take_triggers(); };
  }
  file_.hold_between_writes(ring_ != nullptr);  // ring: found through /proc/PID/fd
  out_.reserve(settings_.member_bytes / 2);
  crash_encoder_.reserve(settings_.member_bytes + 4096);
  crash_text_.reserve(settings_.member_bytes + 4096);
  ranges_.reserve(64);
  local_queue_.reserve(256);
}

writer::~writer() {
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    stop_ = true;
  }
  wake_thread();
  if (thread_.joinable()) thread_.join();
}

bool writer::start_thread() {
  // queue_mutex_ held by the caller
  if (thread_started_ || stop_) return thread_started_;
  const async_signals_blocked no_handlers;  // the application's handlers stay on its threads
  grow_descriptor_table();  // before the table is shared with the thread (output_file.hpp)
  thread_launched_.store(true, std::memory_order_release);
  try {
    thread_ = std::thread([this] { run(); });
  } catch (...) {  // std::system_error (EAGAIN: no memory for its stack) or std::bad_alloc
    thread_launched_.store(false, std::memory_order_release);
    return false;
  }
  thread_started_ = true;
  return true;
}

void writer::drop_chunk(chunk *c) noexcept {
  uint64_t n = 0;  // the records not written yet
  const uint32_t bytes = c->committed.load(std::memory_order_relaxed);
  for (uint32_t off = c->drained.load(std::memory_order_relaxed); off < bytes;
       off += reinterpret_cast<const rec *>(c->data + off)->size)
    ++n;
  dropped_.fetch_add(n, std::memory_order_relaxed);
  pool_.recycle(c);
}

void writer::submit(chunk *c) {
  const size_t bytes = c->committed.load(std::memory_order_relaxed);
  std::unique_lock<std::mutex> lock(queue_mutex_);
  const bool writing = start_thread();
  if (queued_bytes_ + taken_bytes_ + bytes > settings_.queue_bytes && !stop_) {
    if (settings_.drop_when_full || !writing) {
      lock.unlock();
      drop_chunk(c);
      return;
    }
    wake_thread();
    space_cv_.wait(lock, [&] {
      return queued_bytes_ + taken_bytes_ + bytes <= settings_.queue_bytes || stop_;
    });
  }
  try {
    queue_.push_back(c);
  } catch (...) {  // no memory for the queue: the chunk's records are dropped, the thread goes on
    lock.unlock();
    drop_chunk(c);
    return;
  }
  queued_bytes_ += bytes;
  // Records are about half the size of their lines: wake the writer at half a member.
  if (queued_bytes_ >= settings_.member_bytes / 2) wake_thread();
}

void writer::register_buffer(thread_buffer *tb) {
  const size_t n = pool_.add(tb);
  {
    // Room for one range per thread, so that the signal path never grows it.
    std::lock_guard<std::mutex> io(io_mutex_);
    if (ranges_.capacity() < n + 8) ranges_.reserve(2 * n + 8);
  }
  std::lock_guard<std::mutex> lock(queue_mutex_);
  start_thread();
}

void writer::unregister_buffer(thread_buffer *tb) {
  if (chunk *c = pool_.remove(tb)) submit(c);
}

void writer::push_meta(std::string_view line) {
  std::lock_guard<std::mutex> lock(meta_mutex_);
  meta_.append(line.data(), line.size());
}

void writer::run() {
  t_is_writer = true;
  t_internal_thread = 1;
  thread_running_.store(true, std::memory_order_release);
  using clock = std::chrono::steady_clock;
  const auto interval = std::chrono::duration_cast<clock::duration>(
      std::chrono::duration<double>(settings_.flush_interval));
  auto next_steal = clock::now() + interval;
  tick_map *tm =
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
    if (ring_) {  // full detail ends on time (a trigger, or a signal's, wakes the thread)
      const uint64_t until = hold_until_ns_.load(std::memory_order_relaxed);
      const auto hold_end = clock::time_point(std::chrono::nanoseconds(until));
      if (until && hold_end < wake) wake = hold_end;
    }
    const auto wanted = [&] {
      return stop_ || queued_bytes_ >= settings_.member_bytes / 2 || flush_wanted_;
    };
    // The word is read before the conditions are: a change after this read changes the word.
    const uint32_t seen = writer_wake().seq();
    bool woken = wanted();
    if (!woken && !(ring_ && ring_due()) && clock::now() < wake) {
      lock.unlock();
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wake.time_since_epoch());
      writer_wake().wait(seen, ns.count() > 0 ? static_cast<uint64_t>(ns.count()) : 1);
      wakes_.fetch_add(1, std::memory_order_relaxed);
      lock.lock();
      woken = wanted();
    }
    if (stop_) break;
    const bool ring_now = ring_ && (steal_wanted_ || ring_due());
    if (!woken && !ring_now &&
        clock::now() < next_steal) {  // only an anchor is due, or another writer's wake
      if (!tm) continue;
      lock.unlock();
      bool done;
      {
        std::lock_guard<std::mutex> io(io_mutex_);
        done = finished_;
        if (!done) tm->anchor();
      }
      // A finished file takes no anchor, so none is ever due again: without this the thread
      // would find the same anchor due at once, round after round, until it is stopped.
      if (done) tm = nullptr;
      lock.lock();
      continue;
    }
    const bool steal = clock::now() >= next_steal || ring_now;
    lock.unlock();
    {
      std::lock_guard<std::mutex> io(io_mutex_);
      if (!finished_) cycle(steal);  // nothing after the end line a signal-safe flush wrote
    }
    if (steal) next_steal = clock::now() + interval;
    lock.lock();
  }
}

void writer::cycle(bool steal) noexcept {
  try {
    cycle_steps(steal);
  } catch (...) {  // std::bad_alloc: a line, a member or a list could not grow
    drop_failed_pass();
  }
}

void writer::keep_failed_metadata() noexcept {
  // The definitions a failed pass took are put back before any taken since: the events of
  // later passes use them (a hash must be defined in the file before its first use).
  if (!meta_pending_) return;
  meta_pending_ = false;
  try {
    std::lock_guard<std::mutex> lock(meta_mutex_);
    if (crash_meta_bytes_ == 0) {  // (else a fatal-signal flush wrote meta_'s first lines)
      local_meta_.erase(0, meta_from_);
      local_meta_.append(meta_);
      meta_.swap(local_meta_);
    }
  } catch (...) {  // (out of memory still) the definitions are lost with the pass
  }
  local_meta_.clear();
}

void writer::drop_failed_pass() noexcept {
  // What the pass held is lost: the members it made, the chunks and ranges it had not reached
  // (the one it was in counts whole: some of its events may be in a dropped member too).
  uint64_t lost = builder_.discard();
  for (size_t i = queue_done_; i < local_queue_.size(); ++i) {
    chunk *c = local_queue_[i];
    const uint32_t end = c->committed.load(std::memory_order_acquire);
    for (uint32_t off = c->drained.load(std::memory_order_relaxed); off < end;
         off += reinterpret_cast<const rec *>(c->data + off)->size)
      ++lost;
    pool_.recycle(c);
  }
  local_queue_.clear();
  queue_done_ = 0;
  release_taken(static_cast<size_t>(-1));
  for (size_t i = ranges_done_; i < ranges_.size(); ++i)
    for (uint32_t off = ranges_[i].from; off < ranges_[i].to;
         off += reinterpret_cast<const rec *>(ranges_[i].c->data + off)->size)
      ++lost;
  ranges_.clear();
  ranges_done_ = 0;
  keep_failed_metadata();
  dropped_.fetch_add(lost, std::memory_order_relaxed);
  if (!memory_said_) {
    memory_said_ = true;
    log(log_level::error,
        "out of memory while writing the trace: %llu events dropped (later losses are counted "
        "in the end line's dropped count); the program goes on",
        static_cast<unsigned long long>(lost));
  }
}

void writer::cycle_steps(bool steal) {
  // 0. in ring mode, the triggers that came since the last pass
  ring_before_pass();
  // 1. chunks handed over, in order
  queue_done_ = ranges_done_ = 0;
  local_queue_.clear();
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    local_queue_.swap(queue_);
    if (ring_) taken_bytes_ = queued_bytes_;
    queued_bytes_ = 0;
    flush_wanted_ = false;
    steal_wanted_ = false;
  }
  space_cv_.notify_all();
  // 2. the committed part of each thread's current chunk
  ranges_.clear();
  if (steal) pool_.take_committed(ranges_, false);
  // 2b. a tick anchor read after every record taken above was committed: the tick map never
  //     changes where those records' ticks fall (base/clock.hpp)
  if (settings_.format.ticks) settings_.format.ticks->anchor();
  // 3. metadata: taken after the event lines were observed, so every definition that an
  //    observed event uses is in this batch or an earlier one.
  local_meta_.clear();
  meta_from_ = 0;
  {
    std::lock_guard<std::mutex> lock(meta_mutex_);
    local_meta_.swap(meta_);  // meta_ keeps the capacity local_meta_ had
    // lines already written by a fatal-signal flush that the process survived
    meta_from_ = crash_meta_bytes_;
    crash_meta_bytes_ = 0;
  }
  meta_pending_ = true;
  const size_t meta_from = meta_from_;
  for_each_piece(local_meta_.data() + meta_from, local_meta_.size() - meta_from,
                 settings_.member_bytes, [&](const char *p, size_t n, uint32_t lines) {
                   builder_.add_lines(p, n, member_stats{lines, 0, 0}, false, false);
                 });
  if (ring_) {  // metadata is written to the file in ring mode too: members of its own
    builder_.close();
    builder_.keep_from(0);
  }
  // A burst of definitions (a pass over many new files) is not kept for the rest of the run.
  if (local_meta_.capacity() > 4 * settings_.member_bytes) std::string().swap(local_meta_);
  for (; queue_done_ < local_queue_.size(); ++queue_done_) {
    ring_take_triggers();  // a trigger does not wait for the rest of the pass
    chunk *c = local_queue_[queue_done_];
    const uint32_t end = c->committed.load(std::memory_order_acquire);
    if (end > c->drained) builder_.add_records(c, c->drained, end);
    pool_.recycle(c);
    release_taken(end);
    write_batch();
  }
  for (; ranges_done_ < ranges_.size(); ++ranges_done_) {
    ring_take_triggers();
    const chunk_range &r = ranges_[ranges_done_];
    builder_.add_records(r.c, r.from, r.to);
    write_batch();
  }
  // Aggregated intervals are written once no thread can still hold events of them: two flush
  // intervals after them (a thread's chunk is taken at least every flush interval).
  builder_.close();
  const size_t events_end = builder_.closed();
  builder_.add_aggregates(static_cast<uint64_t>(2 * settings_.flush_interval * 1e9), false);
  builder_.close();
  builder_.keep_from(events_end);  // aggregated records are written in ring mode too
  write_members(true);
  meta_pending_ = false;
  ring_after_pass();
}

bool writer::open_file() {
  if (file_.tried()) return file_.is_open();
  // The header is its own first member, in the file from the moment the file has its name (a
  // reader may open it as soon as it appears).
  const std::string &header = file_.header();
  const member_stats hs = scan(header.data(), header.size());
  out_.clear();
  if (settings_.compress && !compressors_.encoder().encode(header.data(), header.size(), hs, out_))
    return file_.open();  // (out of memory) a file without its header is still a valid trace
  return settings_.compress ? file_.open(false, out_.data(), out_.size())
                            : file_.open(false, header.data(), header.size());
}

void writer::release_taken(size_t n) {
  if (!ring_) return;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    taken_bytes_ -= std::min(n, taken_bytes_);
  }
  space_cv_.notify_all();
}

void writer::write_batch() {
  // One member a compressor thread: they share the batch, and few lie beside the ring.
  const size_t k_batch_members = static_cast<size_t>(std::max(1, settings_.compress_threads));
  if (builder_.closed() < k_batch_members) return;
  write_members(true, false);
  meta_pending_ = false;  // the pass's definitions were written with its first members
}

void writer::write_members(bool parallel, bool pass_end) {
  const size_t count = builder_.closed();
  if (count == 0) return;
  open_file();
  const bool writing = file_.is_open() && !file_.failed();
  if (writing && settings_.compress)
    compressors_.compress(builder_, parallel, ring_ ? &take_triggers_ : nullptr);
  ring_take_triggers();  // before this pass's members go to the ring
  for (size_t i = 0; i < count; ++i) {
    member &m = builder_.at(i);
    if (ring_ && !holding_ && !m.kept) {
      ring_keep(m);
      continue;
    }
    bool ok = false;
    if (file_.is_open() && !file_.failed()) {
      if (settings_.compress)
        ok = m.ok && file_.write(m.out.data(), m.out.size());
      else
        ok = file_.write(m.text.data(), m.text.size());
    }
    (ok ? events_written_ : dropped_).fetch_add(m.events, std::memory_order_relaxed);
  }
  if (pass_end)
    builder_.next_pass();
  else
    builder_.written_closed();
}

bool writer::flush() {
  if (t_is_writer) return false;
  std::lock_guard<std::mutex> io(io_mutex_);
  if (finished_) return false;
  cycle(true);
  return !file_.failed();
}

size_t writer::end_line(end_fields e, char *buf, size_t cap) {
  // A tick after every event's, through the same map.
  const line_format &f = builder_.format();
  e.mono_ns = f.ticks ? f.ticks->to_ns(tick_now()) : e.mono_ns;
  e.events = events_written();
  e.dropped = events_dropped();
  e.ring = ring_ != nullptr;
  e.ring_discarded = ring_ ? ring_->discarded() + (crash_wrote_ring_ ? 0 : ring_->events()) : 0;
  return end_line_into(f, e, buf, cap);
}

void writer::finish(end_fields end) {
  {
    std::lock_guard<std::mutex> io(io_mutex_);
    if (finished_) return;
    cycle(true);
    if (holding_) ring_tell(false);  // (the children's windows end with the trace)
    try {
      builder_.add_aggregates(0, true);  // every interval still open, written before the end
      builder_.close();                  // line so that its count holds their events
      builder_.keep_from(0);
      write_members(true);
    } catch (...) {  // out of memory: what was folded is dropped, the end line still comes
      drop_failed_pass();
    }
    char buf[2048];
    const size_t n = end_line(end, buf, sizeof buf);
    const member_stats st = scan(buf, n);
    try {
      builder_.add_lines(buf, n, st, (st.ts_min | st.ts_max) != 0, false);
      builder_.close();
      builder_.keep_from(0);
      write_members(true);
      if (file_.failed()) {
        // A full file system or the file-size limit: the file was cut back to its last whole
        // member; the end line, with the events dropped since, still fits where the lost member
        // was, most of the time.
        const size_t k = end_line(end, buf, sizeof buf);
        const member_stats ks = scan(buf, k);
        out_.clear();
        if (!settings_.compress)
          file_.write_last(buf, k);
        else if (compressors_.encoder().encode(buf, k, ks, out_))
          file_.write_last(out_.data(), out_.size());
      }
    } catch (...) {
      drop_failed_pass();
    }
    finished_ = true;
    file_.close();
  }
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    stop_ = true;
  }
  wake_thread();
  space_cv_.notify_all();
  if (thread_.joinable() && std::this_thread::get_id() != thread_.get_id()) thread_.join();
}

bool writer::relocate(const std::string &new_path, std::string header) {
  std::lock_guard<std::mutex> io(io_mutex_);
  return file_.relocate(new_path, std::move(header));
}

// ---------------------------------------------------------------- the fatal-signal path

void writer::crash_write(const char *p, size_t n, const member_stats &st) {
  if (n == 0 || !file_.is_open() || file_.failed()) return;
  const char *m;
  size_t len;
  if (settings_.compress) {
    // A piece the reserve does not cover (one metadata line longer than a member: a property
    // of over a MiB) would allocate in a signal handler: it is lost instead.
    if (!crash_encoder_.fits_in_place(n)) return;
    if (crash_encoder_.encode_in_place(p, n, st, &m, &len)) file_.write(m, len);
  } else {
    file_.write(p, n);
  }
}

void writer::crash_text_write() {
  if (!crash_text_.empty()) {
    crash_write(crash_text_.data(), crash_text_.size(), crash_batch_.st);
    if (!file_.failed())  // the end line's count
      events_written_.fetch_add(crash_batch_.events, std::memory_order_relaxed);
  }
  crash_text_.clear();
  crash_batch_ = {};
}

void writer::crash_records(const chunk *c, uint32_t from, uint32_t to) {
  const line_format &f = builder_.format();
  uint32_t off = from;
  while (off < to) {
    const rec &r = *reinterpret_cast<const rec *>(c->data + off);
    off += r.size;
    const size_t bound = line_bound(r);
    if (!crash_text_.empty() && crash_text_.size() + bound > settings_.member_bytes)
      crash_text_write();
    uint64_t ts;
    crash_text_.set_end(format_record(f, r, crash_text_.room(bound), &ts));
    ++crash_batch_.st.lines;
    if (r.type == rec_type::mark) continue;  // a metadata line: no "ts"
    ++crash_batch_.events;
    crash_batch_.st.add_ts(ts, crash_batch_.has_ts);
  }
  crash_text_write();
}

void writer::crash_aggregates() {
  const size_t cap = settings_.member_bytes + 4096;  // crash_text_'s reserved room
  for (;;) {
    uint64_t ts = 0, events = 0;
    char *end =
        builder_.take_aggregate(crash_text_.room(0), cap - crash_text_.size(), &ts, &events);
    if (!end) {
      if (crash_text_.empty()) break;  // none left, or one larger than the room: lost
      crash_text_write();
      continue;
    }
    crash_text_.set_end(end);
    ++crash_batch_.st.lines;
    crash_batch_.events += events;
    crash_batch_.st.add_ts(ts, crash_batch_.has_ts);
  }
}

void writer::crash_cycle() {
  const auto limit = std::chrono::milliseconds(200);
  // The writer thread creating the file (its header, then its name) is waited for.
  if (file_.wait_opening(200) == output_file::state::untried &&
      !file_.failed()) {  // created holding its header (as open_file does)
    const std::string &h = file_.header();
    const char *m = h.data();
    size_t len = h.size();
    if (settings_.compress &&
        !(crash_encoder_.fits_in_place(len) &&
          crash_encoder_.encode_in_place(h.data(), h.size(), scan(h.data(), h.size()), &m, &len)))
      len = 0;
    file_.open(/*quiet=*/true, m, len);
  }
  crash_ring(crash_sig_);
  // The same order as a regular pass: events observed first, then the metadata they need,
  // which is written before them.
  ranges_.clear();
  bool have_queue = false;
  if (lock_within(queue_mutex_, limit)) {
    local_queue_.swap(queue_);
    have_queue = true;
    queue_mutex_.unlock();
  }
  const bool have_ranges = pool_.take_committed_within(ranges_, limit);  // never grows ranges_
  if (lock_within(meta_mutex_, limit)) {
    // The lines stay (a later pass would not see the crash's offset if they were cleared);
    // how many bytes of them are written is remembered.
    for_each_piece(meta_.data() + crash_meta_bytes_, meta_.size() - crash_meta_bytes_,
                   settings_.member_bytes, [&](const char *p, size_t n, uint32_t lines) {
                     crash_write(p, n, member_stats{lines, 0, 0});
                   });
    crash_meta_bytes_ = meta_.size();
    meta_mutex_.unlock();
  }
  if (have_queue) {
    for (chunk *c : local_queue_) {
      const uint32_t end = c->committed.load(std::memory_order_acquire);
      if (end > c->drained) crash_records(c, c->drained, end);
    }
    local_queue_.clear();
  }
  if (have_ranges)
    for (const chunk_range &r : ranges_) crash_records(r.c, r.from, r.to);
  crash_aggregates();
}

void writer::crash_flush(end_fields *end, int fatal_sig) {
  if (t_is_writer) return;
  // dftrace's own work: creating the file here (mkdir, open) must pass through the I/O
  // interposers untraced, whose FH line would wait on io_mutex_, held below.
  const internal_scope own;
  const uint64_t signal_ns = mono_ns();  // the crash's time, not when a pass let go of the lock
  if (!lock_within(io_mutex_, std::chrono::milliseconds(1000))) return;
  crash_ns_ = signal_ns;
  if (!finished_) {
    crash_sig_ = fatal_sig;
    crash_cycle();
    if (end && file_.is_open() && !file_.failed()) {
      char buf[2048];
      const size_t n = end_line(*end, buf, sizeof buf);
      if (n) {
        crash_write(buf, n, scan(buf, n));
        finished_ = true;  // the process is ending: nothing may follow "]"
      }
    }
    // A new file's fsync waits for the file system's journal: milliseconds at each exit of a
    // forked worker. Only a process dying of a signal has it synced.
    if (fatal_sig) file_.sync();
  }
  io_mutex_.unlock();
}

// ---------------------------------------------------------------- fork

void writer::fork_prepare() {
  // A writer thread asked for but not yet in run() is inside pthread_create's or the thread
  // start's code (the C library's, a sanitizer's), which no lock of ours covers and which may
  // hold their own locks (an allocator's, a thread registry's): a child forked then inherits
  // them held. Wait for it to get here, up to 200 ms (it needs none of our locks to).
  if (thread_launched_.load(std::memory_order_acquire)) {
    for (int i = 0; i < 2000 && !thread_running_.load(std::memory_order_acquire); ++i) {
      const timespec pause{0, 100000};
      nanosleep(&pause, nullptr);
    }
  }
  io_mutex_.lock();
  trigger_mutex_.lock();
  compressors_.fork_prepare();
  queue_mutex_.lock();
  meta_mutex_.lock();
  pool_.fork_prepare();
  file_.fork_prepare();
}

void writer::fork_parent() {
  file_.fork_parent();
  pool_.fork_parent();
  meta_mutex_.unlock();
  queue_mutex_.unlock();
  compressors_.fork_parent();
  trigger_mutex_.unlock();
  io_mutex_.unlock();
}

void writer::fork_child(thread_buffer *survivor, int64_t new_pid, std::string path,
                        std::string header) {
  // Only the forking thread exists here, holding every lock (fork_prepare). The parent
  // writes its own buffered data; the child forgets it and its file, and starts afresh.
  settings_.format.pid = new_pid;
  builder_.format().pid = new_pid;
  pool_.fork_child(survivor, queue_);
  queued_bytes_ = taken_bytes_ = 0;
  meta_.clear();
  crash_meta_bytes_ = 0;
  builder_.forget();
  compressors_.fork_child();
  file_.fork_child(std::move(path), std::move(header));
  // The parent's writer thread does not exist here: forget its handle without joining (a
  // joinable std::thread must not be destroyed).
  new (&thread_) std::thread();
  thread_started_ = false;
  thread_launched_.store(false, std::memory_order_relaxed);
  thread_running_.store(false, std::memory_order_relaxed);
  stop_ = false;
  flush_wanted_ = false;
  events_written_ = 0;
  dropped_ = 0;
  // Every synchronisation object is made anew rather than unlocked: a condition variable keeps
  // the parent's waiters in its state, and a thread of the child would wait behind ghosts that
  // never leave, so that a broadcast at exit could wait for them forever (the wake word's
  // sleepers, the parent's writer thread among them, are forgotten likewise). Only this thread
  // exists: nothing is waiting on or holding these objects, and their old state is dropped, not
  // destroyed.
  ring_fork_child();
  new (&trigger_mutex_) std::mutex();
  new (&io_mutex_) std::mutex();
  new (&queue_mutex_) std::mutex();
  new (&meta_mutex_) std::mutex();
  writer_wake().forget_sleepers();
  new (&space_cv_) std::condition_variable();
  // The thread starts as in the parent: with the first buffer. The forking thread's buffer, the
  // only one here, is registered already; without it (no event recorded on that thread yet:
  // a worker forked by a process that traced nothing) the first buffer or trigger starts it.
  if (!finished_ && survivor) {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    start_thread();
  }
}

}  // namespace dftrace::detail
