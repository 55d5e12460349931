// json_string.hpp: a JSON string's text as it is meant, not as it is written.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "reader/line_parser.hpp"

namespace dftrace::detail {

// Appends to *out the text that the inside of a JSON string (escaped, without its quotes)
// stands for: \" \\ \/ \b \f \n \r \t, and \uXXXX as UTF-8, a surrogate pair as one code point.
// A lone surrogate (a high half without its low half, or a low half alone) becomes U+FFFD, as
// a UTF-8 decoder does with bytes that are no character. The input is what the line parser
// accepted; a malformed escape (never accepted there) is copied as written.
void json_unescape_append(std::string_view escaped, std::string *out);

// Whether s holds a backslash: eight bytes at a time, inline (names and categories are short:
// a call to memchr costs more than the search).
inline bool has_backslash(std::string_view s) {
  constexpr uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  constexpr uint64_t bs = 0x5C5C5C5C5C5C5C5Cull;
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t x;
    std::memcpy(&x, s.data() + i, 8);
    x ^= bs;
    if ((x - ones) & ~x & highs) return true;
  }
  for (; i < s.size(); ++i)  // the tail, fewer than eight bytes
    if (s[i] == '\\') return true;
  return false;
}

// The text of a string value: its inside as written when it holds no backslash (no copy), else
// its decoded text in *scratch. A value of another type gives its token unchanged.
inline std::string_view string_text(const jvalue &v, std::string *scratch) {
  if (v.type != jtype::string || !has_backslash(v.text)) return v.text;
  scratch->clear();
  json_unescape_append(v.text, scratch);
  return *scratch;
}
inline std::string_view string_text(std::string_view escaped, std::string *scratch) {
  if (!has_backslash(escaped)) return escaped;
  scratch->clear();
  json_unescape_append(escaped, scratch);
  return *scratch;
}

// The same for a value of a parsed line, with no search when the parser saw no backslash.
inline std::string_view string_text(const parsed_line &pl, const jvalue &v, std::string *scratch) {
  return pl.no_escapes ? v.text : string_text(v, scratch);
}

// The same as a new string.
std::string decoded(const jvalue &v);

// Whether a string value means s ("\u0066orward" means "forward"). Values of other types are
// compared by their token.
bool text_equals(const jvalue &v, std::string_view s);

}  // namespace dftrace::detail
