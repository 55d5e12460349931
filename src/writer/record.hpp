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

// What a record's per-use arguments are: raw entries (raw_arg below: key and value bytes), JSON
// text ("k":v,...: counters, marks), or a prepared layout's values (prepared_args below).
enum class args_kind : uint8_t { raw = 0, json = 1, prepared = 2 };

// Header of one record; payload follows: the node's argument fragment, then the per-use one
// (for counters: "series":value). Records are 8-byte aligned.
struct rec {
  uint32_t size;  // header + payload, rounded up to 8
  rec_type type;
  args_kind use_args_kind;
  uint8_t ticked;               // 1: start/end are ticks (base/clock.hpp); 0: monotonic ns
  uint8_t aggregate;            // 1: folded into an aggregated record (aggregation.*), no line
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

// What the writer would otherwise format again and again: the `,"pid":P,"tid":T,"ts":` of the
// thread whose lines it is writing (they come in runs of one thread's), and the digits of the
// large numbers that repeat (a file's hash, on every event on that file). Owned by the writer,
// used under its lock.
struct format_cache {
  int64_t pid = 0, tid = 0;
  uint32_t prefix_len = 0;  // 0: nothing cached
  char prefix[64];
  struct number {
    uint64_t value;
    uint32_t len;  // 0: empty
    char text[20];
  };
  number numbers[64] = {};  // direct-mapped by the value's hash

  // The constant text of a prepared leaf's line (every I/O event), per (node, layout, thread):
  // `,"name":..,"cat":..,"pid":P,"tid":T,"ts":` after the id, then
  // `,"ph":"X","args":{"hhash":H,"key":` after the duration, and `,"key":` between the values.
  // format_record then writes the numbers between these pieces, and nothing else
  // (record_format.cpp: format_templated). Built on the first line of its key; a layout with
  // more keys, a key that is not an integer, or longer text is formatted the general way.
  static constexpr size_t k_template_keys = 12, k_template_text = 448;
  struct line_template {
    const std::string *name_cat = nullptr;  // null: an empty slot
    const void *layout = nullptr;
    const char *hhash = nullptr;  // the line_format's hhash_field it was built with
    size_t hhash_len = 0;
    int64_t pid = 0, tid = 0;
    bool metadata = true;
    // false: this key's line is not made of a template's pieces (a key that is not an integer,
    // too many keys, too long a text); remembered, so that it is formatted the general way
    // without trying again (and evicting a template that works) on every line.
    bool templated = false;
    uint8_t keys = 0;                     // the keys written, in order
    uint8_t slot[k_template_keys];        // each one's value index in the record
    uint8_t is_int[k_template_keys];      // 1: INT (signed), 0: UINT
    uint16_t head_len = 0, open_len = 0;  // text[0, head_len), then the open piece
    uint16_t key_at[k_template_keys];     // `,"key":` of keys 1.. (key 0 ends the open piece)
    uint8_t key_len[k_template_keys];
    char text[k_template_text];
  };
  // Two ways per set (a process's I/O has a few dozen templates: direct-mapped, two that share
  // a slot would rebuild each other on every file); a miss replaces the way used less recently.
  static constexpr size_t k_template_sets = 64;
  line_template templates[k_template_sets][2];
  uint8_t recent[k_template_sets] = {};  // the way used last in each set
};

// What the writer needs to turn records into lines; fixed when tracing starts (pid changes
// after fork).
struct line_format {
  arg_index *index = nullptr;     // the writer's scratch (format_record uses it when it fits)
  format_cache *cache = nullptr;  // the writer's scratch (null: everything formatted each time)
  tick_map *ticks = nullptr;  // ticks -> monotonic ns (the writer adds anchors); null: ns already
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

// Numeric per-use argument keys fixed once per call site (dftrace_arg_layout), so that neither
// the application thread nor the writer handles a key per event: a record of kind `prepared`
// holds the layout's address, then one 8-byte value per key. The writer copies each key's JSON,
// escaped once here. Built by prepare_args (record_format.cpp), immutable, never freed: a layout
// may be used by any thread until the process ends.
struct prepared_args {
  std::string raw;              // the keys' raw entries (raw_arg), with an 8-byte value slot each
  std::vector<uint32_t> slots;  // each value's offset in raw
  // Per key: `"key":` in `json` (escaped; a reserved key renamed user_<key>), its type, and
  // whether it is written (a key given twice is written at its last place only).
  struct json_key {
    uint32_t at, len;
    uint8_t type;
    bool written;
  };
  std::string json;
  std::vector<json_key> keys;
  size_t json_bound = 0;  // the longest text the arguments can make (line_bound)
};
// The layout of numeric raw entries `raw` (every entry an 8-byte number; checked by the caller).
std::unique_ptr<prepared_args> prepare_args(std::string raw);

// A prepared record's per-use part: the layout's address, then its values.
inline const prepared_args &prepared_of(std::string_view use_args) {
  const prepared_args *p;
  std::memcpy(&p, use_args.data(), sizeof p);
  return *p;
}
inline const char *prepared_values(std::string_view use_args) {
  return use_args.data() + sizeof(const prepared_args *);
}

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

// Walks a record's numeric per-use arguments, raw or prepared: fn(type, key, value) (JSON text
// has none).
template <typename Fn>
void for_each_use_arg(const rec &r, Fn fn) {
  const std::string_view use_args(r.use_args(), r.use_args_len);
  if (r.use_args_kind == args_kind::raw) return for_each_raw(use_args, fn);
  if (r.use_args_kind != args_kind::prepared) return;
  const prepared_args &p = prepared_of(use_args);
  const char *values = prepared_values(use_args);
  size_t i = 0;
  for_each_raw(p.raw, [&](uint8_t type, std::string_view key, std::string_view) {
    fn(type, key, std::string_view(values + 8 * i++, 8));
  });
}

// Upper bound of the line's length (raw arguments expand at most 8 times: escaping).
inline size_t line_bound(const rec &r) {
  const size_t use = r.use_args_kind == args_kind::prepared
                         ? prepared_of(std::string_view(r.use_args(), r.use_args_len)).json_bound
                         : 8 * static_cast<size_t>(r.use_args_len);
  return 256 + r.name_cat->size() + r.node_args_len + use;
}

// Writes the record's line (with its '\n') at out (room: line_bound(r)); returns the end. Sets
// *ts_us to the line's "ts". No allocation: safe in the fatal-signal path.
char *format_record(const line_format &f, const rec &r, char *out, uint64_t *ts_us);

}  // namespace dftrace::detail
