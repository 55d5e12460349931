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

bool digits_u64(std::string_view t, uint64_t *out) {
  uint64_t v = 0;
  const size_t i = leading_digits(t, &v);
  if (i == 0 || i == std::string_view::npos) return false;
  if (i < t.size()) {
    // Allow a plain decimal fraction (sub-microsecond timestamps), nothing else.
    if (t[i] != '.' || i + 1 >= t.size()) return false;
    for (size_t j = i + 1; j < t.size(); ++j)
      if (!is_digit(t[j])) return false;
  }
  *out = v;
  return true;
}

// Reset only what a line sets (the args array is bounded by nargs).
inline void reset(parsed_line &out) {
  out.id = out.name = out.cat = out.pid = out.tid = out.ts = out.dur = out.ph = out.args = out.s =
      jvalue{};
  out.nargs = 0;
  out.args_overflow = false;
  out.duplicate_key = false;
  out.error = nullptr;
  out.error_at = 0;
}

// p at the quote of a top-level key that dftrace and DFTracer write, followed by its colon:
// its slot, p moved past the colon. nullptr for any other key (or a key written with blanks).
inline jvalue *common_key(const char *&p, const char *end, parsed_line &out) {
  auto is = [&p, end](const char(&k)[8], size_t n) {
    if (static_cast<size_t>(end - p) < n || std::memcmp(p, k, n) != 0) return false;
    p += n;
    return true;
  };
  if (end - p < 2) return nullptr;
  switch (p[1]) {
    case 'i': return is("\"id\":\0\0", 5) ? &out.id : nullptr;
    case 'n': return is("\"name\":", 7) ? &out.name : nullptr;
    case 'c': return is("\"cat\":\0", 6) ? &out.cat : nullptr;
    case 'p':
      if (is("\"pid\":\0", 6)) return &out.pid;
      return is("\"ph\":\0\0", 5) ? &out.ph : nullptr;
    case 't':
      if (is("\"tid\":\0", 6)) return &out.tid;
      return is("\"ts\":\0\0", 5) ? &out.ts : nullptr;
    case 'd': return is("\"dur\":\0", 6) ? &out.dur : nullptr;
    case 'a': return is("\"args\":", 7) ? &out.args : nullptr;
    case 's': return is("\"s\":\0\0\0", 4) ? &out.s : nullptr;
    default: return nullptr;
  }
}

// p at the quote of a key of printable ASCII without escapes, directly followed by its colon:
// the position after the colon. nullptr for any other key.
inline const char *plain_key(const char *p, const char *end) {
  if (*p != '"') return nullptr;
  ++p;
#if defined(__SSE2__)
  if (p + 16 <= end) {  // keys are short: one look at 16 bytes mostly finds the quote
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
    const int stop = _mm_movemask_epi8(_mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
        _mm_cmplt_epi8(v, _mm_set1_epi8(0x20))));
    p += stop ? __builtin_ctz(static_cast<unsigned>(stop)) : 16;
  }
#endif
  while (p < end && k_chars.plain[static_cast<unsigned char>(*p)]) ++p;
  if (end - p < 2 || p[0] != '"' || p[1] != ':') return nullptr;
  return p + 2;
}

// A string, number, true, false or null at p: its end, its type in *t. nullptr for anything
// else (objects, arrays) and for anything invalid.
[[gnu::always_inline]] inline const char *common_scalar(const char *p, const char *end, jtype *t) {
  const char *why = nullptr;
  switch (*p) {
    case '"': *t = jtype::string; return scan_string(p, end, &why);
    case 't':
      *t = jtype::boolean;
      return end - p >= 4 && std::memcmp(p, "true", 4) == 0 ? p + 4 : nullptr;
    case 'f':
      *t = jtype::boolean;
      return end - p >= 5 && std::memcmp(p, "false", 5) == 0 ? p + 5 : nullptr;
    case 'n':
      *t = jtype::null;
      return end - p >= 4 && std::memcmp(p, "null", 4) == 0 ? p + 4 : nullptr;
    default: *t = jtype::number; return scan_number(p, end, &why);
  }
}

inline void set(jvalue &v, jtype t, const char *vs, const char *ve) {
  v.type = t;
  v.text = t == jtype::string ? std::string_view(vs + 1, static_cast<size_t>(ve - 1 - (vs + 1)))
                              : std::string_view(vs, static_cast<size_t>(ve - vs));
}

// The lines that dftrace and DFTracer write, read in one straight pass: no blanks, only the
// known top-level keys (each once), scalar values, and an "args" object of scalars with keys
// that need no escapes. Anything else returns false, and parse_line reads the line again with
// the whole grammar: a line's result never depends on which path read it, and this path
// accepts nothing that the whole grammar rejects.
bool parse_common(const char *p, const char *end, parsed_line &out) {
  if (end - p < 2 || *p != '{' || p[1] != '"') return false;
  ++p;
  for (;;) {
    if (p >= end || *p != '"') return false;
    jvalue *slot = common_key(p, end, out);
    if (slot && slot->present()) return false;
    if (!slot && !(p = plain_key(p, end))) return false;  // another key (DFTracer 2.x's type)
    if (p >= end) return false;
    const char *vs = p;
    jtype t;
    if (*p == '{') {
      if (!slot || slot != &out.args) return false;
      ++p;
      if (p < end && *p == '}') {
        ++p;
      } else {
        for (;;) {
          if (p >= end || out.nargs == parsed_line::k_max_args) return false;
          const char *ks = p + 1;
          if (!(p = plain_key(p, end))) return false;
          parsed_line::arg &a = out.args_kv[out.nargs++];
          a.key = std::string_view(ks, static_cast<size_t>(p - 2 - ks));
          const char *as = p;
          if (p >= end || !(p = common_scalar(p, end, &t))) return false;
          set(a.value, t, as, p);
          if (p >= end) return false;
          if (*p == '}') break;
          if (*p++ != ',') return false;
        }
        ++p;
      }
      slot->type = jtype::object;
      slot->text = std::string_view(vs, static_cast<size_t>(p - vs));
    } else {
      if (!(p = common_scalar(p, end, &t))) return false;
      if (slot) set(*slot, t, vs, p);
    }
    if (p >= end) return false;
    if (*p == '}') return p + 1 == end;
    if (*p++ != ',') return false;
  }
}

}  // namespace

bool parse_line(std::string_view line, parsed_line &out) {
  reset(out);
  if (parse_common(line.data(), line.data() + line.size(), out)) return true;
  return parse_line_general(line, out);
}

bool parse_line_general(std::string_view line, parsed_line &out) {
  reset(out);

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

bool same_parse(const parsed_line &a, const parsed_line &b) {
  auto same = [](const jvalue &x, const jvalue &y) {
    return x.type == y.type && x.text.data() == y.text.data() && x.text.size() == y.text.size();
  };
  if (!same(a.id, b.id) || !same(a.name, b.name) || !same(a.cat, b.cat) || !same(a.pid, b.pid) ||
      !same(a.tid, b.tid) || !same(a.ts, b.ts) || !same(a.dur, b.dur) || !same(a.ph, b.ph) ||
      !same(a.args, b.args) || !same(a.s, b.s) || a.nargs != b.nargs ||
      a.args_overflow != b.args_overflow || a.duplicate_key != b.duplicate_key)
    return false;
  for (int k = 0; k < a.nargs; ++k)
    if (a.args_kv[k].key.data() != b.args_kv[k].key.data() ||
        a.args_kv[k].key.size() != b.args_kv[k].key.size() ||
        !same(a.args_kv[k].value, b.args_kv[k].value))
      return false;
  return true;
}

bool value_u64(const jvalue &v, uint64_t *out, bool *quoted) {
  if (quoted) *quoted = v.type == jtype::string;
  if (v.type != jtype::number && v.type != jtype::string) return false;
  return digits_u64(v.text, out);
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
