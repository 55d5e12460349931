// line_lexer.hpp: the pieces of the line parser that every path shares (private to src/reader):
// the character classes, strings and numbers scanned 16 bytes at a time, the known top-level
// keys, and a parsed line's reset.
#pragma once

#include <cstddef>
#include <cstring>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "base/format.hpp"
#include "reader/line_parser.hpp"

namespace dftrace::detail::line_lex {

// Nesting that a trace line may reasonably hold.
inline constexpr int k_max_depth = 64;

// Characters that a string may hold without a closer look: printable ASCII except '"', '\'.
struct char_table {
  bool plain[256];
  constexpr char_table() : plain() {
    for (int c = 0; c < 256; ++c) plain[c] = c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
  }
};
inline constexpr char_table k_chars{};

inline bool is_digit(char c) { return static_cast<unsigned char>(c - '0') < 10; }
inline bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
inline bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// p at the opening quote. Returns the position after the closing quote, or nullptr with
// *why set. The inside is [p + 1, result - 1).
[[gnu::always_inline]] inline const char *scan_string(const char *p, const char *end,
                                                      const char **why) {
  ++p;
  for (;;) {
#if defined(__SSE2__)
    // 16 bytes at a time: a quote, a backslash, or (signed compare) a byte below 0x20 or
    // above 0x7f stops the fast path.
    {
      const __m128i quote = _mm_set1_epi8('"');
      const __m128i slash = _mm_set1_epi8('\\');
      const __m128i space = _mm_set1_epi8(0x20);
      while (p + 16 <= end) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
        const __m128i hit =
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, slash)),
                         _mm_cmplt_epi8(v, space));
        const int mask = _mm_movemask_epi8(hit);
        if (mask) {
          p += __builtin_ctz(static_cast<unsigned>(mask));
          break;
        }
        p += 16;
      }
    }
#endif
    while (p < end && k_chars.plain[static_cast<unsigned char>(*p)]) ++p;
    if (p >= end) {
      *why = "unterminated string";
      return nullptr;
    }
    const unsigned char ch = static_cast<unsigned char>(*p);
    if (ch == '"') return p + 1;
    if (ch == '\\') {
      if (p + 1 >= end) {
        *why = "unterminated string";
        return nullptr;
      }
      const char e = p[1];
      if (e == 'u') {
        if (end - p < 6 || !is_hex(p[2]) || !is_hex(p[3]) || !is_hex(p[4]) || !is_hex(p[5])) {
          *why = "bad \\u escape";
          return nullptr;
        }
        p += 6;
      } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' ||
                 e == 'r' || e == 't') {
        p += 2;
      } else {
        *why = "bad escape in string";
        return nullptr;
      }
      continue;
    }
    if (ch < 0x20) {
      *why = "control character in string";
      return nullptr;
    }
    const size_t n =
        utf8_sequence(reinterpret_cast<const unsigned char *>(p), static_cast<size_t>(end - p));
    if (!n) {
      *why = "invalid UTF-8 in string";
      return nullptr;
    }
    p += n;
  }
}

// The end of the run of digits at p: 16 bytes at a time where the line allows (timestamps and
// 64-bit hashes are most of a trace's digits).
[[gnu::always_inline]] inline const char *skip_digits(const char *p, const char *end) {
#if defined(__SSE2__)
  const __m128i zero = _mm_set1_epi8('0');
  const __m128i nine = _mm_set1_epi8(9);
  while (p + 16 <= end) {
    const __m128i d = _mm_sub_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)), zero);
    // a digit is a byte that '0' takes to 0..9 (unsigned): min(d, 9) == d
    const int digit = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(d, nine), d));
    if (digit != 0xFFFF) return p + __builtin_ctz(static_cast<unsigned>(~digit));
    p += 16;
  }
#endif
  while (p < end && is_digit(*p)) ++p;
  return p;
}

[[gnu::always_inline]] inline const char *scan_number(const char *p, const char *end,
                                                      const char **why) {
  if (p < end && *p == '-') ++p;
  if (p >= end || !is_digit(*p)) {
    *why = "bad number";
    return nullptr;
  }
  if (*p == '0') {
    ++p;
  } else {
    p = skip_digits(p, end);
  }
  if (p < end && *p == '.') {
    ++p;
    if (p >= end || !is_digit(*p)) {
      *why = "bad number";
      return nullptr;
    }
    p = skip_digits(p, end);
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    ++p;
    if (p < end && (*p == '+' || *p == '-')) ++p;
    if (p >= end || !is_digit(*p)) {
      *why = "bad number";
      return nullptr;
    }
    while (p < end && is_digit(*p)) ++p;
  }
  return p;
}

// Which known top-level key a key is; nullptr for others.
inline jvalue *known_slot(parsed_line &out, const char *k, size_t n) {
  switch (n) {
    case 1:
      if (k[0] == 's') return &out.s;
      break;
    case 2:
      if (k[0] == 'i' && k[1] == 'd') return &out.id;
      if (k[0] == 't' && k[1] == 's') return &out.ts;
      if (k[0] == 'p' && k[1] == 'h') return &out.ph;
      break;
    case 3:
      if (!std::memcmp(k, "cat", 3)) return &out.cat;
      if (!std::memcmp(k, "pid", 3)) return &out.pid;
      if (!std::memcmp(k, "tid", 3)) return &out.tid;
      if (!std::memcmp(k, "dur", 3)) return &out.dur;
      break;
    case 4:
      if (!std::memcmp(k, "name", 4)) return &out.name;
      if (!std::memcmp(k, "args", 4)) return &out.args;
      break;
    default: break;
  }
  return nullptr;
}

// Reset only what a line sets (the args array is bounded by nargs).
inline void reset(parsed_line &out) {
  out.id = out.name = out.cat = out.pid = out.tid = out.ts = out.dur = out.ph = out.args = out.s =
      jvalue{};
  out.nargs = 0;
  out.args_overflow = false;
  out.duplicate_key = false;
  out.no_escapes = false;
  out.error = nullptr;
  out.error_at = 0;
}

}  // namespace dftrace::detail::line_lex
