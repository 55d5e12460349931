// line_parser.hpp: a one-pass, copy-free scanner for one trace line (a JSON object).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace dftrace::detail {

enum class jtype : uint8_t { none = 0, string, number, object, array, boolean, null };

// A value as it stands in the line. For strings, text is the inside of the quotes, still
// escaped; for everything else it is the whole token.
struct jvalue {
  jtype type = jtype::none;
  std::string_view text;
  bool present() const { return type != jtype::none; }
};

// Top-level keys the tools care about, and the direct children of "args".
struct parsed_line {
  static constexpr int k_max_args = 48;
  struct arg {
    std::string_view key;  // escaped, without quotes
    jvalue value;
  };

  jvalue id, name, cat, pid, tid, ts, dur, ph, args, s;
  arg args_kv[k_max_args];
  int nargs = 0;
  bool args_overflow = false;  // more children than k_max_args (the rest were validated only)
  bool duplicate_key = false;  // one of the known top-level keys appeared twice
  // Set when the line is known to hold no backslash (the straight path's masks saw none): its
  // strings need no decoding (json_string.hpp). False says nothing.
  bool no_escapes = false;

  // Set when the line is not valid JSON: a short reason and the 0-based byte offset.
  const char *error = nullptr;
  size_t error_at = 0;

  // The value of args' key (a key written with escapes matches as it is meant).
  const jvalue *arg_value(std::string_view key) const {
    for (int i = 0; i < nargs; ++i)
      if (args_kv[i].key == key) return &args_kv[i].value;
    return no_escapes ? nullptr : escaped_arg_value(key);
  }
  const jvalue *escaped_arg_value(std::string_view key) const;  // keys with a backslash
};

// Parses line (no trailing newline) into out. Returns false if it is not exactly one JSON
// object (surrounding whitespace allowed); out.error says why. Thread-safe (no state).
// Lines as dftrace and DFTracer write them (no blanks, args an object of scalars) take a
// straight path; any other line is read again by the whole grammar, so the result is the same.
bool parse_line(std::string_view line, parsed_line &out);
// The whole grammar alone, without that path (tests compare the two).
bool parse_line_general(std::string_view line, parsed_line &out);

// How the straight path finds the strings and numbers of a line: by bit masks built a vector at
// a time (x86-64: SSE2, or AVX2 or AVX-512BW where the CPU has them, chosen once at start), or
// byte by byte (portable: every other CPU, and lines with escapes or non-ASCII bytes).
enum class line_scan : uint8_t { portable, sse2, avx2, avx512 };
line_scan line_scan_in_use();
bool line_scan_supported(line_scan s);
// parse_line with the given scan (the portable one when s is not supported here): tests and the
// fuzz target check that every scan gives the same result. Without whole_grammar, a line that
// the straight path leaves to the whole grammar is refused (tests: which lines take it).
bool parse_line_with(std::string_view line, parsed_line &out, line_scan s,
                     bool whole_grammar = true);
// True when two successful parses recorded the same keys, values and flags (views compared by
// position, not only by text).
bool same_parse(const parsed_line &a, const parsed_line &b);

// Numbers as the tools read them. A number may be bare or, as older DFTracer wrote, a string
// holding a number (*quoted is set then). Fractions are allowed for ts/dur ("12.250").
// Return false when the value is no such number (or does not fit).
bool value_u64(const jvalue &v, uint64_t *out, bool *quoted = nullptr);        // integer part
inline bool value_i64(const jvalue &v, int64_t *out, bool *quoted = nullptr);  // integers only
inline bool value_is_integer(const jvalue &v);                                 // bare, no fraction

// *v = *v * 10 + the decimal digit c; false when that does not fit in 64 bits. No division:
// this runs for every digit of every number the tools read.
inline bool add_digit(uint64_t *v, char c) {
  return !__builtin_mul_overflow(*v, uint64_t{10}, v) &&
         !__builtin_add_overflow(*v, static_cast<uint64_t>(c - '0'), v);
}

// Reads the decimal digits that t starts with into *v: returns how many there are (0: none),
// or npos when they do not fit in 64 bits. Nineteen digits always fit: only longer runs pay
// for the overflow checks.
inline size_t leading_digits(std::string_view t, uint64_t *v) {
  uint64_t x = 0;
  size_t i = 0;
  // Eight digits at a time (timestamps have sixteen), at most sixteen this way.
  while (i <= 8 && t.size() - i >= 8) {
    uint64_t c;
    std::memcpy(&c, t.data() + i, 8);
    // every byte in '0'..'9': its high nibble is 3, and still 3 after adding 6
    constexpr uint64_t hi = 0xF0F0F0F0F0F0F0F0ull;
    if (((c & hi) | (((c + 0x0606060606060606ull) & hi) >> 4)) != 0x3333333333333333ull) break;
    uint64_t d = c - 0x3030303030303030ull;  // the first digit is the lowest byte
    d = (d * 10 + (d >> 8)) & 0x00FF00FF00FF00FFull;
    d = (d * 100 + (d >> 16)) & 0x0000FFFF0000FFFFull;
    d = (d * 10000 + (d >> 32)) & 0xFFFFFFFFull;
    x = x * 100000000 + d;
    i += 8;
  }
  for (const size_t safe = t.size() < 19 ? t.size() : 19; i < safe; ++i) {
    const unsigned d = static_cast<unsigned char>(t[i] - '0');
    if (d > 9) break;
    x = x * 10 + d;
  }
  if (i == 19)
    for (; i < t.size() && static_cast<unsigned char>(t[i] - '0') < 10; ++i)
      if (!add_digit(&x, t[i])) return std::string_view::npos;
  *v = x;
  return i;
}

// Older DFTracer quoted numbers ("pid":"0677792"). For text holding a decimal number,
// possibly with a '+' sign, leading zeros, a fraction or an exponent ("+5", "007", "1e5",
// ".5", "5."), writes the same number as valid JSON to *out ("5", "7", "1e5", "0.5", "5") and
// returns true. Anything else (hex "0x10", "inf", names, blanks, escapes) returns false: the
// caller keeps it as a string.
bool canonical_number(std::string_view text, std::string *out);

// The line's record kind as a Chrome-trace letter: the first character of a string "ph"
// ('X', 'M', 'C', 'i', ...), or DFTracer 2.x's integer phases (1 complete 'X', 2 counter 'C',
// 3 aggregated 'A', 4 metadata 'M'); 0 when missing or unknown.
char phase(const parsed_line &pl);

// True for the args keys that refer to a hash definition (hhash, fhash, *_hash).
bool is_hash_ref_key(std::string_view key);

// ---- inline, for the readers' per-line loops

inline bool value_i64(const jvalue &v, int64_t *out, bool *quoted) {
  if (quoted) *quoted = v.type == jtype::string;
  if (v.type != jtype::number && v.type != jtype::string) return false;
  std::string_view t = v.text;
  bool neg = false;
  if (!t.empty() && t[0] == '-') {
    neg = true;
    t.remove_prefix(1);
  }
  uint64_t u = 0;
  if (t.empty() || leading_digits(t, &u) != t.size()) return false;
  if (neg) {
    if (u > static_cast<uint64_t>(INT64_MAX) + 1) return false;
    *out = static_cast<int64_t>(0 - u);
  } else {
    if (u > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(u);
  }
  return true;
}

inline bool value_is_integer(const jvalue &v) {
  if (v.type != jtype::number || v.text.empty()) return false;
  size_t i = v.text[0] == '-' ? 1 : 0;
  if (i >= v.text.size()) return false;
  for (; i < v.text.size(); ++i)
    if (!(static_cast<unsigned char>(v.text[i] - '0') < 10)) return false;
  return true;
}

}  // namespace dftrace::detail
