// yaml_tree.hpp: a parsed YAML document as the configuration reads it, and the parser that
// makes it. yaml-cpp (and the shared libstdc++ it brings) is kept out of libdftrace's own links:
// loading them costs every traced process about a millisecond, and most processes read no YAML
// file. So the parser is a component, libdftrace_yaml.so, opened beside libdftrace the first
// time a file is read; the tools and tests, which link the core statically, link it directly.
// The parser hands the document over as a flat buffer (below), never as C++ objects: the
// component and libdftrace need not share a C++ runtime.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

extern "C" {
// Parses `len` bytes of YAML text: a malloc'd buffer (the caller frees it with free()), its
// length in *out_len; null only when out of memory. The buffer is 'D' and the document's root
// node, or 'E' and the reason ("line 3, column 2: ..."). A node: its type (one byte: 0 null,
// 1 scalar, 2 sequence, 3 map), its line (1-based), its number of items and the length of its
// text (three little-endian u32), the text, then its items (a map's: key, value, key, ...).
// Never throws.
typedef char *(*dftrace_yaml_parse_fn)(const char *text, size_t len, size_t *out_len);
}

namespace dftrace::detail {

struct yaml_value {
  enum class kind : unsigned char { null = 0, scalar = 1, sequence = 2, map = 3 };
  kind type = kind::null;
  int line = 0;  // 1-based
  // A scalar's text; "" for null; a sequence's or map's flow form ("{a: 1, b: [x]}", for
  // messages). A map key's text is yaml-cpp's `as<std::string>("")` of it ("null" for `~`).
  std::string text;
  std::vector<yaml_value> items;  // a sequence's items; a map's key, value, key, value, ...

  bool is_null() const { return type == kind::null; }
  bool is_scalar() const { return type == kind::scalar; }
  bool is_sequence() const { return type == kind::sequence; }
  bool is_map() const { return type == kind::map; }
  size_t size() const { return type == kind::map ? items.size() / 2 : items.size(); }
};

// The parser, or null with *why set (its component can not be loaded). Loaded at most once per
// process.
dftrace_yaml_parse_fn yaml_parser(std::string *why);

// Parses `text` into *root: true, or false with *why set (the parser's reason, or why there is
// no parser). Never throws.
bool parse_yaml(const std::string &text, yaml_value *root, std::string *why);

}  // namespace dftrace::detail
