// writer.hpp: the background writer, which ties the parts together: application threads take
// chunks from the chunk pool (chunk_pool.hpp) and write binary records (record.hpp) into them
// without a lock per event; the writer thread gathers handed-over chunks, the committed part of
// every thread's chunk and the metadata lines into members (member_builder.hpp), has them
// compressed (compressor_pool.hpp) and appends them to the file (output_file.hpp). Nothing here
// calls back into the runtime: it hands down plain values (writer_settings, relocate, finish).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/gzip_member.hpp"
#include "base/wake_word.hpp"
#include "output/compressor_pool.hpp"
#include "output/output_file.hpp"
#include "writer/chunk_pool.hpp"
#include "writer/member_builder.hpp"
#include "writer/member_ring.hpp"
#include "writer/record.hpp"
#include "writer/trace_lines.hpp"

namespace dftrace::detail {

// What the writer is told; the runtime fills every field from the configuration, whose key
// table (src/config) is the one home of the defaults, so none is repeated here.
struct writer_settings {
  bool compress{};
  codec kind{};
  int level{};
  size_t member_bytes{};
  double flush_interval{};  // seconds
  bool later_file{};        // the process wrote a trace file before (output_file::path_may_be_ours)
  size_t chunk_bytes{};
  size_t queue_bytes{};
  bool drop_when_full{};
  // Members compressed at once when a pass has several (the writer thread plus helpers);
  // helpers only run when there is a backlog.
  int compress_threads{};
  // How records become lines.
  line_format format;
  // The file's path and the header text ("[\n" and the header lines) that comes first; the file
  // is created when the first member is written.
  std::string path;
  std::string header;
  // The flight recorder (output.mode: ring; docs/flight-recorder.md): when ring_seconds > 0,
  // members of events are kept in memory (the last ring_seconds, at most ring_bytes) instead of
  // written; metadata, aggregated records and the end line are written as usual. A trigger
  // writes the ring, then full detail for ring_after_seconds (0: until ring_release()).
  double ring_seconds{};
  size_t ring_bytes{};
  double ring_after_seconds{};
  std::string ring_after_text;  // what the trigger line says of it ("2s", "3 steps")
  bool ring_direct{};           // a trigger's dump of the ring written with O_DIRECT
  bool ring_direct_auto{};      // ... where the file's file system says (output_file::direct_auto)
  double trigger_min_gap{};     // seconds between two triggers
};

// A trigger from a signal handler (the runtime's, for trigger.signal): the signal and the time
// (CLOCK_MONOTONIC ns), stored with two lock-free atomic stores, then the writer thread is woken
// (wake_word: an atomic add and a futex wake, async-signal-safe).
void signal_trigger(int sig, uint64_t mono_ns) noexcept;
wake_word &writer_wake();  // what writer threads sleep on

class writer {
 public:
  explicit writer(writer_settings settings);
  ~writer();

  // ---- producer side (any thread)
  // A fresh chunk of at least min_bytes.
  chunk *new_chunk(size_t min_bytes) { return pool_.take(min_bytes); }
  // Hands over a chunk the producer will not touch again. May wait (block mode) or drop
  // the chunk's lines (drop mode) when more than queue_bytes are waiting.
  void submit(chunk *c);
  void register_buffer(thread_buffer *tb);
  // Hands over the buffer's current chunk and forgets the buffer.
  void unregister_buffer(thread_buffer *tb);
  // A metadata line (with its '\n'); it reaches the file before any event line that was
  // committed after this call returned. Copied into one buffer that passes keep (no
  // allocation per line once it has grown).
  void push_meta(std::string_view line);

  // ---- control
  // Everything committed before the call is compressed and written when it returns.
  bool flush();
  // Final flush, then the end line (`end`'s id and signal; the writer fills its time and the
  // final counts) and "]", then close. Later calls do nothing.
  void finish(end_fields end);
  // The file moves to new_path (the rank became known): renamed if it is open, otherwise created
  // there with `header` in place of the one planned (then true).
  bool relocate(const std::string &new_path, std::string header);
  // From a fatal signal handler: write what can be written within about a second; with `end`
  // (the process is about to die), then the end line and "]" as the last member, and the file
  // is finished. No allocation.
  // `fatal_sig`: the fatal signal that called it (0: another path, such as _exit): in ring mode
  // the ring is written first, with a trigger line naming the signal. Only a fatal signal's
  // flush syncs the file: _exit and exec leave the written data to the kernel as exit does.
  void crash_flush(end_fields *end, int fatal_sig = 0);
  // fork() support: prepare locks everything, parent unlocks, child unlocks and forgets the
  // parent's data, file and threads (keeping `survivor`, the forking thread's buffer), and
  // plans its own file.
  void fork_prepare();
  void fork_parent();
  void fork_child(thread_buffer *survivor, int64_t new_pid, std::string path, std::string header);

  // ---- the flight recorder (ring mode)
  bool ring_on() const { return ring_ != nullptr; }
  // A trigger from any thread (not a signal handler: signal_trigger): the ring (the window
  // before mono_ns) is written at the writer's next pass, with a trigger line, then full detail
  // follows. False when refused: not in ring mode, finished, or within trigger_min_gap of the
  // last trigger accepted.
  // after_seconds and after_text, when after_text is given, replace ring_after_seconds and
  // ring_after_text for this trigger's full detail (dftrace attach's window; 0 s: until
  // ring_release()). `followed`: the window of a process this one follows (its parent's), kept
  // apart from this process's own: full detail lasts while either is open, and each ends by
  // itself (ring_release(true) ends the followed one, its time or ring_release() the own one),
  // each with its trigger_end line; trigger_min_gap neither refuses it nor counts it.
  bool trigger(std::string_view source, std::string_view reason, uint64_t mono_ns,
               double after_seconds = 0, std::string_view after_text = {}, bool followed = false);
  // The full detail after a trigger ends (ring.after in steps; `followed`: the followed
  // window): what is committed when the writer's next pass runs is written, later members go
  // to the ring again unless the other window is open.
  void ring_release(bool followed = false);
  // Where the full detail after a trigger is told to other processes (the runtime's page
  // shared with its children): `word` (shared memory) is set to (windows << 1) | 1 when a
  // trigger's full detail begins and (windows << 1) when it ends, and the waiters on the futex
  // word `wake` (the same memory) are woken. Null: told nowhere. Any thread.
  void ring_announce(std::atomic<uint64_t> *word, std::atomic<uint32_t> *wake) {
    announce_wake_.store(wake, std::memory_order_relaxed);
    announce_word_.store(word, std::memory_order_release);
  }
  uint64_t triggers() const { return triggers_.load(std::memory_order_relaxed); }
  // How many times the writer thread's sleep ended (a wake, a deadline): it sleeps until work,
  // a tick anchor, the flush interval or the end of full detail, and polls nothing.
  uint64_t wakes() const { return wakes_.load(std::memory_order_relaxed); }

  uint64_t events_written() const { return events_written_.load(std::memory_order_relaxed); }
  uint64_t events_dropped() const { return dropped_.load(std::memory_order_relaxed); }
  std::string path() const { return file_.path(); }
  bool failed() const { return file_.failed(); }
  const writer_settings &settings() const { return settings_; }

 private:
  // False when the thread can not be made (no memory, no thread left): the chunks then wait
  // for the next try, or are dropped when the queue is full (never a wait without a writer).
  bool start_thread();
  void run();
  void drop_chunk(chunk *c) noexcept;  // its records counted as dropped, the chunk recycled
  // One pass: metadata, handed-over chunks and (when steal) the committed part of every
  // thread's current chunk, into members. Caller holds io_mutex_. Never throws: a pass that
  // runs out of memory drops what it held (counted as dropped, said once), and the writer goes
  // on with the next pass.
  void cycle(bool steal) noexcept;
  void cycle_steps(bool steal);
  void drop_failed_pass() noexcept;
  // The closed members compressed (in parallel when `parallel`) and written in order, after
  // the header when the file is new. `pass_end`: the pass's last (else the member being
  // assembled goes on, and the pass with it).
  void write_members(bool parallel, bool pass_end = true);
  // In the middle of a pass: its closed members written once there are k_batch_members of
  // them, so that the members of a pass over a large backlog do not all lie in memory at once.
  void write_batch();
  // Ring mode: the pass is done with n bytes of the chunks it took (taken_bytes_).
  void release_taken(size_t n);
  bool open_file();  // creates the file and writes the header member (io_mutex_)
  // The fatal-signal pass: no allocation, only tried locks; each piece of text becomes its
  // own member straight from where it lies. Caller holds io_mutex_.
  void crash_cycle();
  void crash_write(const char *p, size_t n, const member_stats &st);
  // Lines and DT times of text the writer did not format from records (header, end line).
  member_stats scan(const char *p, size_t n) const {
    return scan_member_stats(p, n, settings_.format.ns_precision ? 1000 : 1);
  }
  // The signal path's formatting: into crash_text_ (reserved: it does not grow), writing
  // members as it fills; crash_batch_ says what the text holds.
  void crash_records(const chunk *c, uint32_t from, uint32_t to);
  void crash_aggregates();  // aggregation's open intervals
  void crash_text_write();  // crash_text_ as a member, then empty
  struct {
    member_stats st;
    bool has_ts = false;
    uint64_t events = 0;
  } crash_batch_;
  size_t end_line(end_fields e, char *buf, size_t cap);
  // Ring mode: a member of events into the ring (write_members), and the triggers pending, the
  // signal's and the end of full detail, after a pass's members were written (io_mutex_).
  void ring_keep(member &m);
  void ring_before_pass();  // the triggers pending: the ring and their lines, before the pass
  // The same for a trigger that came while a pass runs (called between its chunks and members):
  // the ring does not wait for the pass's formatting and compression.
  void ring_take_triggers();
  void ring_after_pass();  // the end of full detail
  void ring_write_out();   // the ring's members to the file, a writev for many, then empty
  // Whether ring_write_out writes with O_DIRECT (ring.direct, or auto's decision for the file);
  // *said: what the trigger line says of it ("on", "auto: off, nfs", "auto: on, xfs (refused)"
  // when the file system refused it and the page cache took the dump), "" when off.
  bool ring_direct(std::string *said);
  bool accept_trigger(uint64_t mono_ns);  // min_gap (trigger_mutex_ held)
  struct pending_trigger {
    std::string source, reason;
    uint64_t mono_ns = 0;
    double after_seconds = 0;
    std::string after_text;  // empty: ring_after_seconds and ring_after_text
    bool followed = false;   // the followed process's window (trigger's `followed`)
  };
  void write_trigger(const pending_trigger &p);
  void write_trigger_line(const trigger_fields &t);  // a member of its own
  void write_window_end(const pending_trigger &w);   // its trigger_end line, at pass_ns_
  bool ring_due() const;     // a signal's trigger waits, or full detail's time ran out
  void crash_ring(int sig);  // the fatal-signal path's write of the ring
  void ring_fork_child();    // fork's child: a ring of its own, empty

  writer_settings settings_;
  chunk_pool pool_;
  member_builder builder_;
  compressor_pool compressors_;
  output_file file_;
  member_encoder crash_encoder_;  // the signal path's own, with its buffer reserved
  char_buffer crash_text_;

  std::mutex io_mutex_;  // one pass at a time; guards the builder, the compressors and the file
  std::mutex queue_mutex_;
  std::condition_variable space_cv_;  // wakes blocked producers
  std::vector<chunk *> queue_;
  size_t queued_bytes_ = 0;
  // Ring mode: the bytes of the chunks a pass took from the queue and has not formatted yet,
  // counted against queue_bytes with the queue's, so that the chunks in memory stay within
  // queue_bytes (else producers fill a new queue while the pass works through the old one).
  size_t taken_bytes_ = 0;
  bool stop_ = false;
  bool flush_wanted_ = false;
  std::thread thread_;
  bool thread_started_ = false;  // guarded by queue_mutex_
  // The thread is being made or made (set before it is asked for) / it has reached run(): between
  // the two it is inside the C library's or a sanitizer's thread start (fork_prepare waits).
  std::atomic<bool> thread_launched_{false}, thread_running_{false};
  // The writer thread sleeps on writer_wake() (queue_mutex_ not held), every writer's and the
  // trigger signal's: a change under queue_mutex_ is followed by wake_thread().
  static void wake_thread() noexcept;

  std::mutex meta_mutex_;
  std::string meta_;             // metadata lines not yet taken by a pass
  size_t crash_meta_bytes_ = 0;  // the first bytes of meta_ a fatal-signal flush already wrote

  // A pass's scratch (io_mutex_).
  std::vector<chunk_range> ranges_;
  std::vector<chunk *> local_queue_;
  size_t ranges_done_ = 0, queue_done_ = 0;  // how far the pass got (drop_failed_pass)
  bool memory_said_ = false;
  std::string local_meta_;
  size_t meta_from_ = 0;       // where the pass's own metadata begins in local_meta_
  bool meta_pending_ = false;  // local_meta_ taken by the pass and not yet written
  void keep_failed_metadata() noexcept;
  std::vector<char> out_;

  // Ring mode (null otherwise); holding_: full detail after a trigger (io_mutex_), while this
  // process's own window (own_open_, until hold_until_ns_; 0: until ring_release()) or the
  // followed one (followed_open_, until ring_release(true)) is open.
  std::unique_ptr<member_ring> ring_;
  std::vector<struct iovec> ring_iov_;  // ring_write_out's, reserved (io_mutex_)
  bool holding_ = false;
  bool own_open_ = false;       // (io_mutex_)
  bool followed_open_ = false;  // (io_mutex_)
  std::atomic<uint64_t> hold_until_ns_{0};
  // ring_release()'s time (0: none wanted); the own window ends at the first pass that began
  // at or after it, as at hold_until_ns_ (every event committed before it is in the file)
  std::atomic<uint64_t> release_at_ns_{0};
  std::atomic<uint32_t> followed_releases_{0};       // ring_release(true)s not yet taken
  std::atomic<uint64_t> followed_release_at_ns_{0};  // the last one's time
  bool steal_wanted_ = false;  // a trigger or a release wants the threads' chunks (queue_mutex_)
  bool crash_wrote_ring_ = false;
  int crash_sig_ = 0;      // what crash_flush was given (crash_ring's reason)
  uint64_t crash_ns_ = 0;  // when crash_flush was called (crash_ring's time)
  std::mutex trigger_mutex_;
  std::vector<pending_trigger> pending_;      // trigger_mutex_
  std::atomic<bool> trigger_waiting_{false};  // pending_ is not empty (looked at mid-pass)
  std::function<void()> take_triggers_;       // ring_take_triggers, for the compressors
  pending_trigger window_;        // the trigger of the own window in full detail (io_mutex_)
  pending_trigger followed_;      // the trigger of the followed window (io_mutex_)
  uint64_t pass_ns_ = 0;          // when the pass began (io_mutex_)
  uint64_t last_trigger_ns_ = 0;  // trigger_mutex_
  bool any_trigger_ = false;      // trigger_mutex_
  std::atomic<std::atomic<uint64_t> *> announce_word_{nullptr};  // ring_announce's
  std::atomic<std::atomic<uint32_t> *> announce_wake_{nullptr};
  uint64_t announced_ = 0;    // windows of full detail told (io_mutex_)
  void ring_tell(bool open);  // the window's start or end, to announce_word_
  std::atomic<uint64_t> triggers_{0};

  bool finished_ = false;
  std::atomic<uint64_t> wakes_{0};
  std::atomic<uint64_t> events_written_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace dftrace::detail
