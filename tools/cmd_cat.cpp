// cmd_cat.cpp: dftrace cat: the JSON lines of traces, filtered by category, name, pid and
// time window; members outside the window are skipped through their DT fields. --graph: the
// model graphs dftrace.torch.model_graph wrote (CM lines `model_graph`), printed as tables.
#include <cstdio>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "inputs.hpp"
#include "lines.hpp"
#include "reader/json_string.hpp"

namespace dftrace::tools {

namespace {

struct filter {
  std::unordered_set<std::string> cats, names, pids;
  bool has_from = false, has_to = false;
  uint64_t from = 0, to = 0;
  bool time() const { return has_from || has_to; }

  bool keep(const parsed_line &pl, time_unit unit) const {
    // Names and categories as they are meant: "\u0066orward" is "forward".
    if (!cats.empty() && !cats.count(detail::decoded(pl.cat))) return false;
    if (!names.empty() && !names.count(detail::decoded(pl.name))) return false;
    if (!pids.empty() && !pids.count(std::string(pl.pid.text))) return false;
    if (time()) {
      uint64_t ns = 0;  // compared in whole microseconds, as --from and --to are given
      if (!pl.ts.present() || !detail::value_ns(pl.ts, unit, &ns)) return false;
      const uint64_t ts = ns / 1000;
      if (has_from && ts < from) return false;
      if (has_to && ts > to) return false;
    }
    return true;
  }
};

struct cat_result : detail::block_result {
  std::string out;
  uint64_t invalid = 0;
};

bool parse_time(const std::string &s, uint64_t *out) {
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

// ---- --graph: a small JSON reader for the one document model_graph writes

struct json {
  jtype type = jtype::null;
  std::string text;  // a string's value (unescaped), a number's or literal's token
  std::vector<json> items;
  std::vector<std::pair<std::string, json>> fields;

  const json *get(std::string_view key) const {
    for (const auto &f : fields)
      if (f.first == key) return &f.second;
    return nullptr;
  }
  std::string str(std::string_view key) const {
    const json *v = get(key);
    return v && (v->type == jtype::string || v->type == jtype::number) ? v->text : "";
  }
};

// Recursive descent over text[*at...]; false when it is not JSON.
bool parse_json(std::string_view t, size_t *at, json *out, int depth = 0) {
  auto skip = [&] {
    while (*at < t.size() && (t[*at] == ' ' || t[*at] == '\n' || t[*at] == '\t' || t[*at] == '\r'))
      ++*at;
  };
  skip();
  if (*at >= t.size() || depth > 64) return false;
  const char c = t[*at];
  if (c == '"') {
    size_t e = *at + 1;
    while (e < t.size() && t[e] != '"') e += t[e] == '\\' ? 2 : 1;
    if (e >= t.size()) return false;
    out->type = jtype::string;
    detail::json_unescape_append(t.substr(*at + 1, e - *at - 1), &out->text);
    *at = e + 1;
    return true;
  }
  if (c == '{' || c == '[') {
    const bool obj = c == '{';
    out->type = obj ? jtype::object : jtype::array;
    ++*at;
    skip();
    if (*at < t.size() && t[*at] == (obj ? '}' : ']')) {
      ++*at;
      return true;
    }
    for (;;) {
      json key, value;
      if (obj) {
        if (!parse_json(t, at, &key, depth + 1) || key.type != jtype::string) return false;
        skip();
        if (*at >= t.size() || t[*at] != ':') return false;
        ++*at;
      }
      if (!parse_json(t, at, &value, depth + 1)) return false;
      if (obj)
        out->fields.emplace_back(std::move(key.text), std::move(value));
      else
        out->items.push_back(std::move(value));
      skip();
      if (*at < t.size() && t[*at] == ',') {
        ++*at;
        continue;
      }
      if (*at < t.size() && t[*at] == (obj ? '}' : ']')) {
        ++*at;
        return true;
      }
      return false;
    }
  }
  size_t e = *at;
  while (e < t.size() && std::string_view(",}] \n\t\r").find(t[e]) == std::string_view::npos) ++e;
  if (e == *at) return false;
  out->text = std::string(t.substr(*at, e - *at));
  out->type = out->text == "null"                           ? jtype::null
              : out->text == "true" || out->text == "false" ? jtype::boolean
                                                            : jtype::number;
  *at = e;
  return true;
}

std::string joined(const json *list, const char *sep) {
  std::string s;
  if (!list) return s;
  for (const auto &x : list->items) {
    if (!s.empty()) s += sep;
    s += x.type == jtype::string || x.type == jtype::number ? x.text : "?";
  }
  return s;
}

// One model_graph document as text: each graph a heading and a table of its nodes.
std::string graph_text(const json &doc, const std::string &pid) {
  const json *graphs = doc.get("graphs");
  const size_t n = graphs ? graphs->items.size() : 0;
  std::string out = "model graph of " + doc.str("model") + " (pid " + pid +
                    "): " + std::to_string(n) + (n == 1 ? " graph, " : " graphs, ") +
                    doc.str("failures") + " not traceable by torch.fx\n";
  if (!graphs) return out;
  char line[512];
  for (const json &g : graphs->items) {
    const std::string path = g.str("path");
    const json *ok = g.get("ok");
    out += "\n" +
           (path.empty() ? doc.str("model") + " (the model)" : path + " (" + g.str("module") + ")");
    if (!ok || ok->text != "true") {
      out += ": not traced: " + g.str("error") +
             "\n  a leaf of its parent's graph; its submodules are traced separately\n";
      continue;
    }
    out += "\n";
    const json *nodes = g.get("nodes");
    for (const json &node : nodes ? nodes->items : std::vector<json>{}) {
      std::string shape = joined(node.get("shape"), ", ");
      if (node.get("shape")) shape = "[" + shape + "] " + node.str("dtype");
      const std::string args = joined(node.get("args"), ", ");
      snprintf(line, sizeof line, "  %-16s %-13s %-28s %-20s %s", node.str("name").c_str(),
               node.str("op").c_str(), node.str("target").c_str(),
               args.empty() ? "" : ("(" + args + ")").c_str(), shape.c_str());
      std::string l = line;
      while (!l.empty() && l.back() == ' ') l.pop_back();
      out += l + "\n";
    }
    const std::string leaves = joined(g.get("leaves"), ", ");
    if (!leaves.empty()) out += "  leaves fx could not trace: " + leaves + "\n";
    if (!g.str("shape_error").empty()) out += "  no shapes: " + g.str("shape_error") + "\n";
  }
  return out;
}

// dftrace cat --graph FILES: every model_graph document in the files, in file order.
int print_graphs(const std::vector<std::string> &files, bool ok) {
  size_t found = 0;
  for (const auto &path : files) {
    detail::trace_file f;
    if (!open_trace(path, &f, &ok)) continue;
    std::vector<std::pair<std::string, std::string>> docs;  // (pid, escaped JSON)
    detail::for_each_block(
        f, tool_read_options(),
        [&](detail::text_block &b) {
          auto r = std::make_unique<cat_result>();
          parsed_line pl;
          detail::for_each_line(b.whole_lines(), [&](std::string_view line) {
            if (line.find("\"model_graph\"") == std::string_view::npos) return true;
            if (!detail::parse_line(line, pl) || pl.name.text != "CM") return true;
            const jvalue *k = pl.arg_value("name"), *v = pl.arg_value("value");
            if (k && v && k->text == "model_graph" && v->type == jtype::string) {
              r->out.append(pl.pid.text).push_back('\n');
              r->out.append(v->text).push_back('\n');
            }
            return true;
          });
          b.result = std::move(r);
        },
        [&](detail::text_block &b) {
          const std::string &o = static_cast<cat_result *>(b.result.get())->out;
          for (size_t at = 0; at < o.size();) {
            const size_t e1 = o.find('\n', at), e2 = o.find('\n', e1 + 1);
            docs.emplace_back(o.substr(at, e1 - at), o.substr(e1 + 1, e2 - e1 - 1));
            at = e2 + 1;
          }
        });
    for (const auto &[pid, escaped] : docs) {
      std::string text;
      json doc;
      size_t at = 0;
      detail::json_unescape_append(escaped, &text);
      if (!parse_json(text, &at, &doc) || doc.type != jtype::object) {
        error_line(path + ": a model_graph line that is not a JSON document (skipped)");
        ok = false;
        continue;
      }
      const std::string t = (found++ ? "\n" : "") + graph_text(doc, pid);
      if (fwrite(t.data(), 1, t.size(), stdout) != t.size()) ok = false;
    }
  }
  if (!found)
    error_line(
        "cat --graph: no model graph in these traces (dftrace.torch.model_graph writes one)");
  if (fflush(stdout) != 0) ok = false;
  return ok && found ? 0 : 1;
}

}  // namespace

int cmd_cat(const args_t &a) {
  bool ok = true;
  const std::vector<std::string> files = input_files(a, "cat", &ok);
  if (files.empty()) return 2;
  if (a.has("--graph")) return print_graphs(files, ok);
  filter flt;
  for (auto &c : a.get_all("--cat")) flt.cats.insert(c);
  for (auto &n : a.get_all("--name")) flt.names.insert(n);
  for (auto &p : a.get_all("--pid")) flt.pids.insert(p);
  if (a.has("--from")) {
    flt.has_from = parse_time(a.get("--from"), &flt.from);
    if (!flt.has_from) {
      error_line("cat: --from needs a timestamp in microseconds since the epoch");
      return 2;
    }
  }
  if (a.has("--to")) {
    flt.has_to = parse_time(a.get("--to"), &flt.to);
    if (!flt.has_to) {
      error_line("cat: --to needs a timestamp in microseconds since the epoch");
      return 2;
    }
  }
  const bool any_filter =
      !flt.cats.empty() || !flt.names.empty() || !flt.pids.empty() || flt.time();
  detail::read_options opt = tool_read_options();
  if (flt.time()) {
    opt.keep_part = [&flt](const detail::planned_part &p) {
      if (p.kind != detail::planned_part::member) return true;
      if (p.dt.ts_min == 0 && p.dt.ts_max == 0) return false;  // no line with a ts
      if (flt.has_from && p.dt.ts_max < flt.from) return false;
      if (flt.has_to && p.dt.ts_min > flt.to) return false;
      return true;
    };
  }
  time_unit unit = time_unit::us;  // of the file being read
  auto work = [&](detail::text_block &b) {
    auto r = std::make_unique<cat_result>();
    r->out.reserve(any_filter ? b.text.size() / 4 : b.text.size());
    parsed_line pl;
    const std::string_view text = b.whole_lines();
    detail::for_each_line(text, [&](std::string_view line) {
      const std::string_view t = trim(line);
      if (t.empty() || t == "[" || t == "]") return true;
      if (!detail::parse_line(line, pl)) {
        ++r->invalid;
        return true;
      }
      if (any_filter && !flt.keep(pl, unit)) return true;
      r->out.append(t.data(), t.size());
      r->out.push_back('\n');
      return true;
    });
    b.result = std::move(r);
  };
  for (const auto &path : files) {
    detail::trace_file f;
    if (!open_trace(path, &f, &ok)) continue;
    print_plan_issues(f, path);
    if (flt.time()) unit = detail::header_time_unit(f);
    uint64_t invalid = 0;
    detail::for_each_block(f, opt, work, [&](detail::text_block &b) {
      f.release(b.in_offset, b.in_bytes);  // the resident set stays flat
      auto *r = static_cast<cat_result *>(b.result.get());
      if (!r->out.empty() && fwrite(r->out.data(), 1, r->out.size(), stdout) != r->out.size()) {
        ok = false;
      }
      invalid += r->invalid;
      for (const auto &i : b.issues) {
        error_line(path + ": byte " + std::to_string(i.offset) + ": " + i.message);
        if (i.error) ok = false;
      }
    });
    if (invalid)
      error_line(path + ": skipped " + std::to_string(invalid) +
                 " lines that are not valid JSON (run dftrace validate for details)");
  }
  if (fflush(stdout) != 0) ok = false;
  return ok ? 0 : 1;
}

}  // namespace dftrace::tools
