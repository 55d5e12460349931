// yaml_tree.cpp: the parser's flat buffer read back into a yaml_value tree.
#include "config/yaml_tree.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace dftrace::detail {
namespace {

struct reader {
  const unsigned char *p, *end;
  bool u32(uint32_t *v) {
    if (end - p < 4) return false;
    *v = uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
    p += 4;
    return true;
  }
};

// One node and its items (the parser bounds the nesting; the reader checks it too).
bool read_node(reader &r, yaml_value *out, int depth) {
  if (depth > 256 || r.p == r.end || *r.p > 3) return false;
  out->type = static_cast<yaml_value::kind>(*r.p++);
  uint32_t line = 0, count = 0, text_len = 0;
  if (!r.u32(&line) || !r.u32(&count) || !r.u32(&text_len)) return false;
  if (static_cast<size_t>(r.end - r.p) < text_len) return false;
  out->line = static_cast<int>(line);
  out->text.assign(reinterpret_cast<const char *>(r.p), text_len);
  r.p += text_len;
  // Each item takes at least 13 bytes: a count beyond what is left is a damaged buffer.
  if (count > static_cast<size_t>(r.end - r.p) / 13) return false;
  out->items.resize(count);
  for (auto &item : out->items)
    if (!read_node(r, &item, depth + 1)) return false;
  return true;
}

}  // namespace

bool parse_yaml(const std::string &text, yaml_value *root, std::string *why) {
  try {
    *root = yaml_value();
    const dftrace_yaml_parse_fn parse = yaml_parser(why);
    if (!parse) return false;
    size_t len = 0;
    std::unique_ptr<char, void (*)(void *)> flat(parse(text.data(), text.size(), &len), std::free);
    if (!flat || len == 0) {
      *why = "out of memory";
      return false;
    }
    if (flat.get()[0] == 'E') {
      why->assign(flat.get() + 1, len - 1);
      return false;
    }
    const auto *start = reinterpret_cast<const unsigned char *>(flat.get());
    reader r{start + 1, start + len};
    if (flat.get()[0] != 'D' || !read_node(r, root, 0) || r.p != r.end) {
      *root = yaml_value();
      *why = "the YAML parser's answer is damaged";
      return false;
    }
    return true;
  } catch (const std::exception &) {
    *root = yaml_value();
    *why = "out of memory";
    return false;
  }
}

}  // namespace dftrace::detail
