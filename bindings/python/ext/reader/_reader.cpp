// _reader.cpp: dftrace._reader, the columns behind dftrace.read (bindings/python/ext/reader/README.md).
// Files are read by the C++ reader (src/reader: members inflated and lines parsed on a pool of
// threads); each block becomes columns of its own, which are appended in file order. Nothing
// here builds Python objects per line: the result is a few byte buffers and small
// dictionaries, which dftrace/_read.py turns into a pandas DataFrame.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <sys/mman.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "reader/aggregated.hpp"
#include "reader/json_string.hpp"
#include "reader/line_parser.hpp"
#include "reader/time_unit.hpp"
#include "reader/trace_reader.hpp"

namespace {

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
  std::vector<std::string> arg_keys;  // keys_only: in the order first seen (decoded)
  uint64_t invalid = 0, skipped = 0, lines = 0;
  uint64_t outside_dt = 0;  // events outside their member's DT time range (what::check_dt)

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
    invalid = skipped = lines = outside_dt = 0;
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

int64_t int_or(const jvalue &v, int64_t def) {
  // Short bare integers (id, level, p_idx) directly: up to 18 digits cannot overflow.
  const std::string_view t = v.text;
  if (v.type == jtype::number && !t.empty() && t.size() <= 18) {
    const bool neg = t[0] == '-';
    int64_t x = 0;
    size_t i = neg;
    for (; i < t.size(); ++i) {
      const unsigned d = static_cast<unsigned char>(t[i] - '0');
      if (d > 9) break;
      x = x * 10 + d;
    }
    if (i == t.size() && t.size() > size_t{neg}) return neg ? -x : x;
  }
  int64_t x = 0;
  return v.present() && dftrace::detail::value_i64(v, &x) ? x : def;
}

// int_or for the short integers of every line (level, p_idx, id), inline: a number of at most
// nine characters that the parser found valid is an integer when it is all digits. limit: the
// end of the readable text (the block's); where 8 bytes can be read from the digits, up to 8 of
// them are read at once (little-endian CPUs).
[[gnu::always_inline]] inline int64_t small_int_or(const jvalue &v, int64_t def,
                                                   const char *limit) {
  const std::string_view t = v.text;
  if (v.type == jtype::number && t.size() - 1 < 9) {
    const bool neg = t[0] == '-';
    const char *p = t.data() + neg;
    const size_t n = t.size() - neg;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n - 4 < 5 && limit - p >= 8) {  // 4 to 8 digits (ids); fewer: the loop below
      // the n digits moved to the top bytes, '0' below them (leading zeros of the same value)
      const uint64_t c = load64(p) << (8 * (8 - n)) | (0x3030303030303030ull >> (8 * n - 1) >> 1);
      constexpr uint64_t hi = 0xF0F0F0F0F0F0F0F0ull;
      if (((c & hi) | (((c + 0x0606060606060606ull) & hi) >> 4)) == 0x3333333333333333ull) {
        uint64_t d = c - 0x3030303030303030ull;  // the first digit is the lowest byte
        d = (d * 10 + (d >> 8)) & 0x00FF00FF00FF00FFull;
        d = (d * 100 + (d >> 16)) & 0x0000FFFF0000FFFFull;
        d = (d * 10000 + (d >> 32)) & 0xFFFFFFFFull;
        return neg ? -static_cast<int64_t>(d) : static_cast<int64_t>(d);
      }
      return int_or(v, def);  // a fraction or an exponent
    }
#else
    (void)limit;
#endif
    int64_t x = 0;
    for (size_t i = 0; i < n; ++i) {
      const unsigned d = static_cast<unsigned char>(p[i] - '0');
      if (d > 9) return int_or(v, def);  // a fraction or an exponent
      x = x * 10 + d;
    }
    if (n) return neg ? -x : x;
  }
  return int_or(v, def);
}

// An integer field whose text mostly repeats from line to line (pid, tid): parsed once per change.
struct cached_int {
  std::string_view text;
  int64_t value = -1;
  int64_t get(const jvalue &v) {
    if (!text.empty() && same_text(v.text, text)) return value;
    value = int_or(v, -1);
    text = v.text;
    return value;
  }
};

// Reads one requested argument's value into its column, at row.
void put_arg(arg_column &c, const jvalue *v, size_t row, std::string *scratch) {
  if (c.hash) {  // hashes stay text: matched as written, never rounded
    c.s[row] =
        v && (v->type == jtype::number || v->type == jtype::string) ? c.dict.code(v->text) : -1;
    return;
  }
  uint8_t kind = k_missing;
  int64_t iv = 0;
  if (v && v->type == jtype::number) {
    if (dftrace::detail::value_is_integer(*v) && dftrace::detail::value_i64(*v, &iv)) {
      kind = k_int;
    } else {
      kind = k_float;
      const double d = std::strtod(std::string(v->text).c_str(), nullptr);
      std::memcpy(&iv, &d, 8);
    }
  } else if (v &&
             (v->type == jtype::string || v->type == jtype::object || v->type == jtype::array)) {
    kind = k_text;  // strings as they are meant (escapes decoded); objects and arrays as JSON text
    iv = c.dict.code(dftrace::detail::string_text(*v, scratch));
  } else if (v && v->type == jtype::boolean) {
    kind = k_int;
    iv = v->text == "true";
  }
  c.kind[row] = kind;
  c.v[row] = iv;
}

// A metadata line's hash definition (HH, FH, SH) or rank (PR), kept.
void keep_metadata(const parsed_line &pl, columns &r) {
  const jvalue *n = pl.arg_value("name");
  const jvalue *v = pl.arg_value("value");
  std::string buf;
  const std::string_view t = dftrace::detail::string_text(pl.name, &buf);
  if (n && v && (t == "HH" || t == "FH" || t == "SH") && n->type == jtype::string) {
    // the hash as written (references match it so), the string as it is meant
    r.hashes.emplace_back(std::string(v->text), dftrace::detail::decoded(*n));
    r.hash_types.emplace_back(t);
  } else if (n && v && t == "PR" && dftrace::detail::text_equals(*n, "rank")) {
    r.ranks.emplace_back(int_or(pl.pid, -1), int_or(*v, -1));
  }
}

// Calls fn(pos) for each position of mark (at least 6 bytes) in text, in order. Two of its
// bytes that rarely stand at that distance in a trace (its second and its last) are looked
// for 16 positions at a time; only where both are is the whole mark compared.
template <typename Fn>
void find_each(std::string_view text, std::string_view mark, Fn &&fn) {
  const size_t last = mark.size() - 1;
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i a = _mm_set1_epi8(mark[1]), z = _mm_set1_epi8(mark[last]);
  for (; i + last + 16 <= text.size(); i += 16) {
    const char *p = text.data() + i;
    unsigned both = static_cast<unsigned>(_mm_movemask_epi8(_mm_and_si128(
        _mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)), a),
        _mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p + last - 1)), z))));
    for (; both; both &= both - 1) {
      const size_t at = i + static_cast<size_t>(__builtin_ctz(both));
      if (at > 0 && text.compare(at - 1, mark.size(), mark) == 0) fn(at - 1);
    }
  }
  if (i > 0) --i;  // a mark that starts one byte before the rest
#endif
  for (; i + mark.size() <= text.size(); ++i)
    if (text.compare(i, mark.size(), mark) == 0) fn(i);
}

// dftrace.dask's first pass: only the metadata lines, found by searching the block for their
// phase ("ph":"M", or DFTracer 2.x's "ph":4) instead of going line by line.
void scan_metadata(std::string_view text, columns &r) {
  std::vector<size_t> starts;  // of the lines that hold either
  for (const std::string_view mark :
       {std::string_view("\"ph\":\"M\""), std::string_view("\"ph\":4")})
    find_each(text, mark, [&](size_t pos) {
      const size_t nl = text.rfind('\n', pos);
      starts.push_back(nl == std::string_view::npos ? 0 : nl + 1);
    });
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  parsed_line pl;
  for (const size_t start : starts) {
    const size_t nl = text.find('\n', start);
    const std::string_view line =
        text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    if (!dftrace::detail::parse_line(line, pl)) {
      ++r.invalid;
    } else if (dftrace::detail::phase(pl) == 'M') {
      keep_metadata(pl, r);
    }
  }
}

// keys_only: the line's argument keys (decoded) not seen before, in order; an aggregated
// record's calls count as its dft_cnt.
[[gnu::noinline]] void collect_keys(const parsed_line &pl, bool folded,
                                    std::unordered_set<std::string> &seen, columns &r) {
  std::string buf;
  for (int a = 0; a < pl.nargs; ++a) {
    const std::string_view key = dftrace::detail::string_text(pl.args_kv[a].key, &buf);
    if (seen.insert(std::string(key)).second) r.arg_keys.emplace_back(key);
  }
  if (folded && seen.insert("dft_cnt").second) r.arg_keys.emplace_back("dft_cnt");
}

// An aggregated record without dft_cnt (DFTracer 2.0.2's counter form): a requested dft_cnt
// is the calls it folds, derived.
[[gnu::noinline]] void derive_calls(const what &w, uint64_t calls, const jvalue **found,
                                    std::string *text, jvalue *value) {
  for (size_t q = 0; q < w.args.size(); ++q)
    if (!found[q] && w.args[q] == "dft_cnt") {
      *text = std::to_string(calls);
      *value = jvalue{jtype::number, *text};
      found[q] = value;
    }
}

void scan(dftrace::detail::text_block &b, const what &w, time_unit unit, column_pool &pool) {
  std::unique_ptr<columns> r = pool.take();
  r->reset(w);
  if (w.metadata_only) {
    scan_metadata(b.whole_lines(), *r);
    b.result = std::move(r);
    return;
  }
  r->room(b.text.size() / 128 + 16);  // lines of a typical event's length
  const size_t nargs = w.args.size();
  // The requested arguments of a line (null: not in it); put back to null as they are read.
  std::vector<const jvalue *> found_of(nargs);
  const jvalue **const found = found_of.data();
  const key_sig level_sig = sig_of("level"), p_idx_sig = sig_of("p_idx");
  cached_int pid, tid;
  parsed_line pl;
  std::string name_buf, cat_buf, ph_buf, key_buf;
  std::string calls_text;  // an aggregated record's calls, as a number's text
  jvalue calls_value;
  std::unordered_set<std::string> seen_keys;
  const std::string_view text = b.whole_lines();
  const char *const limit = text.data() + text.size();
  // DT times are epoch microseconds
  const dftrace::detail::dt_field *dt =
      w.check_dt && b.part && b.part->kind == dftrace::detail::planned_part::member ? &b.part->dt
                                                                                    : nullptr;
  dftrace::detail::for_each_line(text, [&](std::string_view line) {
    ++r->lines;
    size_t k = 0;
    while (k < line.size() && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r')) ++k;
    if (k == line.size() || line[k] == '[' || line[k] == ']') return true;
    if (!dftrace::detail::parse_line(line, pl)) {
      ++r->invalid;
      return true;
    }
    char ph = dftrace::detail::phase(pl);
    if (ph == 'M') {
      keep_metadata(pl, *r);
      return true;
    }
    uint64_t ts = 0, dur = 0;
    if (!pl.ts.present() || !dftrace::detail::value_ns(pl.ts, unit, &ts)) {
      ++r->skipped;  // not an event with a time
      return true;
    }
    if (dt && (ts / 1000 < dt->ts_min || ts / 1000 > dt->ts_max)) ++r->outside_dt;
    if ((w.has_start && ts < w.start) || (w.has_end && ts >= w.end)) return true;
    // names and categories as they are meant (escapes decoded; without a backslash, no copy)
    if (!w.cats.empty() && !w.cats.count(dftrace::detail::string_text(pl, pl.cat, &cat_buf)))
      return true;
    if (!w.names.empty() && !w.names.count(dftrace::detail::string_text(pl, pl.name, &name_buf)))
      return true;
    if (pl.dur.present()) dftrace::detail::value_ns(pl.dur, unit, &dur);
    // An aggregated record ("A", or DFTracer 2.0.2's counter form) is a row of ph "A" whose dur
    // is its calls' total time; the calls are its dft_cnt argument.
    uint64_t calls = 0;
    bool folded = false;
    if (ph == 'A' || (ph == 'C' && dftrace::detail::is_counter_aggregate(pl))) {
      folded = dftrace::detail::aggregated_calls(pl, unit, &calls, &dur);
      ph = 'A';
    }
    if (w.keys_only) {
      collect_keys(pl, folded, seen_keys, *r);
      return true;
    }
    if (r->rows == r->cap) r->room(r->cap + 1);
    const size_t row = r->rows++;
    r->name[row] = r->names.code(dftrace::detail::string_text(pl, pl.name, &name_buf));
    r->cat[row] = r->cats.code(dftrace::detail::string_text(pl, pl.cat, &cat_buf));
    // a phase of one character holds no escape: only longer ones ("\u0058") are decoded
    const std::string_view ph_text =
        pl.ph.type != jtype::string || ph == 'A' ? std::string_view(&ph, 1)
        : pl.ph.text.size() == 1                 ? pl.ph.text
                                                 : dftrace::detail::string_text(pl.ph, &ph_buf);
    if (ph_text.size() == 1) {  // a letter (mostly "X"): its code looked up once per block
      int32_t &c = r->letter_code[static_cast<unsigned char>(ph_text[0])];
      r->ph[row] = c >= 0 ? c : (c = r->phs.code(ph_text));
    } else {
      r->ph[row] = r->phs.code(ph_text);
    }
    // One pass over the arguments finds level, p_idx and the requested keys (by signature).
    const jvalue *lv = nullptr, *pi = nullptr;
    for (int a = 0; a < pl.nargs; ++a) {
      std::string_view key = pl.args_kv[a].key;
      if (!pl.no_escapes) key = dftrace::detail::string_text(key, &key_buf);  // as meant
      const key_sig ks = sig_of(key);
      if (ks == level_sig) {
        lv = &pl.args_kv[a].value;
      } else if (ks == p_idx_sig) {
        pi = &pl.args_kv[a].value;
      } else {
        for (size_t q = 0; q < nargs; ++q)
          if (!found[q] && ks == w.arg_sigs[q] && (ks.n <= 8 || key == w.args[q]))
            found[q] = &pl.args_kv[a].value;
      }
    }
    r->ints[0][row] = pid.get(pl.pid);  // the text stays valid: the block outlives the scan
    r->ints[1][row] = tid.get(pl.tid);
    r->ints[2][row] = static_cast<int64_t>(ts);
    r->ints[3][row] = static_cast<int64_t>(dur);
    r->ints[4][row] = lv ? small_int_or(*lv, -1, limit) : -1;
    r->ints[5][row] = pi ? small_int_or(*pi, -1, limit) : -1;
    r->ints[6][row] = small_int_or(pl.id, -1, limit);
    if (folded) derive_calls(w, calls, found, &calls_text, &calls_value);
    for (size_t q = 0; q < nargs; ++q) {
      put_arg(r->args[q], found[q], row, &key_buf);
      found[q] = nullptr;
    }
    return true;
  });
  b.result = std::move(r);
}

// Codes of a block's dictionary as codes of the read's (-1 stays -1), written to out.
void recode(const std::vector<int32_t> &codes, size_t n, const dictionary &local,
            dictionary &global, int32_t *out) {
  std::vector<int32_t> map(local.values.size());
  for (size_t k = 0; k < local.values.size(); ++k) map[k] = global.code(local.values[k]);
  const int32_t *c = codes.data();
  for (size_t r = 0; r < n; ++r) out[r] = c[r] < 0 ? -1 : map[static_cast<size_t>(c[r])];
}

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
  std::vector<std::string> arg_keys;  // keys_only: every argument key, in the order first seen
  std::unordered_set<std::string> seen_keys;
  uint64_t invalid = 0, skipped = 0, lines = 0, outside_dt = 0;
  size_t rows = 0;

  void add(columns &b) {
    const size_t n = b.rows;
    recode(b.name, n, b.names, names, name.extend(n));
    recode(b.cat, n, b.cats, cats, cat.extend(n));
    recode(b.ph, n, b.phs, phs, ph.extend(n));
    ints.reserve(rows + n);
    for (int k = 0; k < k_ints; ++k)
      if (n) std::memcpy(ints.col(k) + rows, b.ints[k].data(), n * 8);
    ints.n = rows + n;
    for (size_t a = 0; a < args.size(); ++a) {
      arg_column &c = b.args[a];
      result_arg &out = args[a];
      if (c.hash) {
        recode(c.s, n, c.dict, out.dict, out.s.extend(n));
        continue;
      }
      if (n) std::memcpy(out.kind.extend(n), c.kind.data(), n);
      int64_t *v = out.v.extend(n);
      std::vector<int32_t> map(c.dict.values.size());
      for (size_t k = 0; k < map.size(); ++k) map[k] = out.dict.code(c.dict.values[k]);
      for (size_t r = 0; r < n; ++r)
        v[r] = c.kind[r] == k_text ? map[static_cast<size_t>(c.v[r])] : c.v[r];
    }
    for (size_t h = 0; h < b.hashes.size(); ++h) {
      hashes.push_back(std::move(b.hashes[h]));
      hash_types.push_back(std::move(b.hash_types[h]));
    }
    ranks.insert(ranks.end(), b.ranks.begin(), b.ranks.end());
    for (auto &k : b.arg_keys)
      if (seen_keys.insert(k).second) arg_keys.push_back(std::move(k));
    invalid += b.invalid;
    skipped += b.skipped;
    outside_dt += b.outside_dt;
    lines += b.lines;
    rows += n;
  }
};

// ---- to Python

// A result column as a Python object: it owns the column's mapping and exposes its first `len`
// bytes through the buffer protocol (numpy.frombuffer wraps them without a copy and keeps the
// object alive as long as the array).
struct column_buffer {
  PyObject_HEAD void *data;
  size_t bytes;  // of the mapping
  Py_ssize_t len;
};

PyObject *g_column_buffer_type = nullptr;

int column_buffer_get(PyObject *o, Py_buffer *view, int flags) {
  auto *c = reinterpret_cast<column_buffer *>(o);
  static char empty[1];
  return PyBuffer_FillInfo(view, o, c->data ? c->data : empty, c->len, 0, flags);
}

void column_buffer_dealloc(PyObject *o) {
  auto *c = reinterpret_cast<column_buffer *>(o);
  if (c->data) munmap(c->data, c->bytes);
  PyTypeObject *type = Py_TYPE(o);
  type->tp_free(o);
  Py_DECREF(type);
}

PyType_Slot column_buffer_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void *>(column_buffer_dealloc)},
    {Py_bf_getbuffer, reinterpret_cast<void *>(column_buffer_get)},
    {Py_tp_doc, const_cast<char *>("A column of dftrace._reader.read_columns (a byte buffer).")},
    {0, nullptr}};
PyType_Spec column_buffer_spec = {"dftrace._reader.column_buffer", sizeof(column_buffer), 0,
                                  Py_TPFLAGS_DEFAULT, column_buffer_slots};

// The first len bytes of m, m's memory handed over to Python.
PyObject *buffer_of(mapping &m, size_t len) {
  auto *c = PyObject_New(column_buffer, reinterpret_cast<PyTypeObject *>(g_column_buffer_type));
  if (!c) return nullptr;
  c->bytes = m.bytes();
  c->data = m.release();
  c->len = static_cast<Py_ssize_t>(len);
  return reinterpret_cast<PyObject *>(c);
}

template <typename T>
PyObject *buffer_of(column<T> &c) {
  return buffer_of(c.m, c.n * sizeof(T));
}

template <typename T>
PyObject *bytes_of(const std::vector<T> &v) {
  return PyBytes_FromStringAndSize(reinterpret_cast<const char *>(v.data()),
                                   static_cast<Py_ssize_t>(v.size() * sizeof(T)));
}

template <typename Strings>
PyObject *list_of(const Strings &v) {
  PyObject *l = PyList_New(static_cast<Py_ssize_t>(v.size()));
  if (!l) return nullptr;
  for (size_t k = 0; k < v.size(); ++k) {
    PyObject *s =
        PyUnicode_DecodeUTF8(v[k].data(), static_cast<Py_ssize_t>(v[k].size()), "surrogateescape");
    if (!s) {
      Py_DECREF(l);
      return nullptr;
    }
    PyList_SET_ITEM(l, static_cast<Py_ssize_t>(k), s);
  }
  return l;
}

// d[key] = value, stealing value; false (with an exception set) when value is null.
bool put(PyObject *d, const char *key, PyObject *value) {
  if (!value) return false;
  const int rc = PyDict_SetItemString(d, key, value);
  Py_DECREF(value);
  return rc == 0;
}

bool strings_of(PyObject *seq, std::vector<std::string> *out) {
  if (seq == Py_None) return true;
  PyObject *fast = PySequence_Fast(seq, "expected a sequence of strings");
  if (!fast) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  for (Py_ssize_t k = 0; k < n; ++k) {
    PyObject *item = PySequence_Fast_GET_ITEM(fast, k);
    Py_ssize_t len = 0;
    const char *s = PyUnicode_Check(item) ? PyUnicode_AsUTF8AndSize(item, &len) : nullptr;
    if (!s) {
      Py_DECREF(fast);
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "expected a sequence of strings");
      return false;
    }
    out->emplace_back(s, static_cast<size_t>(len));
  }
  Py_DECREF(fast);
  return true;
}

// A dict {int: int} as a map; false with an exception set when it is not one.
bool int_map(PyObject *d, std::unordered_map<int64_t, int64_t> *out) {
  if (!PyDict_Check(d)) {
    PyErr_SetString(PyExc_TypeError, "expected a dict of int to int");
    return false;
  }
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(d, &pos, &k, &v)) {
    const long long kk = PyLong_AsLongLong(k), vv = PyLong_AsLongLong(v);
    if (PyErr_Occurred()) return false;
    (*out)[kk] = vv;
  }
  return true;
}

// out[r] = map[x[r]] (def when absent), looked up once per run of equal values.
void map_ints(const int64_t *x, size_t n, const std::unordered_map<int64_t, int64_t> &map,
              int64_t def, int64_t *out) {
  int64_t last_key = 0, last_value = def;
  bool have = false;
  for (size_t r = 0; r < n; ++r) {
    if (!have || x[r] != last_key) {
      const auto it = map.find(x[r]);
      last_key = x[r];
      last_value = it == map.end() ? def : it->second;
      have = true;
    }
    out[r] = last_value;
  }
}

// The requested arguments as a list of dicts: {"hash": True, "s", "strings"} for hash
// references, {"hash": False, "kind", "v", "strings"} for the others.
PyObject *args_of(result &all, const what &w) {
  PyObject *args = PyList_New(0);
  for (size_t k = 0; args && k < all.args.size(); ++k) {
    result_arg &c = all.args[k];
    const bool hash = dftrace::detail::is_hash_ref_key(w.args[k]);
    PyObject *d = PyDict_New();
    const bool ok = d && put(d, "hash", PyBool_FromLong(hash)) &&
                    (hash ? put(d, "s", buffer_of(c.s))
                          : put(d, "kind", buffer_of(c.kind)) && put(d, "v", buffer_of(c.v))) &&
                    put(d, "strings", list_of(c.dict.values)) && PyList_Append(args, d) == 0;
    Py_XDECREF(d);
    if (!ok) Py_CLEAR(args);
  }
  return args;
}

// read_columns(paths, cats, names, start_ns, end_ns, args, threads[, parts, metadata_only,
// ranks, keys_only]) -> dict; ranks: {pid: rank} for the rank column (default: the read's PR
// lines); keys_only: no rows, only "arg_keys" (every argument key of the events)
PyObject *read_columns(PyObject *, PyObject *a) {
  PyObject *paths_o, *cats_o, *names_o, *start_o, *end_o, *args_o, *parts_o = Py_None;
  PyObject *ranks_o = Py_None;
  int threads = 0, metadata_only = 0, keys_only = 0;
  if (!PyArg_ParseTuple(a, "OOOOOOi|OpOp", &paths_o, &cats_o, &names_o, &start_o, &end_o, &args_o,
                        &threads, &parts_o, &metadata_only, &ranks_o, &keys_only))
    return nullptr;
  // pid -> rank: given (dftrace.dask's first pass), or else from the read's own PR lines
  std::unordered_map<int64_t, int64_t> given_ranks;
  if (ranks_o != Py_None && !int_map(ranks_o, &given_ranks)) return nullptr;
  std::vector<std::string> paths;
  what w;
  if (!strings_of(paths_o, &paths) || !strings_of(cats_o, &w.cat_list) ||
      !strings_of(names_o, &w.name_list) || !strings_of(args_o, &w.args))
    return nullptr;
  w.metadata_only = metadata_only != 0;
  w.keys_only = keys_only != 0;
  for (const auto &k : w.args) w.arg_sigs.push_back(sig_of(k));
  // parts: per path, None (all) or (first, last): the planned parts to read, inclusive.
  std::vector<std::pair<int64_t, int64_t>> ranges(paths.size(), {0, INT64_MAX});
  if (parts_o != Py_None) {
    PyObject *fast = PySequence_Fast(parts_o, "parts must be a sequence");
    if (!fast) return nullptr;
    const bool same = PySequence_Fast_GET_SIZE(fast) == static_cast<Py_ssize_t>(paths.size());
    for (Py_ssize_t k = 0; same && k < PySequence_Fast_GET_SIZE(fast); ++k) {
      PyObject *item = PySequence_Fast_GET_ITEM(fast, k);
      if (item == Py_None) continue;
      long long first = 0, last = 0;
      if (!PyArg_ParseTuple(item, "LL", &first, &last)) {
        Py_DECREF(fast);
        return nullptr;
      }
      ranges[static_cast<size_t>(k)] = {first, last};
    }
    Py_DECREF(fast);
    if (!same) {
      PyErr_SetString(PyExc_ValueError, "parts must have one entry per path");
      return nullptr;
    }
  }
  w.cats.insert(w.cat_list.begin(), w.cat_list.end());
  w.names.insert(w.name_list.begin(), w.name_list.end());
  if (start_o != Py_None) {
    w.has_start = true;
    w.start = PyLong_AsUnsignedLongLong(start_o);
  }
  if (end_o != Py_None) {
    w.has_end = true;
    w.end = PyLong_AsUnsignedLongLong(end_o);
  }
  w.check_dt = (w.has_start || w.has_end) && !w.metadata_only;
  if (PyErr_Occurred()) return nullptr;

  result all;
  all.args.resize(w.args.size());
  column_pool pool;
  std::vector<std::string> problems;
  std::vector<std::string> units;
  std::string failure;  // an exception of the reader (memory): raised as MemoryError
  Py_BEGIN_ALLOW_THREADS;
  try {
    dftrace::detail::read_options opt;
    opt.threads =
        threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    for (size_t f = 0; f < paths.size(); ++f) {
      dftrace::detail::trace_file tf;
      std::string why;
      if (!tf.open(paths[f], &why)) {
        problems.push_back(paths[f] + ": " + why);
        units.emplace_back("");
        continue;
      }
      for (const auto &i : tf.plan_issues())
        problems.push_back(paths[f] + ": byte " + std::to_string(i.offset) + ": " + i.message);
      const time_unit unit = dftrace::detail::header_time_unit(tf);
      units.emplace_back(unit == time_unit::ns ? "ns" : "us");
      // Parts outside the requested range, and members outside the time window (their DT
      // times are epoch microseconds), are neither inflated nor parsed.
      const std::pair<int64_t, int64_t> range = ranges[f];
      const bool window = (w.has_start || w.has_end) && !w.metadata_only;
      opt.keep_part = [&w, &tf, range, window](const dftrace::detail::planned_part &p) {
        const int64_t index = &p - tf.parts().data();
        if (index < range.first || index > range.second) return false;
        if (!window || p.kind != dftrace::detail::planned_part::member) return true;
        // A member without times (a header of metadata) is read: its lines are checked to
        // hold no event (check_dt), as any member's to lie in its range.
        if (p.dt.ts_min == 0 && p.dt.ts_max == 0) return true;
        if (w.has_start && p.dt.ts_max * 1000 + 999 < w.start) return false;
        if (w.has_end && p.dt.ts_min * 1000 >= w.end) return false;
        return true;
      };
      // The result's room for the file's members, from their DT line counts (metadata lines
      // included: a bound). Only a hint: at most a line per compressed byte (a DT field may
      // lie), untouched room costs no memory, and where it cannot be had the columns grow.
      uint64_t lines = 0;
      for (const auto &p : tf.parts())
        if (p.kind == dftrace::detail::planned_part::member && opt.keep_part(p))
          lines += std::min<uint64_t>(p.dt.lines, p.length);
      try {
        if (!w.metadata_only) all.ints.reserve(all.rows + static_cast<size_t>(lines));
      } catch (const std::bad_alloc &) {
      }
      auto work = [&w, unit, &pool](dftrace::detail::text_block &b) { scan(b, w, unit, pool); };
      const uint64_t outside_before = all.outside_dt;
      dftrace::detail::for_each_block(tf, opt, work, [&](dftrace::detail::text_block &b) {
        for (const auto &i : b.issues)
          problems.push_back(paths[f] + ": byte " + std::to_string(i.offset) + ": " + i.message);
        if (!b.result) return;
        std::unique_ptr<columns> c(static_cast<columns *>(b.result.release()));
        all.add(*c);
        pool.give(std::move(c));
      });
      if (all.outside_dt > outside_before)
        problems.push_back(paths[f] + ": " + std::to_string(all.outside_dt - outside_before) +
                           " events lie outside the time range of their member's DT field: a "
                           "time window may have skipped more of them in other members "
                           "(dftrace validate names the members)");
    }
  } catch (const std::exception &e) {
    failure = e.what();
  }
  if (failure.empty() && all.ints.cap) {
    if (ranks_o == Py_None) given_ranks.insert(all.ranks.begin(), all.ranks.end());
    map_ints(all.ints.col(0), all.rows, given_ranks, -1, all.ints.col(k_ints));
  }
  Py_END_ALLOW_THREADS;
  if (!failure.empty()) {
    PyErr_Format(PyExc_MemoryError, "dftrace.read: %s", failure.c_str());
    return nullptr;
  }

  PyObject *d = PyDict_New();
  if (!d) return nullptr;
  bool ok = put(d, "rows", PyLong_FromSize_t(all.rows)) && put(d, "name", buffer_of(all.name)) &&
            put(d, "names", list_of(all.names.values)) && put(d, "cat", buffer_of(all.cat)) &&
            put(d, "cats", list_of(all.cats.values)) && put(d, "ph", buffer_of(all.ph)) &&
            put(d, "phs", list_of(all.phs.values)) &&
            put(d, "ints_stride", PyLong_FromSize_t(all.ints.cap)) &&
            put(d, "ints", buffer_of(all.ints.m, k_int_rows * all.ints.cap * 8)) &&
            put(d, "invalid", PyLong_FromUnsignedLongLong(all.invalid)) &&
            put(d, "skipped", PyLong_FromUnsignedLongLong(all.skipped)) &&
            put(d, "outside_dt", PyLong_FromUnsignedLongLong(all.outside_dt)) &&
            put(d, "lines", PyLong_FromUnsignedLongLong(all.lines)) &&
            put(d, "problems", list_of(problems)) && put(d, "units", list_of(units)) &&
            put(d, "args", args_of(all, w));
  if (ok) {
    std::vector<std::string> hv, hs;
    for (auto &h : all.hashes) {
      hv.push_back(h.first);
      hs.push_back(h.second);
    }
    ok = put(d, "hash_values", list_of(hv)) && put(d, "hash_strings", list_of(hs)) &&
         put(d, "hash_types", list_of(all.hash_types)) && put(d, "arg_keys", list_of(all.arg_keys));
  }
  if (ok) {
    std::vector<int64_t> rp, rr;
    for (auto &x : all.ranks) {
      rp.push_back(x.first);
      rr.push_back(x.second);
    }
    ok = put(d, "rank_pid", bytes_of(rp)) && put(d, "rank", bytes_of(rr));
  }
  if (!ok) {
    Py_DECREF(d);
    return nullptr;
  }
  return d;
}

// plan(path) -> {"unit", "described", "parts": [(kind, lines, text_bytes, ts_min_us, ts_max_us)]}
// from the DT fields, without inflating (kind: "member", "plain" or "stream"; a stream's size
// is its compressed length, its lines and times unknown: 0).
PyObject *plan(PyObject *, PyObject *a) {
  const char *path = nullptr;
  if (!PyArg_ParseTuple(a, "s", &path)) return nullptr;
  dftrace::detail::trace_file tf;
  std::string why;
  if (!tf.open(path, &why)) {
    PyErr_Format(PyExc_OSError, "%s: %s", path, why.c_str());
    return nullptr;
  }
  const time_unit unit = dftrace::detail::header_time_unit(tf);
  PyObject *parts = PyList_New(0);
  if (!parts) return nullptr;
  for (const auto &p : tf.parts()) {
    const char *kind = p.kind == dftrace::detail::planned_part::member  ? "member"
                       : p.kind == dftrace::detail::planned_part::plain ? "plain"
                                                                        : "stream";
    const bool m = p.kind == dftrace::detail::planned_part::member;
    PyObject *t =
        Py_BuildValue("(sKKKK)", kind, static_cast<unsigned long long>(m ? p.dt.lines : 0),
                      static_cast<unsigned long long>(m ? p.dt.uncompressed_len : p.length),
                      static_cast<unsigned long long>(m ? p.dt.ts_min : 0),
                      static_cast<unsigned long long>(m ? p.dt.ts_max : 0));
    if (!t || PyList_Append(parts, t) != 0) {
      Py_XDECREF(t);
      Py_DECREF(parts);
      return nullptr;
    }
    Py_DECREF(t);
  }
  return Py_BuildValue("{s:s,s:O,s:N}", "unit", unit == time_unit::ns ? "ns" : "us", "described",
                       tf.fully_described() ? Py_True : Py_False, "parts", parts);
}

PyMethodDef methods[] = {
    {"plan", plan, METH_VARARGS, "plan(path) -> the file's parts from its DT fields"},
    {"read_columns", read_columns, METH_VARARGS,
     "read_columns(paths, cats, names, start_ns, end_ns, args, threads[, parts, metadata_only,"
     " ranks, keys_only])"
     " -> dict of columns"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT,
                          "dftrace._reader",
                          "The columns behind dftrace.read (the C++ trace reader).",
                          -1,
                          methods,
                          nullptr,
                          nullptr,
                          nullptr,
                          nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__reader(void) {
  if (!g_column_buffer_type) {
    g_column_buffer_type = PyType_FromSpec(&column_buffer_spec);
    if (!g_column_buffer_type) return nullptr;
  }
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return nullptr;
  Py_INCREF(g_column_buffer_type);
  if (PyModule_AddObject(m, "column_buffer", g_column_buffer_type) != 0) {
    Py_DECREF(g_column_buffer_type);
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
