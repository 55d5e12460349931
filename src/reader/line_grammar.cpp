// line_grammar.cpp: the whole JSON grammar for one line, recording the keys the tools need, and
// the readers of a parsed line's values. One iterative pass with an explicit stack and local
// pointers (no recursion, no per-line allocation).
#include <cstring>
#include <string>
#include <string_view>

#include "base/format.hpp"
#include "reader/json_string.hpp"
#include "reader/line_lexer.hpp"
#include "reader/line_parser.hpp"

namespace dftrace::detail {

using namespace line_lex;

namespace {

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

}  // namespace

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

const jvalue *parsed_line::escaped_arg_value(std::string_view key) const {
  std::string meant;
  for (int i = 0; i < nargs; ++i) {
    const std::string_view k = args_kv[i].key;
    if (k.size() <= key.size() || !has_backslash(k)) continue;  // escapes lengthen a key
    meant.clear();
    json_unescape_append(k, &meant);
    if (meant == key) return &args_kv[i].value;
  }
  return nullptr;
}

char phase(const parsed_line &pl) {
  if (pl.ph.type == jtype::string) {
    if (pl.ph.text.empty()) return 0;
    if (pl.ph.text[0] != '\\') return pl.ph.text[0];
    // Written with an escape ("\u0058" is "X"): the character it stands for, when ASCII.
    std::string t;
    json_unescape_append(pl.ph.text, &t);
    return !t.empty() && static_cast<unsigned char>(t[0]) < 0x80 ? t[0] : 0;
  }
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
