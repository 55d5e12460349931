// columns.hpp: the columns of dftrace._reader: the result's memory (mappings), one block's
// columns with their dictionaries, and the whole read's columns (result), which the block
// scanner (scan.cpp) fills and _reader.cpp hands to Python. Private to ext/reader.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "reader/line_parser.hpp"
#include "reader/time_unit.hpp"
#include "reader/trace_reader.hpp"

namespace dftrace::pyreader {

using dftrace::detail::jtype;
using dftrace::detail::jvalue;
using dftrace::detail::parsed_line;
using dftrace::detail::time_unit;

// ---- memory of the result

// The result's columns live in anonymous mappings that Python receives without a copy (see
// column_buffer). A read writes hundreds of MB once: transparent huge pages are asked for, since
// faulting that memory in 4 KiB pages was a large part of a read. Grown by mremap (no copy by
// hand); throws std::bad_alloc when the memory is not there.
class mapping {
 public:
  mapping() = default;
  mapping(const mapping &) = delete;
  mapping &operator=(const mapping &) = delete;
  mapping(mapping &&o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr, o.bytes_ = 0; }
  mapping &operator=(mapping &&o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~mapping() {
    if (p_) munmap(p_, bytes_);
  }
  char *data() const { return static_cast<char *>(p_); }
  size_t bytes() const { return bytes_; }
  // At least n bytes, keeping the first ones.
  void reserve(size_t n) {
    if (n <= bytes_) return;
    constexpr size_t huge = size_t{2} << 20;
    const size_t want = (std::max(n, bytes_ * 2) + huge - 1) / huge * huge;
    void *q = p_ ? mremap(p_, bytes_, want, MREMAP_MAYMOVE)
                 : mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED) throw std::bad_alloc();
    madvise(q, want, MADV_HUGEPAGE);
    p_ = q;
    bytes_ = want;
  }
  // Hands the memory over (to a column_buffer, which unmaps it).
  void *release() {
    void *p = p_;
    p_ = nullptr;
    bytes_ = 0;
    return p;
  }

 private:
  void *p_ = nullptr;
  size_t bytes_ = 0;
};

// One column of the whole read.
template <typename T>
struct column {
  mapping m;
  size_t n = 0;
  // Room for k more values at the end; returns where they go (the caller writes all k).
  T *extend(size_t k) {
    m.reserve((n + k) * sizeof(T));
    T *p = reinterpret_cast<T *>(m.data()) + n;
    n += k;
    return p;
  }
};

// The integer columns, in this order: pid, tid, ts, dur, level, p_idx, id, and the rank of the
// pid (from PR lines, -1 unknown). Python makes them one (8, rows) int64 array over one mapping
// (pandas keeps it as one block, without a copy), with `cap` values between the starts of two
// columns. Blocks read the first seven; the rank is filled in at the end of the read.
constexpr int k_ints = 7, k_int_rows = 8;
struct int_block {
  mapping m;
  size_t cap = 0, n = 0;
  int64_t *col(int k) const { return reinterpret_cast<int64_t *>(m.data()) + k * cap; }
  void reserve(size_t rows) {
    if (rows <= cap) return;
    const size_t fresh_cap = std::max({rows, cap * 2, size_t{1} << 16});
    mapping fresh;
    fresh.reserve(k_int_rows * fresh_cap * sizeof(int64_t));
    for (int k = 0; k < k_ints && n; ++k)
      std::memcpy(reinterpret_cast<int64_t *>(fresh.data()) + k * fresh_cap, col(k), n * 8);
    m = std::move(fresh);
    cap = fresh_cap;
  }
};

// ---- one block's columns

// Short strings compared without a call: 8, 4 or 1 bytes at a time, the last load overlapping
// (no byte outside either string is read).
inline uint64_t load64(const char *p) {
  uint64_t x;
  std::memcpy(&x, p, 8);
  return x;
}
inline uint32_t load32(const char *p) {
  uint32_t x;
  std::memcpy(&x, p, 4);
  return x;
}
[[gnu::always_inline]] inline bool same_text(std::string_view a, std::string_view b) {
  const size_t n = a.size();
  if (n != b.size()) return false;
  const char *p = a.data(), *q = b.data();
  if (n >= 8) {
    for (size_t i = 0; i + 8 < n; i += 8)
      if (load64(p + i) != load64(q + i)) return false;
    return load64(p + n - 8) == load64(q + n - 8);
  }
  if (n >= 4) return load32(p) == load32(q) && load32(p + n - 4) == load32(q + n - 4);
  for (size_t i = 0; i < n; ++i)
    if (p[i] != q[i]) return false;
  return true;
}

// A key's length and up to 8 of its bytes (its first and last four): equal signatures are the
// same key when it is at most 8 bytes long; longer keys are compared whole as well.
struct key_sig {
  size_t n = 0;
  uint64_t v = 0;
  bool operator==(const key_sig &o) const { return n == o.n && v == o.v; }
};
inline key_sig sig_of(std::string_view k) {
  key_sig s;
  s.n = k.size();
  if (k.size() >= 4) {
    s.v = load32(k.data()) | static_cast<uint64_t>(load32(k.data() + k.size() - 4)) << 32;
  } else {
    for (size_t i = 0; i < k.size(); ++i)
      s.v |= static_cast<uint64_t>(static_cast<unsigned char>(k[i])) << (8 * i);
  }
  return s;
}

// Strings as codes into a table of distinct values (names, categories, string arguments).
// Open addressing over a cheap hash of the bytes; before it, the last string looked up of the
// same length and first and last letters (a trace's few names alternate, and a string that
// repeats from line to line is found there as well). No allocation on a hit.
class dictionary {
 public:
  std::deque<std::string> values;  // in code order; a deque keeps them in place for the views
  // Inline: it runs for the name, category and hash arguments of every line, and mostly hits.
  [[gnu::always_inline]] int32_t code(std::string_view s) {
    const size_t n = s.size();
    int32_t &recent = recent_[n ? (n * 7 + static_cast<unsigned char>(s[0]) * 3 +
                                   static_cast<unsigned char>(s[n - 1])) %
                                      k_recent
                                : 0];
    if (recent >= 0 && same_text(s, views_[static_cast<size_t>(recent)])) return recent;
    return recent = lookup(s);
  }
  void clear() {
    values.clear();
    views_.clear();
    std::fill(slots_.begin(), slots_.end(), -1);
    std::fill(std::begin(recent_), std::end(recent_), -1);
  }

 private:
  static constexpr size_t k_recent = 32;
  [[gnu::noinline]] int32_t lookup(std::string_view s) {
    if (views_.size() * 2 >= slots_.size()) grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash(s) & mask;; i = (i + 1) & mask) {
      const int32_t c = slots_[i];
      if (c < 0) {
        slots_[i] = static_cast<int32_t>(views_.size());
        values.emplace_back(s);
        views_.push_back(values.back());
        return slots_[i];
      }
      if (same_text(views_[static_cast<size_t>(c)], s)) return c;
    }
  }
  static size_t hash(std::string_view s) {
    const char *p = s.data();
    const size_t n = s.size();
    uint64_t h = n * 0x9E3779B97F4A7C15ull, x = 0;
    if (n >= 8) {
      for (size_t i = 0; i + 8 < n; i += 8) h = (h ^ load64(p + i)) * 0xff51afd7ed558ccdull;
      x = load64(p + n - 8);
    } else if (n >= 4) {
      x = load32(p) | static_cast<uint64_t>(load32(p + n - 4)) << 32;
    } else {
      for (size_t k = 0; k < n; ++k)
        x |= static_cast<uint64_t>(static_cast<unsigned char>(p[k])) << (8 * k);
    }
    h = (h ^ x) * 0xc4ceb9fe1a85ec53ull;
    return static_cast<size_t>(h ^ (h >> 32));
  }
  void grow() {
    slots_.assign(std::max<size_t>(64, slots_.size() * 2), -1);
    const size_t mask = slots_.size() - 1;
    for (size_t c = 0; c < views_.size(); ++c) {
      size_t i = hash(views_[c]) & mask;
      while (slots_[i] >= 0) i = (i + 1) & mask;
      slots_[i] = static_cast<int32_t>(c);
    }
  }
  std::vector<std::string_view> views_;
  std::vector<int32_t> slots_;
  int32_t recent_[k_recent] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                               -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
};

// One requested argument. Hash references (hhash, fhash, *_hash) are text codes only (-1:
// missing); any other argument has a kind per row and an 8-byte value: the int64, the double's
// bits, or the text's code (the kinds tell Python the dtype).
enum : uint8_t { k_missing = 0, k_int = 1, k_float = 2, k_text = 3 };
struct arg_column {
  bool hash = false;
  std::vector<uint8_t> kind;
  std::vector<int64_t> v;
  std::vector<int32_t> s;  // hash references
  dictionary dict;
};

struct what {
  std::vector<std::string> cat_list, name_list;
  std::unordered_set<std::string_view> cats, names;  // views of the lists
  bool has_start = false, has_end = false;
  uint64_t start = 0, end = 0;  // ns: events with start <= ts < end
  std::vector<std::string> args;
  std::vector<key_sig> arg_sigs;  // of args
  // only hash definitions and ranks (dftrace.dask's first pass; no line counts then)
  bool metadata_only = false;
  // a time window skips members by their DT fields: check that each event read lies in its
  // member's DT range (one that does not may have been skipped by the window elsewhere)
  bool check_dt = false;
  // only the keys of the events' arguments (dftrace.read(args=True)'s first pass)
  bool keys_only = false;
};

// A flight-recorder window's line (trigger or trigger_end, docs/flight-recorder.md), its times
// in ns since the epoch (-1: absent).
struct window_line {
  int64_t pid = -1, time_ns = -1, from_ns = -1, to_ns = -1;
  std::string kind, source, reason, after;
};

// The columns of one block. Reused from block to block (their vectors keep their size). The
// vectors are sized ahead (room), and a line's values are written at index rows without a check
// per value: one per line.
struct columns : dftrace::detail::block_result {
  std::vector<int32_t> name, cat, ph;
  std::vector<int64_t> ints[k_ints];
  size_t rows = 0, cap = 0;  // rows written; rows every vector holds
  dictionary names, cats, phs;
  int32_t letter_code[256];  // phs' code of a one-letter ph, -1 until seen
  std::vector<arg_column> args;
  // hash definitions (type, value text) -> string, and pid -> rank, from metadata lines
  std::vector<std::pair<std::string, std::string>> hashes;  // value text, string
  std::vector<std::string> hash_types;
  std::vector<std::pair<int64_t, int64_t>> ranks;
  std::vector<window_line> windows;   // trigger and trigger_end lines
  std::vector<std::string> arg_keys;  // keys_only: in the order first seen (decoded)
  uint64_t invalid = 0, skipped = 0, lines = 0;
  uint64_t outside_dt = 0;  // events outside their member's DT time range (what::check_dt)
  // Rows whose ts or dur (an aggregated record's total, say) passed 2^63-1 ns, the int64
  // columns' limit: held there, never wrapped to a negative or small time.
  uint64_t past_int64 = 0;

  void reset(const what &w) {
    arg_keys.clear();
    rows = 0;
    names.clear();
    cats.clear();
    phs.clear();
    std::fill(std::begin(letter_code), std::end(letter_code), -1);
    if (args.size() != w.args.size()) {
      args.resize(w.args.size());
      cap = 0;  // the new ones have no room yet
    }
    for (size_t a = 0; a < args.size(); ++a) {
      args[a].hash = dftrace::detail::is_hash_ref_key(w.args[a]);
      args[a].dict.clear();
    }
    hashes.clear();
    hash_types.clear();
    ranks.clear();
    windows.clear();
    invalid = skipped = lines = outside_dt = past_int64 = 0;
  }
  // Room for at least n rows in every column.
  void room(size_t n) {
    if (n <= cap) return;
    cap = std::max(n, cap * 2);
    for (auto *v : {&name, &cat, &ph}) v->resize(cap);
    for (auto &v : ints) v.resize(cap);
    for (auto &c : args) {
      c.kind.resize(c.hash ? 0 : cap);
      c.v.resize(c.hash ? 0 : cap);
      c.s.resize(c.hash ? cap : 0);
    }
  }
};

// Blocks' columns waiting for reuse (the workers take, the consumer gives back).
class column_pool {
 public:
  std::unique_ptr<columns> take() {
    std::lock_guard<std::mutex> lk(mu_);
    if (free_.empty()) return std::make_unique<columns>();
    auto c = std::move(free_.back());
    free_.pop_back();
    return c;
  }
  void give(std::unique_ptr<columns> c) {
    std::lock_guard<std::mutex> lk(mu_);
    free_.push_back(std::move(c));
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<columns>> free_;
};

// The columns of the whole read: every block appended in file order, its codes rewritten into
// the read's dictionaries.
struct result_arg {
  column<int32_t> s;
  column<uint8_t> kind;
  column<int64_t> v;
  dictionary dict;
};

struct result {
  column<int32_t> name, cat, ph;
  int_block ints;
  dictionary names, cats, phs;
  std::vector<result_arg> args;
  std::vector<std::pair<std::string, std::string>> hashes;
  std::vector<std::string> hash_types;
  std::vector<std::pair<int64_t, int64_t>> ranks;
  std::vector<window_line> windows;
  std::vector<std::string> arg_keys;  // keys_only: every argument key, in the order first seen
  std::unordered_set<std::string> seen_keys;
  uint64_t invalid = 0, skipped = 0, lines = 0, outside_dt = 0, past_int64 = 0;
  size_t rows = 0;

  // Appends a block: its rows, its codes rewritten into the read's dictionaries.
  void add(columns &b);
};

// Parses a block's lines into its own columns (what `w` asks for, times in `unit`), on a
// thread of the reader's pool.
void scan(dftrace::detail::text_block &b, const what &w, time_unit unit, column_pool &pool);

}  // namespace dftrace::pyreader
