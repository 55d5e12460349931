// line_parser.cpp: strict JSON grammar for one line, recording the keys the tools need.
// One iterative pass with an explicit stack and local pointers (no recursion, no per-line
// allocation): parsing is most of the cost of stat and validate.
#include "reader/line_parser.hpp"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "base/format.hpp"

namespace dftrace::detail {

namespace {

// Nesting that a trace line may reasonably hold.
constexpr int k_max_depth = 64;

// Characters that a string may hold without a closer look: printable ASCII except '"', '\'.
struct char_table {
  bool plain[256];
  constexpr char_table() : plain() {
    for (int c = 0; c < 256; ++c) plain[c] = c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
  }
};
constexpr char_table k_chars{};

inline bool is_digit(char c) { return static_cast<unsigned char>(c - '0') < 10; }
inline bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
inline bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// p at the opening quote. Returns the position after the closing quote, or nullptr with
// *why set. The inside is [p + 1, result - 1).
inline const char *scan_string(const char *p, const char *end, const char **why) {
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

inline const char *scan_number(const char *p, const char *end, const char **why) {
  if (p < end && *p == '-') ++p;
  if (p >= end || !is_digit(*p)) {
    *why = "bad number";
    return nullptr;
  }
  if (*p == '0') {
    ++p;
  } else {
    while (p < end && is_digit(*p)) ++p;
  }
  if (p < end && *p == '.') {
    ++p;
    if (p >= end || !is_digit(*p)) {
      *why = "bad number";
      return nullptr;
    }
    while (p < end && is_digit(*p)) ++p;
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

bool digits_u64(std::string_view t, uint64_t *out) {
  if (t.empty()) return false;
  uint64_t v = 0;
  size_t i = 0;
  for (; i < t.size() && is_digit(t[i]); ++i) {
    const uint64_t d = static_cast<uint64_t>(t[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (i == 0) return false;
  if (i < t.size()) {
    // Allow a plain decimal fraction (sub-microsecond timestamps), nothing else.
    if (t[i] != '.' || i + 1 >= t.size()) return false;
    for (size_t j = i + 1; j < t.size(); ++j)
      if (!is_digit(t[j])) return false;
  }
  *out = v;
  return true;
}

}  // namespace

bool parse_line(std::string_view line, parsed_line &out) {
  // Reset only what a line sets (the args array is bounded by nargs).
  out.id = out.name = out.cat = out.pid = out.tid = out.ts = out.dur = out.ph = out.args = out.s =
      jvalue{};
  out.nargs = 0;
  out.args_overflow = false;
  out.duplicate_key = false;
  out.error = nullptr;
  out.error_at = 0;

  const char *const begin = line.data();
  const char *const end = begin + line.size();
  const char *p = begin;
  const char *why = nullptr;

  // The stack of open containers: '{' or '[', where each started, and where its value is
  // recorded (a top-level slot at depth 1, an args entry at depth 2).
  char kind[k_max_depth + 1];
  const char *cstart[k_max_depth + 1];
  jvalue *target[k_max_depth + 1];
  int depth = 0;
  bool args_open = false;     // the container at depth 2 is the top-level "args" object
  jvalue *pending = nullptr;  // where the next value goes
  // After an opening bracket: whether the container is empty (its closing bracket is consumed).
  auto closes_now = [&p, end](char bracket) {
    while (p < end && is_ws(*p)) ++p;
    if (p >= end || *p != bracket) return false;
    ++p;
    return true;
  };

  while (p < end && is_ws(*p)) ++p;
  if (p >= end || *p != '{') {
    why = "not a JSON object";
    goto fail;
  }
  kind[0] = '{';
  cstart[0] = p;
  target[0] = nullptr;
  depth = 1;
  ++p;
  goto object_first;

object_first:
  if (closes_now('}')) goto close;
  // fall through
object_key : {
  while (p < end && is_ws(*p)) ++p;
  if (p >= end || *p != '"') {
    why = "expected a key";
    goto fail;
  }
  const char *ks = p + 1;
  const char *q = scan_string(p, end, &why);
  if (!q) goto fail;
  p = q;
  const size_t kn = static_cast<size_t>(p - 1 - ks);
  while (p < end && is_ws(*p)) ++p;
  if (p >= end || *p != ':') {
    why = "expected ':'";
    goto fail;
  }
  ++p;
  while (p < end && is_ws(*p)) ++p;
  pending = nullptr;
  if (depth == 1) {
    pending = known_slot(out, ks, kn);
    if (pending && pending->present()) out.duplicate_key = true;
  } else if (depth == 2 && args_open) {
    if (out.nargs < parsed_line::k_max_args) {
      parsed_line::arg &a = out.args_kv[out.nargs++];
      a.key = std::string_view(ks, kn);
      a.value = jvalue{};
      pending = &a.value;
    } else {
      out.args_overflow = true;
    }
  }
  goto value;
}

array_first:
  if (closes_now(']')) goto close;
  pending = nullptr;
  goto value;

value:
  if (p >= end) {
    why = "missing value";
    goto fail;
  }
  {
    const char *vs = p;
    jtype t;
    switch (*p) {
      case '"': {
        const char *q = scan_string(p, end, &why);
        if (!q) goto fail;
        p = q;
        if (pending) {
          pending->type = jtype::string;
          pending->text = std::string_view(vs + 1, static_cast<size_t>(p - 1 - (vs + 1)));
        }
        goto after_value;
      }
      case '{':
      case '[':
        if (depth >= k_max_depth) {
          why = "nesting too deep";
          goto fail;
        }
        kind[depth] = *p;
        cstart[depth] = p;
        target[depth] = pending;
        if (depth == 1) args_open = pending == &out.args && *p == '{';
        ++depth;
        ++p;
        if (kind[depth - 1] == '{') goto object_first;
        goto array_first;
      case 't':
      case 'f':
      case 'n': {
        const std::string_view word = *p == 't' ? "true" : *p == 'f' ? "false" : "null";
        if (static_cast<size_t>(end - p) < word.size() ||
            std::memcmp(p, word.data(), word.size()) != 0) {
          why = "invalid value";
          goto fail;
        }
        p += word.size();
        t = *word.data() == 'n' ? jtype::null : jtype::boolean;
        break;
      }
      default:
        p = scan_number(p, end, &why);
        if (!p) {
          p = vs;
          goto fail;
        }
        t = jtype::number;
        break;
    }
    if (pending) {
      pending->type = t;
      pending->text = std::string_view(vs, static_cast<size_t>(p - vs));
    }
  }
  // fall through
after_value:
  while (p < end && is_ws(*p)) ++p;
  if (p >= end) {
    why = kind[depth - 1] == '{' ? "unterminated object" : "unterminated array";
    goto fail;
  }
  if (*p == ',') {
    ++p;
    if (kind[depth - 1] == '{') goto object_key;
    while (p < end && is_ws(*p)) ++p;
    pending = nullptr;
    goto value;
  }
  if ((kind[depth - 1] == '{' && *p == '}') || (kind[depth - 1] == '[' && *p == ']')) {
    ++p;
    goto close;
  }
  why = kind[depth - 1] == '{' ? "expected ',' or '}'" : "expected ',' or ']'";
  goto fail;

close:
  --depth;
  if (depth == 0) {
    while (p < end && is_ws(*p)) ++p;
    if (p != end) {
      why = "data after the object";
      goto fail;
    }
    return true;
  }
  if (jvalue *tv = target[depth]) {
    tv->type = kind[depth] == '{' ? jtype::object : jtype::array;
    tv->text = std::string_view(cstart[depth], static_cast<size_t>(p - cstart[depth]));
  }
  if (depth == 1) args_open = false;
  pending = nullptr;
  goto after_value;

fail:
  out.error = why ? why : "invalid JSON";
  out.error_at = static_cast<size_t>(p - begin);
  return false;
}

bool value_u64(const jvalue &v, uint64_t *out, bool *quoted) {
  if (quoted) *quoted = v.type == jtype::string;
  if (v.type != jtype::number && v.type != jtype::string) return false;
  return digits_u64(v.text, out);
}

bool value_i64(const jvalue &v, int64_t *out, bool *quoted) {
  if (quoted) *quoted = v.type == jtype::string;
  if (v.type != jtype::number && v.type != jtype::string) return false;
  std::string_view t = v.text;
  bool neg = false;
  if (!t.empty() && t[0] == '-') {
    neg = true;
    t.remove_prefix(1);
  }
  if (t.empty()) return false;
  uint64_t u = 0;
  for (char ch : t) {
    if (!is_digit(ch)) return false;
    const uint64_t d = static_cast<uint64_t>(ch - '0');
    if (u > (UINT64_MAX - d) / 10) return false;
    u = u * 10 + d;
  }
  if (neg) {
    if (u > static_cast<uint64_t>(INT64_MAX) + 1) return false;
    *out = static_cast<int64_t>(0 - u);
  } else {
    if (u > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(u);
  }
  return true;
}

bool value_is_integer(const jvalue &v) {
  if (v.type != jtype::number || v.text.empty()) return false;
  size_t i = v.text[0] == '-' ? 1 : 0;
  if (i >= v.text.size()) return false;
  for (; i < v.text.size(); ++i)
    if (!is_digit(v.text[i])) return false;
  return true;
}

bool canonical_number(std::string_view t, std::string *out) {
  size_t i = 0;
  const bool neg = i < t.size() && t[i] == '-';
  if (i < t.size() && (t[i] == '-' || t[i] == '+')) ++i;
  const size_t int_begin = i;
  while (i < t.size() && is_digit(t[i])) ++i;
  std::string_view ipart = t.substr(int_begin, i - int_begin);
  std::string_view fpart;
  if (i < t.size() && t[i] == '.') {
    const size_t f = ++i;
    while (i < t.size() && is_digit(t[i])) ++i;
    fpart = t.substr(f, i - f);
  }
  if (ipart.empty() && fpart.empty()) return false;
  std::string_view epart;
  bool eneg = false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) eneg = t[i++] == '-';
    const size_t e = i;
    while (i < t.size() && is_digit(t[i])) ++i;
    epart = t.substr(e, i - e);
    if (epart.empty()) return false;
  }
  if (i != t.size()) return false;
  while (ipart.size() > 1 && ipart[0] == '0') ipart.remove_prefix(1);
  out->clear();
  if (neg) out->push_back('-');
  if (ipart.empty()) out->push_back('0');
  out->append(ipart);
  if (!fpart.empty()) {
    out->push_back('.');
    out->append(fpart);
  }
  if (!epart.empty()) {
    out->push_back('e');
    if (eneg) out->push_back('-');
    out->append(epart);
  }
  return true;
}

char phase(const parsed_line &pl) {
  if (pl.ph.type == jtype::string) return pl.ph.text.empty() ? 0 : pl.ph.text[0];
  if (pl.ph.type != jtype::number || pl.ph.text.size() != 1) return 0;
  switch (pl.ph.text[0]) {
    case '1': return 'X';
    case '2': return 'C';
    case '3': return 'A';
    case '4': return 'M';
    default: return 0;
  }
}

bool is_hash_ref_key(std::string_view key) {
  if (key.size() == 5 && (key == "hhash" || key == "fhash")) return true;
  return key.size() > 5 && key.compare(key.size() - 5, 5, "_hash") == 0;
}

}  // namespace dftrace::detail
