// collect.hpp: turns blocks of trace lines into what the analysis needs: per thread the
// intervals of layered events and the step candidates, per process the facts that tie it to
// a group (rank, parent, host) and the counts that check the read against the file's own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/collectives.hpp"
#include "analysis/io_collect.hpp"
#include "analysis/layers.hpp"
#include "analysis/spill.hpp"
#include "reader/time_unit.hpp"
#include "reader/trace_reader.hpp"

namespace dftrace::analysis {

// A layered event of one thread: 24 bytes. seq orders the thread's events as written (an
// enclosing event is written after what it encloses), which decides nesting at equal times.
struct layered_event {
  uint64_t start, end;
  uint32_t seq;
  uint8_t layer;
  uint8_t pad[3] = {};  // written to the spill file: no byte left uninitialised
};

// A step candidate: a step event or a `.iter` event, with its `step` / `epoch` arguments.
// 40 bytes, written to the spill file with the thread's events.
struct step_event {
  uint64_t start = 0, end = 0;
  int64_t step = 0, epoch = 0;
  bool has_step = false, has_epoch = false;
  uint8_t pad[6] = {};  // written to the spill file: no byte left uninitialised
};

// Events of a thread written to the spill file: seq_add is added to their seq when read back.
struct spilled_run {
  uint64_t offset = 0;
  uint32_t count = 0, seq_add = 0;
};

struct thread_events {
  // The thread's events as they came, seq numbered from 0 across all of them (count is the
  // next): first those spilled to disk, then blocks' vectors in memory. Appending moves a
  // block's vector, it copies nothing; take_layered() makes one array when the thread is
  // analysed.
  std::vector<spilled_run> spilled;
  std::vector<std::vector<layered_event>> layered;
  uint32_t count = 0;
  // Step candidates: those written to the spill file (offset, count), then those in memory.
  std::vector<spilled_run> steps_spilled, iters_spilled;
  std::vector<step_event> steps, iters;
  // Appends o's events (its `.iter` events only when keep_iters).
  void append(thread_events &o, bool keep_iters = true);
  // Writes the vectors in memory to the store (kept in memory when it cannot), the step
  // candidates too; returns how many events and candidates left memory.
  size_t spill(spill_store &store);
  // Drops the `.iter` candidates (a step event was read: they will not be steps).
  void drop_iters();
  // The step candidates (steps, iters) back in memory; false when the spill file cannot be
  // read back.
  bool take_candidates(const spill_store *store);
  // All the thread's events; false when the spill file cannot be read back (*out then holds
  // what could be).
  bool take_layered(const spill_store *store, std::vector<layered_event> *out);
};

// What a file says of one process, and what was read of it.
struct process_facts {
  std::string host;     // the name of its HH (or PR hostname) line; "" when none
  std::string ppid;     // the `ppid` of its `start` event, as written; "" when none
  std::string pr_ppid;  // the value of a `PR ppid` line (the parent given after the header)
  std::string hhash;    // the `hhash` of its `start` event (names the host through an HH line)
  bool has_rank = false;
  int64_t rank = 0;
  bool has_end = false;
  uint64_t end_num_events = 0;  // the `end` event's num_events
  uint64_t event_records = 0;   // events as dftrace counts them (aggregated: their dft_cnt)
  uint64_t id_lines = 0;        // lines with an `id` but the `end` event (DFTracer's count)
  uint64_t ts_min = UINT64_MAX, end_max = 0;
  uint64_t checkpoint_events = 0, checkpoint_max_ns = 0;  // `checkpoint` events, the longest
  // `start` events read: each begins a lifetime, so more than one is two processes that one
  // key cannot tell apart (a pid reused, or a rank's pid written twice); start_files names
  // the files that hold them (sorted, each once).
  uint64_t starts = 0;
  std::vector<std::string> start_files;
  bool dftrace_writer = false;  // its `start` event has dftrace's clock fields
  bool shared_file = false;     // read from a file that holds other processes (a merged trace)
  void merge(const process_facts &o);
  // The parent: a `PR ppid` line's, else the start event's.
  const std::string &parent() const { return pr_ppid.empty() ? ppid : pr_ppid; }
};

// Calls and durations of one (cat, name): complete events and, counted but not in durs,
// aggregated records (their single durations are not in the trace). The durations are those in
// memory (durs) and those written to the spill file (runs; lo..hi their least and greatest).
struct name_durations {
  struct run {
    uint64_t offset = 0, count = 0;
  };
  uint64_t calls = 0, total = 0;
  std::vector<uint64_t> durs;
  std::vector<run> runs;
  uint64_t lo = UINT64_MAX, hi = 0;
  void merge(name_durations &o);
  // Writes durs to the store and frees it; the number written (0 when the store refuses: durs
  // is kept).
  size_t spill(spill_store &store);
  uint64_t count() const;
};

// Counts that match `dftrace stat`'s (same definitions).
struct line_counts {
  uint64_t lines = 0, objects = 0, invalid = 0, complete = 0, metadata = 0, counters = 0,
           instants = 0, aggregated = 0, unknown_phase = 0;
  // Timed lines left out of the figures: a ts or dur that is no time (negative, not a number,
  // past 2^64 ns) or an end past 2^64-1 ns. Listed as damage (inputs.cpp), never silent.
  uint64_t bad_times = 0;
  // I/O calls left out of the io figures: a ret, size or bytes that is no byte count
  // (io_event_bytes). Listed as damage too.
  uint64_t bad_bytes = 0;
  void merge(const line_counts &o);
};

// The result of one block, built on a worker thread.
struct block_part : detail::block_result {
  line_counts counts;
  std::unordered_map<std::string, process_facts> procs;    // pid as written
  std::unordered_map<std::string, thread_events> threads;  // pid '\x1f' tid
  std::unordered_map<std::string, std::string> hosts;      // HH value -> host name
  io_block io;
  std::unordered_map<std::string, name_durations> names;  // cat '\x1f' name (name_stats())
  std::unordered_map<std::string, coll_data> colls;       // pid as written
};

// Scans one block (the worker of for_each_block): thread-safe, no shared state but the
// read-only table.
void scan_block(detail::text_block &b, detail::time_unit unit, const layer_table &table);

// Everything read, keyed so that the order of the input files does not matter: processes by
// (host, pid, rank), threads by (host, pid, rank, tid) (process_key()).
struct collection {
  // Layered events held in memory since the last spill; past spill_after (0: never) every
  // thread's vectors go to the spill store.
  size_t buffered = 0, spill_after = 0;
  spill_store spill;
  line_counts counts;
  std::map<std::string, process_facts> procs;    // host '\x1f' pid
  std::map<std::string, thread_events> threads;  // host '\x1f' pid '\x1f' tid
  io_data io;
  std::unordered_map<std::string, name_durations> names;  // cat '\x1f' name (name_stats())
  size_t durations_buffered = 0;  // in names' durs; spilled past durations_budget()
  // A step event was read: the steps are those events, so no thread's `.iter` events are
  // kept (analyze_groups would not use them).
  bool any_step_event = false;
  std::map<std::string, coll_data> colls;  // host '\x1f' pid: its collectives and waits
  // Their calls and waits held in memory since the last spill: past
  // coll_calls_budget(spill_after) every process's calls and waits go to coll_file (read back
  // when its group is analysed, where a process's waits are tied to its calls).
  size_t coll_buffered = 0;
  std::shared_ptr<spill_store> coll_file;
};

// A process's key: host '\x1f' pid, and '\x1e' rank when it has one, so two ranks that share
// a pid on one host (a container each) stay two processes. The pieces of one process in
// several files (`dftrace split`, which copies the PR lines into each) meet again.
std::string process_key(const std::string &host, const std::string &pid, const process_facts &f);
// The pid as written in a process key.
std::string pid_of_key(const std::string &key);

// Folds one file's blocks (in file order) and then files into the collection.
class file_folder {
 public:
  // Folds a block in; spills everything in memory (this file's and c's) once c's budget of
  // buffered events is passed.
  void add(block_part &p, collection *c);
  // Moves the file's data into c, once the file is read (the pid's host is known only then);
  // path names the file in what is reported of its processes.
  void finish(collection *c, const std::string &path);

 private:
  line_counts counts_;
  std::unordered_map<std::string, process_facts> procs_;
  std::unordered_map<std::string, thread_events> threads_;
  std::unordered_map<std::string, std::string> hosts_;
  io_folder io_;
  std::unordered_map<std::string, coll_data> colls_;
};

}  // namespace dftrace::analysis
