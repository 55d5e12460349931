// yaml_parse.cpp: yaml-cpp's parse of a document, flattened (yaml_tree.hpp): the body of
// libdftrace_yaml.so, linked directly into the tools and tests.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "config/yaml_tree.hpp"

namespace {

// Bounds on what a document may expand to: aliases repeat nodes (a few lines can stand for
// billions of them) and an anchor may contain its own alias (a cycle).
constexpr int k_max_depth = 64;
constexpr size_t k_max_nodes = size_t{1} << 20;
constexpr size_t k_max_bytes = size_t{256} << 20;

struct too_large {
  const char *why;
};

struct flattener {
  std::string out;
  size_t nodes = 0;

  void u32(uint32_t v) {
    const char b[4] = {static_cast<char>(v), static_cast<char>(v >> 8), static_cast<char>(v >> 16),
                       static_cast<char>(v >> 24)};
    out.append(b, 4);
  }

  static std::string flow(const YAML::Node &n) {
    YAML::Emitter em;
    em << YAML::Flow << n;
    return em.c_str();
  }

  // `text`: what the node reads as (a scalar's text, the flow form of a sequence or map), or a
  // map key's as<std::string>("").
  void node(const YAML::Node &n, const std::string &text, int depth) {
    if (depth > k_max_depth) throw too_large{"nested more than 64 levels deep"};
    if (++nodes > k_max_nodes) throw too_large{"more than a million nodes (aliases expanded)"};
    const unsigned char type = n.IsScalar() ? 1 : n.IsSequence() ? 2 : n.IsMap() ? 3 : 0;
    out.push_back(static_cast<char>(type));
    u32(static_cast<uint32_t>(n.Mark().line + 1));
    u32(static_cast<uint32_t>(type == 3 ? 2 * n.size() : type == 2 ? n.size() : 0));
    u32(static_cast<uint32_t>(text.size()));
    out += text;
    if (out.size() > k_max_bytes) throw too_large{"too large once its aliases are expanded"};
    if (type == 2) {
      for (const auto &item : n) node(item, text_of(item), depth + 1);
    } else if (type == 3) {
      for (auto it = n.begin(); it != n.end(); ++it) {
        // Copies: yaml-cpp's iterator hands out a temporary pair, so a reference would dangle.
        const YAML::Node key = it->first;
        const YAML::Node value = it->second;
        node(key, key.as<std::string>(""), depth + 1);
        node(value, text_of(value), depth + 1);
      }
    }
  }

  static std::string text_of(const YAML::Node &n) {
    if (n.IsScalar()) return n.Scalar();
    if (n.IsNull() || !n.IsDefined()) return std::string();
    return flow(n);
  }
};

char *copy_out(char tag, const std::string &body, size_t *out_len) {
  char *buf = static_cast<char *>(std::malloc(body.size() + 1));
  if (!buf) return nullptr;
  buf[0] = tag;
  std::memcpy(buf + 1, body.data(), body.size());
  *out_len = body.size() + 1;
  return buf;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) char *dftrace_yaml_parse(const char *text,
                                                                           size_t len,
                                                                           size_t *out_len) {
  try {
    std::string why;
    try {
      const YAML::Node root = YAML::Load(std::string(text, len));
      flattener f;
      // The root's flow form is never read: it is left out (a whole file's worth of text).
      f.node(root, root.IsScalar() ? root.Scalar() : std::string(), 0);
      return copy_out('D', f.out, out_len);
    } catch (const YAML::Exception &e) {
      why = "line " + std::to_string(e.mark.line + 1) + ", column " +
            std::to_string(e.mark.column + 1) + ": " + e.msg;
    } catch (const too_large &e) {
      why = e.why;
    } catch (const std::bad_alloc &) {
      return nullptr;
    } catch (const std::exception &e) {
      why = e.what();
    }
    return copy_out('E', why, out_len);
  } catch (...) {
    return nullptr;
  }
}
