// format.hpp: the byte-level JSON writing used on the event path (escaping, integers, doubles).
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

namespace dftrace::detail {

// Number of decimal digits of v (1..20), without divisions: log10 estimated from the bit
// length (1233/4096 ~ log10(2)), then corrected by one comparison (pow10[0] is 0 so that
// 0..9 come out as one digit).
inline int decimal_digits(uint64_t v) {
  static constexpr uint64_t pow10[20] = {0ull,
                                         10ull,
                                         100ull,
                                         1000ull,
                                         10000ull,
                                         100000ull,
                                         1000000ull,
                                         10000000ull,
                                         100000000ull,
                                         1000000000ull,
                                         10000000000ull,
                                         100000000000ull,
                                         1000000000000ull,
                                         10000000000000ull,
                                         100000000000000ull,
                                         1000000000000000ull,
                                         10000000000000000ull,
                                         100000000000000000ull,
                                         1000000000000000000ull,
                                         10000000000000000000ull};
  const int bits = 64 - __builtin_clzll(v | 1);
  const int t = (bits * 1233) >> 12;  // floor(log10(2^bits)) approximation, 0..19
  return t + 1 - (v < pow10[t]);
}

namespace fmt_detail {
// The 8 decimal digits of x < 10^8 (leading zeros kept) as 8 ASCII bytes, the first digit in
// the lowest byte (little-endian memory order), computed side by side in one 64-bit word: two
// 4-digit halves, then four 2-digit quarters, then eight digits. Each step divides every lane
// by a multiplication and a shift (exact on its range: y * 5243 >> 19 = y / 100 for y < 10^4,
// z * 103 >> 10 = z / 10 for z < 100), and no lane's product reaches the next lane.
inline uint64_t digits8(uint32_t x) {
  const uint64_t halves = (x / 10000) | (static_cast<uint64_t>(x % 10000) << 32);
  const uint64_t hundreds = ((halves * 5243) >> 19) & 0x0000007F0000007Full;
  const uint64_t quarters = hundreds | ((halves - hundreds * 100) << 16);
  const uint64_t tens = ((quarters * 103) >> 10) & 0x000F000F000F000Full;
  const uint64_t digits = tens | ((quarters - tens * 10) << 8);
  return digits | 0x3030303030303030ull;
}
// The same for the 4 digits of x < 10^4, in a 32-bit word.
inline uint32_t digits4(uint32_t x) {
  const uint32_t hundreds = (x * 5243) >> 19;
  const uint32_t pairs = hundreds | ((x - hundreds * 100) << 16);
  const uint32_t tens = ((pairs * 103) >> 10) & 0x000F000Fu;
  return (tens | ((pairs - tens * 10) << 8)) | 0x30303030u;
}
// A word of digits (digits8, digits4: the first digit in the low byte) in the byte order that
// puts its first digit first in memory.
template <typename W>
inline W to_memory_order(W w) {
  static_assert(sizeof(W) == 8 || sizeof(W) == 4, "a 64-bit or a 32-bit word");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  if constexpr (sizeof(W) == 8)
    return __builtin_bswap64(w);
  else
    return __builtin_bswap32(w);
#else
  return w;
#endif
}
// Exactly 8 digits of x (leading zeros kept).
inline void put8(char *p, uint32_t x) {
  const uint64_t w = to_memory_order(digits8(x));
  std::memcpy(p, &w, 8);
}
// 1 to 8 digits, no leading zeros. Stores 8 bytes at p (callers give 20 bytes of room).
inline char *put_small(char *p, uint32_t v) {
  if (v < 10) {
    *p = static_cast<char>('0' + v);
    return p + 1;
  }
  if (v < 10000) {  // counts, descriptors, offsets in pages: the usual argument
    const int k = v < 100 ? 2 : v < 1000 ? 3 : 4;
    const uint32_t w = to_memory_order(digits4(v) >> (8 * (4 - k)));
    std::memcpy(p, &w, 4);
    return p + k;
  }
  const int k = decimal_digits(v);
  // The leading zeros are the word's low bytes: shifted out, the digits start at p.
  const uint64_t w = to_memory_order(digits8(v) >> (8 * (8 - k)));
  std::memcpy(p, &w, 8);
  return p + k;
}
}  // namespace fmt_detail

// Copies n bytes with a few fixed-size moves that stay inside both ranges when n is at most 64
// (a key, a name, a short fragment, a line template's head: the usual case on the event path
// and in the line formatter, where a call to memcpy would cost more than the copy); longer ones
// with memcpy.
__attribute__((always_inline)) inline void copy_small(char *d, const char *s, size_t n) {
  auto move = [&](auto word) {  // the first and the last sizeof(word) bytes, overlapping
    constexpr size_t w = sizeof word;
    decltype(word) x, y;
    std::memcpy(&x, s, w);
    std::memcpy(&y, s + n - w, w);
    std::memcpy(d, &x, w);
    std::memcpy(d + n - w, &y, w);
  };
  struct w16 {
    uint64_t a, b;
  };
  struct w32 {
    uint64_t a, b, c, d;
  };
  if (n > 32) {
    if (n <= 64)
      move(w32{});
    else
      std::memcpy(d, s, n);
  } else if (n >= 16)
    move(w16{});
  else if (n >= 8)
    move(uint64_t{});
  else if (n >= 4)
    move(uint32_t{});
  else if (n) {
    d[0] = s[0];
    d[n / 2] = s[n / 2];
    d[n - 1] = s[n - 1];
  }
}

// Writes the decimal form of v at p; returns the end. p needs room for 20 bytes (bytes after
// the digits, within those 20, may be overwritten). Eight digits at a time (a timestamp in
// microseconds has 16).
inline char *write_u64(char *p, uint64_t v) {
  using namespace fmt_detail;
  if (v < 100000000u) return put_small(p, static_cast<uint32_t>(v));
  const uint64_t hi = v / 100000000u;
  const uint32_t lo = static_cast<uint32_t>(v % 100000000u);
  if (hi < 100000000u) {
    p = put_small(p, static_cast<uint32_t>(hi));
  } else {  // 17 to 20 digits
    p = put_small(p, static_cast<uint32_t>(hi / 100000000u));
    put8(p, static_cast<uint32_t>(hi % 100000000u));
    p += 8;
  }
  put8(p, lo);
  return p + 8;
}

inline char *write_i64(char *p, int64_t v) {
  if (v < 0) {
    *p++ = '-';
    return write_u64(p, ~static_cast<uint64_t>(v) + 1);
  }
  return write_u64(p, static_cast<uint64_t>(v));
}

// Shortest round-trip decimal; NaN and infinities (not JSON) become null. Needs 32 bytes.
inline char *write_double(char *p, double v) {
  if (!std::isfinite(v)) {
    std::memcpy(p, "null", 4);
    return p + 4;
  }
  auto r = std::to_chars(p, p + 32, v);
  // "1e+20" is valid JSON; a bare integer-looking "3" is valid too, keep what to_chars gives.
  return r.ptr;
}

// Length of the valid UTF-8 sequence (RFC 3629: no overlong form, no surrogate, nothing above
// U+10FFFF) starting at s, of which n bytes are readable; 0 if s[0] starts none. The one
// UTF-8 check: escaping (below) and the trace reader's line parser both use it.
inline size_t utf8_sequence(const unsigned char *s, size_t n) {
  const unsigned char c = s[0];
  if (c < 0xC2 || c > 0xF4) return 0;
  const size_t len = c < 0xE0 ? 2 : (c < 0xF0 ? 3 : 4);
  if (n < len) return 0;
  for (size_t i = 1; i < len; ++i)
    if ((s[i] & 0xC0) != 0x80) return 0;
  if (c == 0xE0 && s[1] < 0xA0) return 0;  // overlong
  if (c == 0xED && s[1] > 0x9F) return 0;  // surrogates
  if (c == 0xF0 && s[1] < 0x90) return 0;  // overlong
  if (c == 0xF4 && s[1] > 0x8F) return 0;  // above U+10FFFF
  return len;
}

// Upper bound of the escaped size of n input bytes (each byte may become \u00XX or U+FFFD).
constexpr size_t escaped_bound(size_t n) { return n * 6; }

// Appends s to out as the inside of a JSON string: quotes, backslashes and control
// characters escaped, invalid UTF-8 replaced by U+FFFD. Returns the end.
char *escape_json(char *out, const char *s, size_t n);

// Walks the entries of a fragment "k":v,"k2":v2. fn(key, entry_begin, entry_end).
template <typename Fn>
inline void for_each_entry(std::string_view frag, Fn fn) {
  size_t i = 0;
  while (i < frag.size()) {
    const size_t begin = i;
    if (frag[i] != '"') return;
    size_t k = i + 1;
    while (k < frag.size() && frag[k] != '"') k += frag[k] == '\\' ? 2 : 1;
    const std::string_view key = frag.substr(i + 1, k - i - 1);
    size_t v = k + 2;  // past '":'
    if (v < frag.size() && frag[v] == '"') {
      ++v;
      while (v < frag.size() && frag[v] != '"') v += frag[v] == '\\' ? 2 : 1;
      ++v;
    } else {
      while (v < frag.size() && frag[v] != ',') ++v;
    }
    fn(key, begin, std::min(v, frag.size()));
    i = v + 1;
  }
}

// Convenience for slow paths: the escaped, quoted form of s.
std::string json_quote(std::string_view s);

// True if s is one complete JSON value (used to validate raw JSON handed in by callers).
bool is_valid_json_value(std::string_view s);

// A valid JSON value s as it may go into a trace line: a value holds '\n' and '\r' only as
// whitespace between its tokens (never raw inside a string), so they become spaces, and
// whitespace at either end is dropped. Pretty-printed JSON, or a file's text with its last
// newline, so stays one line.
std::string json_value_on_one_line(std::string_view s);

// The argument keys the core writes into an event line itself (next to the user's arguments):
// a user's argument of one of these names is written as "user_<key>", never as a second key of
// the same name. The one definition, read by the tree (node arguments) and the line formatter
// (per-use arguments). Not among them: `count`, which the formatter adds to iter events; a node
// or per-use argument named count is then written a second time (a known gap, not yet decided:
// rename it on iter events only, or let the iteration's count replace it).
inline constexpr std::string_view k_reserved_arg_keys[] = {"hhash", "level", "p_idx"};
inline constexpr std::string_view k_reserved_arg_prefix = "user_";
namespace fmt_detail {
// Unrolled at compile time: each comparison is against a constant of known length, which the
// compiler turns into a length test and an inline word compare (a loop over the array calls
// memcmp per key, and the line formatter asks this for every per-use argument).
template <size_t... I>
inline bool is_reserved_arg_key(std::string_view key, std::index_sequence<I...>) {
  return ((key.size() == k_reserved_arg_keys[I].size() &&
           std::memcmp(key.data(), k_reserved_arg_keys[I].data(), k_reserved_arg_keys[I].size()) ==
               0) ||
          ...);
}
}  // namespace fmt_detail
inline bool is_reserved_arg_key(std::string_view key) {
  return fmt_detail::is_reserved_arg_key(
      key, std::make_index_sequence<std::size(k_reserved_arg_keys)>());
}

}  // namespace dftrace::detail
