// record.hpp: the binary event record that application threads write into their chunks; the
// writer thread turns each into one JSON line (docs/format.md section 2), so that formatting costs
// the application nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/format.hpp"

namespace dftrace::detail {

class tick_map;
class event_rules;

// mark: a metadata-mode CM line (`<node>.start`/`.end`): stamped with a tick like every event,
// so that marks and events are converted by the same map (use_args: the JSON-quoted mark name).
enum class rec_type : uint8_t { complete = 1, instant = 2, counter = 3, mark = 4 };

// Header of one record; payload follows: the node's argument fragment, then the per-use one
// (for counters: "series":value). Records are 8-byte aligned.
struct rec {
  uint32_t size;  // header + payload, rounded up to 8
  rec_type type;
  uint8_t use_args_json;  // 1: use_args is JSON text ("k":v,...); 0: raw entries (raw_arg below)
  uint8_t ticked;         // 1: start/end are ticks (base/clock.hpp); 0: monotonic ns
  uint8_t aggregate;      // 1: folded into an aggregated record (aggregation.*), no line
  const std::string *name_cat;  // the node's pre-escaped ,"name":..,"cat":.. (nodes live forever)
  uint64_t id;
  uint64_t start;  // a tick, or monotonic ns (see ticked)
  uint64_t end;    // the same unit as start
  int64_t parent_id;
  int64_t tid;
  uint32_t level;
  uint32_t node_args_len;
  uint32_t use_args_len;
  uint32_t count;  // iter item number, written as "count" after the use_args args; 0: none

  const char *node_args() const { return reinterpret_cast<const char *>(this + 1); }
  const char *use_args() const { return node_args() + node_args_len; }
};
static_assert(sizeof(rec) % 8 == 0, "records stay aligned");

inline constexpr size_t rec_size(size_t payload) {
  return (sizeof(rec) + payload + 7) & ~size_t(7);
}

// Scratch that makes an event with many per-use arguments cost linear time to format: an
// open-addressing table of their escaped keys (a later entry of the same key wins; a node
// argument of that key is replaced). Owned by the writer and grown by fit() before formatting
// (never on the fatal-signal path, which uses it only if it is already large enough).
struct arg_index {
  struct slot {
    uint64_t hash;
    uint32_t key_at, key_len;  // the escaped key in `keys`
    uint32_t own_off;          // the entry that wins
    uint32_t gen;              // in use when equal to the table's generation
  };
  std::vector<slot> slots;
  std::unique_ptr<char[]> keys;  // not zero-filled: only what is written is read
  size_t keys_cap = 0;
  uint32_t gen = 0;
  // Room for a record's per-use arguments; false when it would need to grow and may not.
  bool fit(std::string_view use_args, bool may_grow);
  static constexpr size_t k_small = 16;  // fewer entries: a direct scan is cheaper
};

// What the writer needs to turn records into lines; fixed when tracing starts (pid changes
// after fork).
struct line_format {
  arg_index *index = nullptr;  // the writer's scratch (format_record uses it when it fits)
  tick_map *ticks = nullptr;   // ticks -> monotonic ns (the writer adds anchors); null: ns already
  int64_t pid = 0;
  uint64_t epoch_offset_ns = 0;
  bool ns_precision = false;
  bool metadata = true;
  std::string hhash_field;             // "hhash":N, or empty when metadata is off
  uint64_t aggregate_interval_ns = 0;  // aggregation.interval (for aggregation and budgets)
  // output.budget per name (events per second, or bytes of lines per hour; 0: none) and
  // output.sample (cat or cat.name, N: 1 event in N written, the others aggregated).
  uint64_t budget_per_s = 0, budget_bytes_per_h = 0;
  std::vector<std::pair<std::string, uint64_t>> sample;
  // DFTracer's aggregation rules file (event_rules.hpp), when aggregation is on and one is given.
  std::shared_ptr<const event_rules> rules;
};

// A per-use argument as the application thread stores it: no escaping, no formatting (the
// writer does both). Layout: raw_arg header, key bytes, value bytes (8 raw bytes for
// int/uint/double, 1 for bool, the string's bytes for strings; a NULL string has type 0).
struct raw_arg {
  uint8_t type;  // dftrace_arg_type_t, or 0 for a NULL string
  uint8_t pad;
  uint16_t key_len;
  uint32_t value_len;
};
inline constexpr size_t k_max_arg_key = 1024;  // longer keys are cut (documented)

// Walks raw per-use entries: fn(type, key, value).
template <typename Fn>
void for_each_raw(std::string_view use_args, Fn fn) {
  size_t off = 0;
  while (off + sizeof(raw_arg) <= use_args.size()) {
    raw_arg h;
    std::memcpy(&h, use_args.data() + off, sizeof h);
    const size_t k = off + sizeof h;
    if (k + h.key_len + h.value_len > use_args.size()) return;
    fn(h.type, use_args.substr(k, h.key_len), use_args.substr(k + h.key_len, h.value_len));
    off = k + h.key_len + h.value_len;
  }
}

// A time on the trace's scale: CLOCK_MONOTONIC ns `mono` as an integer count of epoch
// microseconds, or at ns precision of epoch nanoseconds (the trace's `time_metric`). The one
// place "ts" values are written.
inline char *format_time(const line_format &f, char *p, uint64_t mono) {
  if (!f.ns_precision) return write_u64(p, (mono + f.epoch_offset_ns) / 1000);
  return write_u64(p, mono + f.epoch_offset_ns);
}

// Upper bound of the line's length (raw arguments expand at most 8 times: escaping).
inline size_t line_bound(const rec &r) {
  return 256 + r.name_cat->size() + r.node_args_len + 8 * static_cast<size_t>(r.use_args_len);
}

// Writes the record's line (with its '\n') at out (room: line_bound(r)); returns the end. Sets
// *ts_us to the line's "ts". No allocation: safe in the fatal-signal path.
char *format_record(const line_format &f, const rec &r, char *out, uint64_t *ts_us);

}  // namespace dftrace::detail
