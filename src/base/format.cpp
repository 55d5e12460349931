// format.cpp: JSON string escaping with UTF-8 validation, and a small JSON value checker.
#include "base/format.hpp"

#include <cctype>
#include <cstdint>
#include <cstring>

namespace dftrace::detail {

namespace {
// The bytes that stand for themselves in a JSON string (printable ASCII but '"' and '\\').
struct plain_bytes {
  bool is[256] = {};
  constexpr plain_bytes() {
    for (int c = 0x20; c < 0x80; ++c) is[c] = c != '"' && c != '\\';
  }
};
constexpr plain_bytes k_plain{};
}  // namespace

char *escape_json(char *out, const char *in, size_t n) {
  static constexpr char hex[] = "0123456789abcdef";
  const auto *s = reinterpret_cast<const unsigned char *>(in);
  // The usual text (keys, names, paths) needs no escape: copied 8 bytes at a time while a word
  // holds no byte to escape (below 0x20, '"', '\\', or 0x80 and above: each test below is exact
  // about whether such a byte is in the word), then byte by byte.
  size_t i = 0;
  constexpr uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, s + i, 8);
    const uint64_t quote = w ^ (ones * '"'), slash = w ^ (ones * '\\');
    const uint64_t special =
        (((w - ones * 0x20) & ~w) | ((quote - ones) & ~quote) | ((slash - ones) & ~slash) | w) &
        highs;
    if (special) break;
    std::memcpy(out + i, &w, 8);
  }
  while (i < n && k_plain.is[s[i]]) {
    out[i] = static_cast<char>(s[i]);
    ++i;
  }
  out += i;
  while (i < n) {
    const unsigned char c = s[i];
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      *out++ = static_cast<char>(c);
      ++i;
      continue;
    }
    if (c < 0x80) {
      *out++ = '\\';
      switch (c) {
        case '"': *out++ = '"'; break;
        case '\\': *out++ = '\\'; break;
        case '\n': *out++ = 'n'; break;
        case '\r': *out++ = 'r'; break;
        case '\t': *out++ = 't'; break;
        case '\b': *out++ = 'b'; break;
        case '\f': *out++ = 'f'; break;
        default:
          *out++ = 'u';
          *out++ = '0';
          *out++ = '0';
          *out++ = hex[c >> 4];
          *out++ = hex[c & 15];
      }
      ++i;
      continue;
    }
    const size_t len = utf8_sequence(s + i, n - i);
    if (len == 0) {  // invalid byte: U+FFFD
      *out++ = static_cast<char>(0xEF);
      *out++ = static_cast<char>(0xBF);
      *out++ = static_cast<char>(0xBD);
      ++i;
      continue;
    }
    std::memcpy(out, s + i, len);
    out += len;
    i += len;
  }
  return out;
}

std::string json_quote(std::string_view s) {
  std::string out;
  out.resize(escaped_bound(s.size()) + 2);
  char *p = out.data();
  *p++ = '"';
  p = escape_json(p, s.data(), s.size());
  *p++ = '"';
  out.resize(static_cast<size_t>(p - out.data()));
  return out;
}

namespace {

struct json_checker {
  const char *p;
  const char *end;
  int depth = 0;

  void ws() {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) ++p;
  }
  bool lit(const char *w) {
    size_t n = std::strlen(w);
    if (static_cast<size_t>(end - p) < n || std::memcmp(p, w, n) != 0) return false;
    p += n;
    return true;
  }
  bool string() {
    if (p >= end || *p != '"') return false;
    ++p;
    while (p < end) {
      unsigned char c = static_cast<unsigned char>(*p);
      if (c == '"') {
        ++p;
        return true;
      }
      if (c < 0x20) return false;
      if (c >= 0x80) {  // the same UTF-8 rule as escaping and the reader
        const size_t n =
            utf8_sequence(reinterpret_cast<const unsigned char *>(p), static_cast<size_t>(end - p));
        if (n == 0) return false;
        p += n;
        continue;
      }
      if (c == '\\') {
        ++p;
        if (p >= end) return false;
        if (*p == 'u') {
          for (int i = 0; i < 4; ++i) {
            ++p;
            if (p >= end || !std::isxdigit(static_cast<unsigned char>(*p))) return false;
          }
        } else if (*p == '\0' || !std::strchr("\"\\/bfnrt", *p)) {
          return false;
        }
      }
      ++p;
    }
    return false;
  }
  bool number() {
    const char *s = p;
    if (p < end && *p == '-') ++p;
    if (p >= end || !std::isdigit(static_cast<unsigned char>(*p))) return false;
    if (*p == '0')
      ++p;
    else
      while (p < end && std::isdigit(static_cast<unsigned char>(*p))) ++p;
    if (p < end && *p == '.') {
      ++p;
      if (p >= end || !std::isdigit(static_cast<unsigned char>(*p))) return false;
      while (p < end && std::isdigit(static_cast<unsigned char>(*p))) ++p;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
      ++p;
      if (p < end && (*p == '+' || *p == '-')) ++p;
      if (p >= end || !std::isdigit(static_cast<unsigned char>(*p))) return false;
      while (p < end && std::isdigit(static_cast<unsigned char>(*p))) ++p;
    }
    return p > s;
  }
  // The rest of an object or array after its opening: items separated by ',' up to `close`.
  template <typename Item>
  bool sequence(char close, Item item) {
    ++p;
    ws();
    if (p < end && *p == close) {
      ++p;
      return true;
    }
    while (item()) {
      ws();
      if (p < end && *p == ',') {
        ++p;
        continue;
      }
      if (p < end && *p == close) {
        ++p;
        return true;
      }
      return false;
    }
    return false;
  }
  bool value() {
    if (++depth > 64) return false;
    ws();
    if (p >= end) return false;
    bool ok;
    switch (*p) {
      case '{':
        ok = sequence('}', [this] {
          ws();
          if (!string()) return false;
          ws();
          if (p >= end || *p != ':') return false;
          ++p;
          return value();
        });
        break;
      case '[': ok = sequence(']', [this] { return value(); }); break;
      case '"': ok = string(); break;
      case 't': ok = lit("true"); break;
      case 'f': ok = lit("false"); break;
      case 'n': ok = lit("null"); break;
      default: ok = number();
    }
    --depth;
    return ok;
  }
};

}  // namespace

bool is_valid_json_value(std::string_view s) {
  json_checker c{s.data(), s.data() + s.size()};
  if (!c.value()) return false;
  c.ws();
  return c.p == c.end;
}

std::string json_value_on_one_line(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  std::string out(s);
  for (char &c : out)
    if (c == '\n' || c == '\r') c = ' ';
  return out;
}

}  // namespace dftrace::detail
