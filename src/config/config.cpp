// config.cpp: the layers over the key table: defaults, the YAML file, the environment and the
// init arguments, and what `dftrace config` prints.
#include "config/config.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "config/config_files.hpp"
#include "config/config_table.hpp"
#include "config/messages.hpp"
#include "config/yaml_tree.hpp"
#include "dftrace/dftrace.h"

namespace dftrace::detail {

using keys::entry;
using keys::find_entry;
using keys::table;

namespace {

// output.queue_bytes in ring mode when it was not set.
constexpr size_t k_ring_queue_bytes = size_t{4} << 20;

size_t edit_distance(const std::string &a, const std::string &b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string suggestion(const std::string &key) {
  const char *best = nullptr;
  size_t best_d = 4;
  for (const auto &e : table()) {
    size_t d = edit_distance(key, e.info.key);
    // also compare with the last component ("prefix" for "output.prefix")
    std::string k = e.info.key;
    auto dot = k.rfind('.');
    if (dot != std::string::npos) d = std::min(d, edit_distance(key, k.substr(dot + 1)) + 1);
    if (d < best_d) {
      best_d = d;
      best = e.info.key;
    }
  }
  return best ? std::string("; did you mean '") + best + "'?" : std::string();
}

// Keys whose every layer adds to the earlier ones' rules instead of replacing them.
bool adds_up(const std::string &key) {
  return key == "categories" || key == "aggregation.rules" || key == "output.sample";
}

// Applies one value; reports and keeps the earlier value on a bad one. A value that replaces
// another layer's different value is said at info level (which layer won).
void apply(config &c, const entry &e, const std::string &value, const std::string &source,
           const std::string &where, config_messages &msgs) {
  config trial = c;
  std::string why;
  if (e.set(trial, value, why)) {
    const std::string before = e.get(c), after = e.get(trial);
    const std::string was = c.source[e.info.key];
    if (was != "default" && was != source && before != after && !adds_up(e.info.key))
      msgs.info("key '%s': %s ('%s') wins over %s ('%s')", e.info.key, source.c_str(),
                after.c_str(), was.c_str(), before.c_str());
    c = std::move(trial);
    c.source[e.info.key] = source;
  } else {
    msgs.warn("%s: key '%s': value '%s' %s; keeping %s", where.c_str(), e.info.key, value.c_str(),
              why.c_str(), e.get(c).c_str());
  }
}

// One YAML file's walk: its name, where to report, and the line of each key seen so far (a key
// set twice, "output: {prefix: a}" and "output.prefix: b" alike, is said once with the winner).
struct yaml_walk {
  const std::string &file;
  config_messages &msgs;
  std::map<std::string, int> seen;
};

// The text of a rules key (categories, aggregation.rules, output.sample): a map {path: bool}
// ({path: N} for output.sample), a list ["-comm", "+comm.all_reduce"], or a string.
std::string rules_text(const std::string &key, const yaml_value &value, yaml_walk &w) {
  std::string rules;
  const bool counts = key == "output.sample";
  if (value.is_map()) {
    for (size_t i = 0; i + 1 < value.items.size(); i += 2) {
      bool b;
      const std::string &path = value.items[i].text;
      const yaml_value &rule_value = value.items[i + 1];
      if (counts && rule_value.is_scalar()) {  // sample_key checks the count
        rules += (rules.empty() ? "" : ",") + path + "=" + rule_value.text;
        continue;
      }
      if (!rule_value.is_scalar() || !parse_bool(rule_value.text, &b)) {
        w.msgs.warn("%s: key '%s.%s': value '%s' is not a %s; ignored", w.file.c_str(), key.c_str(),
                    path.c_str(), rule_value.text.c_str(), counts ? "count" : "boolean");
        continue;
      }
      rules += (rules.empty() ? "" : ",") + std::string(b ? "+" : "-") + path;
    }
  } else if (value.is_sequence()) {
    for (const auto &r : value.items) rules += (rules.empty() ? "" : ",") + r.text;
  } else {
    rules = value.text;
  }
  return rules;
}

void apply_yaml_node(config &c, const yaml_value &node, const std::string &prefix, yaml_walk &w) {
  const std::string &file = w.file;
  const std::string source = "yaml " + file;
  for (size_t i = 0; i + 1 < node.items.size(); i += 2) {
    const yaml_value &key_node = node.items[i];
    const yaml_value &value = node.items[i + 1];
    const std::string key = (prefix.empty() ? "" : prefix + ".") + key_node.text;
    if (adds_up(key)) {
      if (const entry *e = find_entry(key))
        apply(c, *e, rules_text(key, value, w), source, file, w.msgs);
      continue;
    }
    if (value.is_map()) {
      apply_yaml_node(c, value, key, w);
      continue;
    }
    const entry *e = find_entry(key);
    if (!e || key == "config") {
      // Past the cap nobody reads the suggestion: a file of many unknown keys stays cheap.
      w.msgs.warn("%s: unknown key '%s'%s; ignored", file.c_str(), key.c_str(),
                  key == "config" ? " (the file can not name another file)"
                  : w.msgs.full() ? ""
                                  : suggestion(key).c_str());
      continue;
    }
    const int line = key_node.line;
    auto [at, first] = w.seen.emplace(key, line);
    if (!first) {
      w.msgs.warn("%s: key '%s' is set twice (lines %d and %d); the later one, line %d, wins",
                  file.c_str(), key.c_str(), at->second, line, line);
      at->second = line;
    }
    if (key == "gpu.kinds" && value.is_sequence()) {  // [kernel, memcpy] as well as "kernel,memcpy"
      std::string list;
      for (const auto &item : value.items) list += (list.empty() ? "" : ",") + item.text;
      apply(c, *e, list, source, file, w.msgs);
      continue;
    }
    if (!value.is_scalar() && !value.is_null()) {
      w.msgs.warn("%s: key '%s': value '%s' is not a single value; keeping %s", file.c_str(),
                  key.c_str(), value.text.c_str(), e->get(c).c_str());
      continue;
    }
    apply(c, *e, value.text, source, file, w.msgs);
  }
}

void apply_yaml_file(config &c, const std::string &file, config_messages &msgs) {
  yaml_value root;
  std::string why;
  switch (load_yaml_file(file, &root, &why)) {
    case yaml_load::ok: break;
    case yaml_load::not_a_file:
      // There, but not a file (a directory, a FIFO, a device): the user meant something else
      // entirely, so tracing stays off rather than run with settings nobody chose.
      msgs.error("%s: the configuration file is %s, not a file; tracing is off", file.c_str(),
                 why.c_str());
      c.config_unusable = true;
      return;
    case yaml_load::not_yaml:
      msgs.warn("%s: not valid YAML (%s); ignoring this file", file.c_str(), why.c_str());
      return;
    default:
      msgs.warn("%s: configuration file can not be read (%s); using the other layers", file.c_str(),
                why.c_str());
      return;
  }
  if (root.is_null()) return;
  if (!root.is_map()) {
    msgs.warn("%s: the top level is not a mapping of keys; ignoring this file", file.c_str());
    return;
  }
  try {
    yaml_walk w{file, msgs, {}};
    apply_yaml_node(c, root, "", w);
  } catch (const std::exception &e) {
    msgs.warn("%s: could not be applied (%s); ignoring the rest of this file", file.c_str(),
              e.what());
  }
}

const char *getenv_nonempty(const char *name) {
  if (!name) return nullptr;
  const char *v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

}  // namespace

config::config() {
  // Every key through its own setter, from the table's text: the one home of each default.
  std::string why;
  for (const auto &e : table()) {
    e.set(*this, e.info.default_text, why);
    source[e.info.key] = "default";
  }
}

namespace {

// The DFTracer name's value as the key reads it: a bare number in the name's unit, and the
// meaning of DFTRACER_DISABLE_* turned round.
std::string dftracer_value(const entry &e, std::string value) {
  if (e.dftracer_unit && !value.empty() &&
      value.find_first_not_of("0123456789.") == std::string::npos)
    value += e.dftracer_unit;
  if (e.dftracer_inverted) {
    bool b;
    if (parse_bool(value, &b)) value = b ? "false" : "true";
  }
  return value;
}

// Environment: the DFTRACE_* name, else the DFTracer name; both set to different values is said.
void apply_environment(config &c, config_messages &msgs) {
  for (const auto &e : table()) {
    if (std::string(e.info.key) == "config") continue;
    const char *v = getenv_nonempty(e.info.env);
    const char *d = getenv_nonempty(e.info.dftracer_env);
    if (v) {
      if (d) {
        config ours = c, theirs = c;
        std::string why;
        const bool ok = e.set(ours, v, why);
        if (ok && e.set(theirs, dftracer_value(e, d), why) && e.get(ours) != e.get(theirs))
          msgs.warn("environment: %s=%s and %s=%s both set key '%s'; %s wins", e.info.env, v,
                    e.info.dftracer_env, d, e.info.key, e.info.env);
      }
      apply(c, e, v, std::string("env ") + e.info.env, std::string("environment ") + e.info.env,
            msgs);
    } else if (d) {
      apply(c, e, dftracer_value(e, d), std::string("env ") + e.info.dftracer_env,
            std::string("environment ") + e.info.dftracer_env, msgs);
    }
  }
}

void apply_init_arguments(config &c, const dftrace_options *options, config_messages &msgs) {
  auto set = [&](const char *key, const std::string &v) {
    if (const entry *e = find_entry(key)) apply(c, *e, v, "init", "dftrace_init", msgs);
  };
  if (options->enable >= 0) set("enable", options->enable ? "true" : "false");
  if (options->output_prefix) set("output.prefix", options->output_prefix);
  if (options->output_file) set("output.file", options->output_file);
  if (options->compression >= 0) set("output.compression", options->compression ? "gzip" : "none");
  if (options->level >= 0) set("output.level", std::to_string(options->level));
  if (options->metadata >= 0) set("metadata", options->metadata ? "true" : "false");
  if (options->install_signal_handlers >= 0)
    set("signals", options->install_signal_handlers ? "true" : "false");
  if (options->bind_atexit >= 0) set("atexit", options->bind_atexit ? "true" : "false");
  if (options->exec_name) c.exec_name = options->exec_name;
  if (options->struct_size >= offsetof(dftrace_options_t, io_init) + sizeof(int)) {
    // DFTracer's init: its data directories join the configured ones.
    if (options->io_data_dir && *options->io_data_dir) {
      const bool both = !c.data_dir.empty() && c.data_dir != options->io_data_dir;
      set("io.data_dir", both ? std::string(options->io_data_dir) + ":" + c.data_dir
                              : std::string(options->io_data_dir));
    }
    if (options->io_init >= 0) set("io.init", options->io_init ? "function" : "preload");
  }
  if (options->struct_size >= offsetof(dftrace_options_t, parent_pid) + sizeof(long) &&
      options->parent_pid > 0)
    c.parent_pid = options->parent_pid;
}

}  // namespace

config load_config(const dftrace_options *options) {
  config c;
  config_messages msgs;
  const bool have_opts =
      options && options->struct_size >= offsetof(dftrace_options_t, bind_atexit) + sizeof(int);

  // The file: init argument, else environment.
  std::string file;
  if (have_opts && options->config_file)
    file = options->config_file;
  else if (const char *v = getenv_nonempty("DFTRACE_CONFIG"))
    file = v;
  else if (const char *v2 = getenv_nonempty("DFTRACER_CONFIGURATION"))
    file = v2;
  if (!file.empty()) {
    c.config_file = file;
    c.source["config"] = have_opts && options->config_file ? "init" : "env";
    apply_yaml_file(c, file, msgs);
  }
  apply_environment(c, msgs);
  if (have_opts) apply_init_arguments(c, options, msgs);
  if (!c.aggregation_file.empty()) read_rules_file(c, msgs);
  msgs.finish(c.log_level);
  return c;
}

writer_sizes effective_writer_sizes(const config &cfg) {
  writer_sizes w;
  w.member_bytes = cfg.member_bytes;
  w.flush_interval = cfg.flush_interval;
  w.queue_bytes = cfg.queue_bytes;
  const auto queue_source = cfg.source.find("output.queue_bytes");
  const bool queue_set = queue_source != cfg.source.end() && queue_source->second != "default";
  if (cfg.ring) {
    // Members closed at least every quarter of the window, so that what a trigger writes covers
    // the window to within a quarter of it; members small beside the ring, so that it holds
    // many of them.
    if (cfg.ring_seconds / 4 < w.flush_interval) {
      w.flush_interval = cfg.ring_seconds / 4;
      w.flush_why = "at most ring.seconds / 4 in ring mode";
    }
    const size_t member_most = std::max<size_t>(4096, cfg.ring_bytes / 4);
    if (member_most < w.member_bytes) {
      w.member_bytes = member_most;
      w.member_why = "at most ring.bytes / 4 in ring mode";
    }
    // Unless output.queue_bytes was set, the queue is 4 MiB in ring mode (16 MiB in file
    // mode): the memory stays within ring.bytes + 16 MiB (docs/flight-recorder.md, "Memory").
    if (!queue_set) {
      w.queue_bytes = k_ring_queue_bytes;
      w.queue_why = "default in ring mode";
    }
  }
  // The queue holds at least four members.
  if (w.queue_bytes < 4 * w.member_bytes) {
    w.queue_bytes = 4 * w.member_bytes;
    w.queue_why += std::string(w.queue_why.empty() ? "" : ", ") + "at least 4 x " +
                   (cfg.ring ? "the member size" : "output.member_bytes");
  }
  w.chunk_bytes = std::min(cfg.buffer_bytes, w.member_bytes);
  return w;
}

namespace {

// The value describe() writes for one key, and why it differs from the key's own ("" if not).
std::string effective_value(const config &cfg, const writer_sizes &w, const entry &e,
                            std::string *why) {
  const std::string_view key = e.info.key;
  const std::string *reason = key == "output.member_bytes"     ? &w.member_why
                              : key == "output.flush_interval" ? &w.flush_why
                              : key == "output.queue_bytes"    ? &w.queue_why
                                                               : nullptr;
  if (!reason || reason->empty()) return e.get(cfg);
  *why = *reason;
  config shown = cfg;  // printed by the key's own printer, in its own form
  shown.member_bytes = w.member_bytes;
  shown.flush_interval = w.flush_interval;
  shown.queue_bytes = w.queue_bytes;
  return e.get(shown);
}

}  // namespace

std::string describe(const config &cfg) {
  const writer_sizes w = effective_writer_sizes(cfg);
  std::string out;
  for (const auto &e : table()) {
    auto it = cfg.source.find(e.info.key);
    std::string why;
    const std::string value = effective_value(cfg, w, e, &why);
    std::string source = it == cfg.source.end() ? "default" : it->second;
    // "default in ring mode" rather than "default, default in ring mode"
    if (!why.empty()) source = why.rfind(source, 0) == 0 ? why : source + ", " + why;
    out += std::string(e.info.key) + " = " + value + "  (" + source + ")\n";
  }
  return out;
}

bool config_value(const config &cfg, std::string_view key, std::string *value) {
  const writer_sizes w = effective_writer_sizes(cfg);
  for (const auto &e : table())
    if (key == e.info.key) {
      std::string why;
      *value = effective_value(cfg, w, e, &why);
      return true;
    }
  return false;
}

const std::vector<key_info> &config_keys() {
  static const std::vector<key_info> &keys = *new std::vector<key_info>([] {
    std::vector<key_info> k;
    for (const auto &e : table()) k.push_back(e.info);
    return k;
  }());
  return keys;
}

}  // namespace dftrace::detail
