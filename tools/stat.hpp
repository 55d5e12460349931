// stat.hpp: what dftrace stat adds up (cmd_stat.cpp) and reports (stat_report.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/io_class.hpp"
#include "reader/trace_reader.hpp"
#include "stat_counters.hpp"

namespace dftrace::tools::stat {

struct name_stats {
  uint64_t count = 0;
  uint64_t total = 0;
  std::vector<uint64_t> durs;
};

struct span_stats {
  uint64_t events = 0;
  uint64_t ts_min = UINT64_MAX;
  uint64_t end_max = 0;
  void add(uint64_t ts, uint64_t end) {
    ++events;
    ts_min = std::min(ts_min, ts);
    end_max = std::max(end_max, end);
  }
  void merge(const span_stats &o) {
    events += o.events;
    ts_min = std::min(ts_min, o.ts_min);
    end_max = std::max(end_max, o.end_max);
  }
};

// The data one file moved through one layer (POSIX, STDIO, MPIIO, H5): bytes, calls and the
// time spent in them, reads and writes apart.
struct io_stats {
  uint64_t bytes[2] = {}, calls[2] = {}, ns[2] = {};  // [0] read, [1] write
  void merge(const io_stats &o) {
    for (int k = 0; k < 2; ++k) {
      analysis::add_bytes(&bytes[k], o.bytes[k]);
      analysis::add_count(&calls[k], o.calls[k]);
      analysis::add_ns(&ns[k], o.ns[k]);
    }
  }
};

// What one block (or the whole run) adds up to. Keys are the text the values stand for (JSON
// escapes decoded; an object or array in a hostile trace as its raw text).
struct partial : detail::block_result {
  uint64_t lines = 0;
  uint64_t objects = 0;
  uint64_t invalid = 0;
  uint64_t by_ph[128] = {};
  uint64_t dropped = 0;
  uint64_t aggregated = 0;  // aggregated records (DFTracer 2.x), folded into by_name
  uint64_t ts_min = UINT64_MAX;
  uint64_t end_max = 0;
  // Timed lines left out: a ts or dur that is no time, or an end past 2^64-1 ns (as analyze).
  uint64_t bad_times = 0;
  // I/O events whose bytes are no byte count (analysis::io_event_bytes), left out of io.
  uint64_t bad_bytes = 0;
  uint64_t all_bytes = 0;       // every I/O event's bytes, to find bytes_overflow
  bool bytes_overflow = false;  // they passed 2^64-1: the byte figures are held there
  std::unordered_map<std::string, name_stats> names;  // cat '\x1f' name
  std::unordered_map<std::string, span_stats> pids;
  std::unordered_map<std::string, span_stats> threads;  // pid '\x1f' tid
  std::unordered_map<std::string, std::string> ranks;   // pid -> rank
  // The writer's budget and sample lines: kind '\x1f' name '\x1f' value (what it folded).
  std::set<std::string> limits;
  // The flight recorder's trigger lines: time '\x1f' pid '\x1f' source '\x1f' reason '\x1f'
  // from '\x1f' after '\x1f' to (the window each wrote; to: an attach window's end, or empty).
  std::set<std::string> triggers;
  // Their windows' ends (trigger_end lines): pid '\x1f' trigger time -> when full detail ended.
  std::map<std::string, std::string> trigger_ends;
  std::unordered_map<std::string, io_stats> io;        // cat '\x1f' fhash
  std::unordered_map<std::string, std::string> files;  // fhash -> path (FH lines)
  counter_map counters;                                // counter series (stat_counters.hpp)

  // Whether a time figure (a name's total, a file's read or write time, or either summed over
  // the files) reached 2^64-1 ns: held there (analysis::add_ns), not exact.
  bool time_held() const {
    uint64_t all[2] = {};
    for (const auto &kv : io)
      for (int k = 0; k < 2; ++k) analysis::add_ns(&all[k], kv.second.ns[k]);
    if (analysis::held(all[0]) || analysis::held(all[1])) return true;  // each file's is part
    for (const auto &kv : names)
      if (analysis::held(kv.second.total)) return true;
    return false;
  }

  // Whether a count of calls (a name's, a file's reads or writes, or either summed over the
  // files) or the dropped events the end lines name reached 2^64-1: held there
  // (analysis::add_count), not exact.
  bool calls_held() const {
    uint64_t all[2] = {};
    for (const auto &kv : io)
      for (int k = 0; k < 2; ++k) analysis::add_count(&all[k], kv.second.calls[k]);
    if (analysis::held(all[0]) || analysis::held(all[1]) || analysis::held(dropped)) return true;
    for (const auto &kv : names)
      if (analysis::held(kv.second.count)) return true;
    return false;
  }

  void merge(partial &o) {
    lines += o.lines;
    objects += o.objects;
    invalid += o.invalid;
    for (int i = 0; i < 128; ++i) by_ph[i] += o.by_ph[i];
    analysis::add_count(&dropped, o.dropped);
    aggregated += o.aggregated;
    ts_min = std::min(ts_min, o.ts_min);
    end_max = std::max(end_max, o.end_max);
    bad_times += o.bad_times;
    bad_bytes += o.bad_bytes;
    bytes_overflow =
        bytes_overflow || o.bytes_overflow || !analysis::add_bytes(&all_bytes, o.all_bytes);
    for (auto &kv : o.names) {
      auto &d = names[kv.first];
      analysis::add_count(&d.count, kv.second.count);
      analysis::add_ns(&d.total, kv.second.total);
      if (d.durs.empty()) {
        d.durs = std::move(kv.second.durs);
      } else {
        d.durs.insert(d.durs.end(), kv.second.durs.begin(), kv.second.durs.end());
      }
    }
    for (auto &kv : o.pids) pids[kv.first].merge(kv.second);
    for (auto &kv : o.threads) threads[kv.first].merge(kv.second);
    for (auto &kv : o.ranks) ranks[kv.first] = kv.second;
    limits.insert(o.limits.begin(), o.limits.end());
    triggers.insert(o.triggers.begin(), o.triggers.end());
    trigger_ends.insert(o.trigger_ends.begin(), o.trigger_ends.end());
    for (auto &kv : o.io) io[kv.first].merge(kv.second);
    for (auto &kv : o.files) files.emplace(kv.first, std::move(kv.second));
    for (auto &kv : o.counters) counters[kv.first].merge(kv.second);
  }
};

// One input file: its bytes on disk and of text, its lines (counted, or from its DT fields)
// and its members (with a DT field).
struct file_summary {
  std::string path;
  uint64_t compressed = 0, text = 0, lines = 0;
  size_t members = 0, dt_members = 0;
  bool lines_from_dt = false;
};

// The report, as JSON (--json) or as text (--fast: no event counts).
std::string report(partial &all, const std::vector<file_summary> &summaries, bool json, bool fast);

}  // namespace dftrace::tools::stat
