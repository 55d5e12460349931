// json_string.cpp: decoding the escapes of JSON strings (RFC 8259 section 7).
#include "reader/json_string.hpp"

namespace dftrace::detail {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The four hex digits at s[i..i+4) as a code unit; -1 when they are not four hex digits.
long hex4(std::string_view s, size_t i) {
  if (i + 4 > s.size()) return -1;
  long v = 0;
  for (size_t k = 0; k < 4; ++k) {
    const int h = hex_value(s[i + k]);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

void put_utf8(std::string *out, unsigned long cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

constexpr unsigned long k_replacement = 0xFFFD;

}  // namespace

void json_unescape_append(std::string_view in, std::string *out) {
  out->reserve(out->size() + in.size());
  size_t i = 0;
  while (i < in.size()) {
    const char *bs = static_cast<const char *>(std::memchr(in.data() + i, '\\', in.size() - i));
    const size_t stop = bs ? static_cast<size_t>(bs - in.data()) : in.size();
    out->append(in.data() + i, stop - i);
    i = stop;
    if (i >= in.size()) break;
    if (i + 1 >= in.size()) {  // a lone backslash at the end: not JSON, kept as written
      out->push_back('\\');
      break;
    }
    const char e = in[i + 1];
    i += 2;
    switch (e) {
      case '"': out->push_back('"'); break;
      case '\\': out->push_back('\\'); break;
      case '/': out->push_back('/'); break;
      case 'b': out->push_back('\b'); break;
      case 'f': out->push_back('\f'); break;
      case 'n': out->push_back('\n'); break;
      case 'r': out->push_back('\r'); break;
      case 't': out->push_back('\t'); break;
      case 'u': {
        const long u = hex4(in, i);
        if (u < 0) {  // malformed: as written
          out->append("\\u");
          break;
        }
        i += 4;
        if (u >= 0xD800 && u <= 0xDBFF) {  // a high surrogate: a low one must follow
          const long lo =
              i + 1 < in.size() && in[i] == '\\' && in[i + 1] == 'u' ? hex4(in, i + 2) : -1;
          if (lo >= 0xDC00 && lo <= 0xDFFF) {
            put_utf8(out, 0x10000 + ((static_cast<unsigned long>(u) - 0xD800) << 10) +
                              (static_cast<unsigned long>(lo) - 0xDC00));
            i += 6;
          } else {
            put_utf8(out, k_replacement);
          }
        } else if (u >= 0xDC00 && u <= 0xDFFF) {
          put_utf8(out, k_replacement);
        } else {
          put_utf8(out, static_cast<unsigned long>(u));
        }
        break;
      }
      default:  // not JSON: as written
        out->push_back('\\');
        out->push_back(e);
        break;
    }
  }
}

std::string decoded(const jvalue &v) {
  std::string s;
  if (v.type == jtype::string)
    json_unescape_append(v.text, &s);
  else
    s.assign(v.text);
  return s;
}

bool text_equals(const jvalue &v, std::string_view s) {
  // Every escape is longer than what it stands for: a text as long as s or shorter means s
  // only when it is s.
  if (v.text.size() <= s.size() || v.type != jtype::string) return v.text == s;
  if (std::memchr(v.text.data(), '\\', v.text.size()) == nullptr) return false;
  std::string tmp;
  json_unescape_append(v.text, &tmp);
  return tmp == s;
}

}  // namespace dftrace::detail
