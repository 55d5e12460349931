// line_parser.cpp: strict JSON grammar for one line, recording the keys the tools need.
#include "reader/line_parser.hpp"

#include <cstring>

namespace dftrace::detail {

namespace {

// Recursion depth of nested values that a trace line may reasonably hold.
constexpr int k_max_depth = 64;

struct cursor {
  const char *p;
  const char *end;
  const char *begin;
  const char *err = nullptr;
  size_t err_at = 0;

  bool fail(const char *why) {
    if (!err) {
      err = why;
      err_at = static_cast<size_t>(p - begin);
    }
    return false;
  }
  void ws() {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) ++p;
  }
};

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline int hex_val(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Length of the valid UTF-8 sequence starting at p (0 if invalid).
size_t utf8_len(const unsigned char *p, const unsigned char *end) {
  const unsigned c = p[0];
  size_t n;
  unsigned min;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    min = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    min = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    min = 0x10000;
  } else {
    return 0;
  }
  if (static_cast<size_t>(end - p) < n) return 0;
  unsigned cp = c & (0x3F >> (n - 1));
  for (size_t i = 1; i < n; ++i) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

// At an opening quote; leaves p after the closing quote, s = the escaped inside.
bool parse_string(cursor &c, std::string_view *s) {
  ++c.p;
  const char *start = c.p;
  for (;;) {
    // Fast path: plain printable ASCII.
    while (c.p < c.end) {
      const unsigned char ch = static_cast<unsigned char>(*c.p);
      if (ch == '"' || ch == '\\' || ch < 0x20 || ch >= 0x80) break;
      ++c.p;
    }
    if (c.p >= c.end) return c.fail("unterminated string");
    const unsigned char ch = static_cast<unsigned char>(*c.p);
    if (ch == '"') {
      if (s) *s = std::string_view(start, static_cast<size_t>(c.p - start));
      ++c.p;
      return true;
    }
    if (ch < 0x20) return c.fail("control character in string");
    if (ch >= 0x80) {
      const size_t n = utf8_len(reinterpret_cast<const unsigned char *>(c.p),
                                reinterpret_cast<const unsigned char *>(c.end));
      if (!n) return c.fail("invalid UTF-8 in string");
      c.p += n;
      continue;
    }
    // Backslash escape.
    if (c.p + 1 >= c.end) return c.fail("unterminated string");
    const char e = c.p[1];
    if (e == 'u') {
      if (c.end - c.p < 6) return c.fail("bad \\u escape");
      for (int i = 2; i < 6; ++i)
        if (hex_val(c.p[i]) < 0) return c.fail("bad \\u escape");
      c.p += 6;
    } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' ||
               e == 'r' || e == 't') {
      c.p += 2;
    } else {
      return c.fail("bad escape in string");
    }
  }
}

bool parse_number(cursor &c) {
  const char *q = c.p;
  if (q < c.end && *q == '-') ++q;
  if (q >= c.end || !is_digit(*q)) return c.fail("bad number");
  if (*q == '0') {
    ++q;
  } else {
    while (q < c.end && is_digit(*q)) ++q;
  }
  if (q < c.end && *q == '.') {
    ++q;
    if (q >= c.end || !is_digit(*q)) return c.fail("bad number");
    while (q < c.end && is_digit(*q)) ++q;
  }
  if (q < c.end && (*q == 'e' || *q == 'E')) {
    ++q;
    if (q < c.end && (*q == '+' || *q == '-')) ++q;
    if (q >= c.end || !is_digit(*q)) return c.fail("bad number");
    while (q < c.end && is_digit(*q)) ++q;
  }
  c.p = q;
  return true;
}

bool parse_value(cursor &c, jvalue *v, int depth, parsed_line *args_out);

bool parse_object(cursor &c, int depth, parsed_line *args_out) {
  if (depth > k_max_depth) return c.fail("nesting too deep");
  ++c.p;  // '{'
  c.ws();
  if (c.p < c.end && *c.p == '}') {
    ++c.p;
    return true;
  }
  for (;;) {
    c.ws();
    if (c.p >= c.end || *c.p != '"') return c.fail("expected a key");
    std::string_view key;
    if (!parse_string(c, &key)) return false;
    c.ws();
    if (c.p >= c.end || *c.p != ':') return c.fail("expected ':'");
    ++c.p;
    c.ws();
    jvalue v;
    if (!parse_value(c, &v, depth + 1, nullptr)) return false;
    if (args_out) {
      if (args_out->nargs < parsed_line::k_max_args) {
        args_out->args_kv[args_out->nargs++] = {key, v};
      } else {
        args_out->args_overflow = true;
      }
    }
    c.ws();
    if (c.p >= c.end) return c.fail("unterminated object");
    if (*c.p == ',') {
      ++c.p;
      continue;
    }
    if (*c.p == '}') {
      ++c.p;
      return true;
    }
    return c.fail("expected ',' or '}'");
  }
}

bool parse_array(cursor &c, int depth) {
  if (depth > k_max_depth) return c.fail("nesting too deep");
  ++c.p;  // '['
  c.ws();
  if (c.p < c.end && *c.p == ']') {
    ++c.p;
    return true;
  }
  for (;;) {
    c.ws();
    jvalue v;
    if (!parse_value(c, &v, depth + 1, nullptr)) return false;
    c.ws();
    if (c.p >= c.end) return c.fail("unterminated array");
    if (*c.p == ',') {
      ++c.p;
      continue;
    }
    if (*c.p == ']') {
      ++c.p;
      return true;
    }
    return c.fail("expected ',' or ']'");
  }
}

bool literal(cursor &c, const char *word, size_t n) {
  if (static_cast<size_t>(c.end - c.p) < n || std::memcmp(c.p, word, n) != 0)
    return c.fail("invalid value");
  c.p += n;
  return true;
}

bool parse_value(cursor &c, jvalue *v, int depth, parsed_line *args_out) {
  if (c.p >= c.end) return c.fail("missing value");
  const char *start = c.p;
  switch (*c.p) {
    case '"': {
      std::string_view s;
      if (!parse_string(c, &s)) return false;
      v->type = jtype::string;
      v->text = s;
      return true;
    }
    case '{':
      if (!parse_object(c, depth, args_out)) return false;
      v->type = jtype::object;
      break;
    case '[':
      if (!parse_array(c, depth)) return false;
      v->type = jtype::array;
      break;
    case 't':
      if (!literal(c, "true", 4)) return false;
      v->type = jtype::boolean;
      break;
    case 'f':
      if (!literal(c, "false", 5)) return false;
      v->type = jtype::boolean;
      break;
    case 'n':
      if (!literal(c, "null", 4)) return false;
      v->type = jtype::null;
      break;
    default:
      if (!parse_number(c)) return false;
      v->type = jtype::number;
      break;
  }
  v->text = std::string_view(start, static_cast<size_t>(c.p - start));
  return true;
}

// Which known top-level key a key is; nullptr for others.
jvalue *known_slot(parsed_line &out, std::string_view k) {
  switch (k.size()) {
    case 1:
      if (k[0] == 's') return &out.s;
      break;
    case 2:
      if (k == "id") return &out.id;
      if (k == "ts") return &out.ts;
      if (k == "ph") return &out.ph;
      break;
    case 3:
      if (k == "cat") return &out.cat;
      if (k == "pid") return &out.pid;
      if (k == "tid") return &out.tid;
      if (k == "dur") return &out.dur;
      break;
    case 4:
      if (k == "name") return &out.name;
      if (k == "args") return &out.args;
      break;
    default:
      break;
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
  out = parsed_line{};
  cursor c{line.data(), line.data() + line.size(), line.data()};
  c.ws();
  if (c.p >= c.end || *c.p != '{') {
    c.fail("not a JSON object");
    out.error = c.err;
    out.error_at = c.err_at;
    return false;
  }
  ++c.p;
  c.ws();
  bool ok = true;
  if (c.p < c.end && *c.p == '}') {
    ++c.p;
  } else {
    for (;;) {
      c.ws();
      if (c.p >= c.end || *c.p != '"') {
        ok = c.fail("expected a key");
        break;
      }
      std::string_view key;
      if (!parse_string(c, &key)) {
        ok = false;
        break;
      }
      c.ws();
      if (c.p >= c.end || *c.p != ':') {
        ok = c.fail("expected ':'");
        break;
      }
      ++c.p;
      c.ws();
      jvalue *slot = known_slot(out, key);
      jvalue v;
      const bool is_args = slot == &out.args && c.p < c.end && *c.p == '{';
      if (is_args) out.nargs = 0;
      if (!parse_value(c, &v, 1, is_args ? &out : nullptr)) {
        ok = false;
        break;
      }
      if (slot) {
        if (slot->present()) out.duplicate_key = true;
        *slot = v;
      }
      c.ws();
      if (c.p >= c.end) {
        ok = c.fail("unterminated object");
        break;
      }
      if (*c.p == ',') {
        ++c.p;
        continue;
      }
      if (*c.p == '}') {
        ++c.p;
        break;
      }
      ok = c.fail("expected ',' or '}'");
      break;
    }
  }
  if (ok) {
    c.ws();
    if (c.p != c.end) ok = c.fail("data after the object");
  }
  if (!ok) {
    out.error = c.err;
    out.error_at = c.err_at;
  }
  return ok;
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

bool is_hash_ref_key(std::string_view key) {
  if (key == "hhash" || key == "fhash") return true;
  return key.size() > 5 && key.substr(key.size() - 5) == "_hash";
}

}  // namespace dftrace::detail
