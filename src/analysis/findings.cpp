// findings.cpp: the built-in rules, the rules files, and each rule's metric measured on the
// analysis with the evidence behind it.
#include "analysis/findings.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "analysis/held_sum.hpp"
#include "analysis/result_json.hpp"
#include "base/format.hpp"
#include "config/config_files.hpp"
#include "config/yaml_tree.hpp"

namespace dftrace::analysis {

const char *const k_default_rules = R"yaml(rules:
  - name: io_not_hidden
    metric: bound_by.io
    warning: 10
    critical: 25
    min_ns: 1000000000
    min_count: 10
    suggestion: "I/O not hidden by compute takes this share of step time: prefetch, read in background threads or stage data on faster storage"
  - name: dataloader_wait
    metric: bound_by.data
    warning: 10
    critical: 25
    min_ns: 1000000000
    min_count: 10
    suggestion: "Steps wait for data loading: add DataLoader workers, pin memory, prefetch more batches or simplify the transforms"
  - name: comm_not_overlapped
    metric: bound_by.comm
    warning: 15
    critical: 30
    min_ns: 1000000000
    min_count: 10
    suggestion: "Communication not overlapped with compute: bucket gradients, overlap all-reduce with backward, or check the interconnect"
  - name: small_accesses
    metric: io.small_access_share
    warning: 50
    critical: 80
    min_count: 1000
    suggestion: "Most I/O calls move 10 KiB or less: read and write in larger blocks, or buffer (stdio, a larger read size, a packed format)"
  - name: random_access
    metric: io.random_share
    warning: 30
    critical: 60
    min_count: 1000
    suggestion: "Many accesses go back or jump within files: sort reads by offset, shuffle at the level of whole shards, or prefetch"
  - name: metadata_dominated
    metric: io.metadata_share
    warning: 50
    critical: 75
    min_ns: 1000000000
    min_count: 1000
    suggestion: "Opens, stats, seeks and closes take most of the I/O time: keep files open, pack small files into larger ones, cache stats"
  - name: stragglers
    metric: stragglers.share
    warning: 1
    critical: 5
    min_ns: 100000000
    min_count: 3
    suggestion: "Some ranks' steps run far over the median: look at those ranks' nodes, their data shards and their I/O"
  - name: rank_imbalance
    metric: imbalance.p50
    warning: 10
    critical: 25
    min_count: 10
    suggestion: "The slowest rank typically runs this much over the median step: balance the work per rank or look for a slow node"
  - name: late_rank_at_collectives
    metric: collectives.wait_share
    warning: 20
    critical: 50
    min_ns: 100000000
    min_count: 10
    suggestion: "Ranks spend this share of their collective calls waiting for a late rank: look at what that rank does before them (its data, I/O, node or extra work)"
  - name: checkpoint_stall
    metric: checkpoint.steps
    warning: 100
    critical: 1000
    min_ns: 1000000000
    min_count: 1
    suggestion: "A checkpoint stalls training for this many steps' time (percent of the median step): checkpoint asynchronously or less often"
)yaml";

namespace {

struct observed {
  bool available = false;
  double value = 0;
  uint64_t ns = 0, count = 0;
  std::string evidence;
};

std::string num(uint64_t v) { return std::to_string(v); }

std::string real(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

std::string rank_of(const analysis_result &r, size_t g) {
  return r.groups[g].has_rank ? std::to_string(r.groups[g].rank) : std::string("null");
}

double pct(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

observed bound_by(const analysis_result &r, size_t k) {
  observed o;
  if (!r.step_total) return o;
  o.available = true;
  o.ns = r.bound_total[k];
  o.count = r.steps.size();
  o.value = pct(o.ns, r.step_total);
  step_result w;
  const step_result *worst = nullptr;
  r.steps.for_each([&](const step_result &s, size_t) {
    if (!worst || s.parts[k] > worst->parts[k]) worst = &(w = s);
  });
  o.evidence = "{\"part_ns\":" + num(o.ns) + ",\"steps_ns\":" + num(r.step_total) +
               ",\"steps\":" + num(o.count) +
               ",\"worst_step\":{\"rank\":" + rank_of(r, worst->group) +
               ",\"group\":" + num(worst->group) + ",\"index\":" + num(worst->index) +
               ",\"part_ns\":" + num(worst->parts[k]) + ",\"dur_ns\":" + num(worst->dur) + "}}";
  return o;
}

// The top files by a figure, as a JSON array of {file, VALUE_KEY}.
template <typename F>
std::string top_files(const io_summary &s, const char *key, F figure) {
  std::vector<std::pair<uint64_t, const io_file_summary *>> v;
  for (const auto &f : s.files)
    if (figure(f)) v.emplace_back(figure(f), &f);
  std::stable_sort(v.begin(), v.end(),
                   [](const auto &a, const auto &b) { return a.first > b.first; });
  std::string o = "[";
  for (size_t i = 0; i < v.size() && i < 3; ++i)
    o += std::string(i ? "," : "") + "{\"file\":" + detail::json_quote(v[i].second->name) + ",\"" +
         key + "\":" + num(v[i].first) + "}";
  return o + "]";
}

observed small_accesses(const analysis_result &r) {
  observed o;
  const io_summary &s = r.io;
  uint64_t all = 0, small = 0;
  for (int k = 0; k < 2; ++k)
    for (size_t i = 0; i < k_size_buckets; ++i) {
      all += s.hist[k][i];
      if (i < 3) small += s.hist[k][i];  // 0-100, 100-1K, 1K-10K
    }
  if (!all) return o;
  o.available = true;
  o.count = small;
  o.value = pct(small, all);
  std::string common = "[";
  for (size_t i = 0; i < s.common_sizes.size(); ++i)
    common += std::string(i ? "," : "") + "{\"size\":" + num(s.common_sizes[i].first) +
              ",\"count\":" + num(s.common_sizes[i].second) + "}";
  o.evidence = "{\"calls_up_to_10KiB\":" + num(small) + ",\"calls_with_size\":" + num(all) +
               ",\"common_access_sizes\":" + common + "]}";
  return o;
}

observed random_access(const analysis_result &r) {
  observed o;
  uint64_t ordered = 0, seq = 0;
  for (const auto &f : r.io.files)
    for (int k = 0; k < 2; ++k) {
      ordered += f.fig.ordered[k];
      seq += f.fig.seq[k];
    }
  if (!ordered) return o;
  o.available = true;
  o.count = ordered - seq;
  o.value = pct(o.count, ordered);
  o.evidence = "{\"not_sequential\":" + num(o.count) + ",\"ordered_accesses\":" + num(ordered) +
               ",\"files\":" +
               top_files(r.io, "not_sequential",
                         [](const io_file_summary &f) {
                           return f.fig.ordered[0] + f.fig.ordered[1] - f.fig.seq[0] - f.fig.seq[1];
                         }) +
               "}";
  return o;
}

observed metadata_share(const analysis_result &r) {
  observed o;
  const io_summary &s = r.io;
  const uint64_t data = s.data_ns;
  if (!data && !s.meta_ns) return o;
  o.available = true;
  o.ns = s.meta_ns;
  o.count = s.meta_ops;
  // over their sum as a double: data and metadata time together may pass 2^64-1 ns
  o.value = 100.0 * static_cast<double>(s.meta_ns) /
            (static_cast<double>(data) + static_cast<double>(s.meta_ns));
  o.evidence = "{\"metadata_ns\":" + num(s.meta_ns) + ",\"data_ns\":" + num(data) +
               ",\"metadata_ops\":" + num(s.meta_ops) + ",\"files\":" +
               top_files(s, "metadata_ns", [](const io_file_summary &f) { return f.fig.meta_ns; }) +
               "}";
  return o;
}

observed stragglers(const analysis_result &r) {
  observed o;
  if (!r.steps_compared) return o;
  o.available = true;
  o.count = r.stragglers.size();
  o.ns = r.stragglers.excess_ns();
  o.value = pct(o.count, r.steps.size());
  std::string worst = "[";
  const std::vector<straggler> &head = r.stragglers.head();
  for (size_t i = 0; i < head.size() && i < 5; ++i) {
    const straggler &s = head[i];
    worst += std::string(i ? "," : "") + "{\"rank\":" + rank_of(r, s.group) +
             ",\"step\":" + detail::json_quote(s.step) + ",\"dur_ns\":" + num(s.dur) +
             ",\"median_ns\":" + num(s.median) + "}";
  }
  o.evidence = "{\"stragglers\":" + num(o.count) + ",\"steps\":" + num(r.steps.size()) +
               ",\"excess_ns\":" + num(o.ns) + ",\"worst\":" + worst + "]}";
  return o;
}

observed imbalance(const analysis_result &r) {
  observed o;
  if (!r.steps_compared) return o;
  o.available = true;
  o.count = r.steps_compared;
  o.value = (r.imbalance_p50 - 1) * 100;
  o.evidence = "{\"steps_compared\":" + num(r.steps_compared) +
               ",\"max_over_median_p50\":" + real(r.imbalance_p50) +
               ",\"max_over_median_max\":" + real(r.imbalance_max) +
               ",\"worst\":{\"step\":" + detail::json_quote(r.imbalance_worst_step) +
               ",\"rank\":" + rank_of(r, r.imbalance_worst_group) + "}}";
  return o;
}

// The share of the matched collectives' time that ranks spent waiting for the last one, with
// the rank whose lateness caused most of it.
observed collective_wait(const analysis_result &r) {
  observed o;
  const coll_summary &c = r.collectives;
  if (!c.instances || !c.blocked_ns) return o;
  o.available = true;
  o.ns = c.wait_ns;
  o.count = c.instances;
  o.value = pct(c.wait_ns, c.blocked_ns);
  const coll_group_total *late = nullptr;
  for (const coll_group_total &t : c.groups)
    if (!late || t.caused_ns > late->caused_ns) late = &t;
  const coll_op *op = nullptr;
  for (const coll_op &x : c.ops)
    if (!op || x.wait_ns > op->wait_ns) op = &x;
  o.evidence =
      "{\"wait_ns\":" + num(c.wait_ns) + ",\"blocked_ns\":" + num(c.blocked_ns) +
      ",\"instances\":" + num(c.instances) + ",\"late_rank\":{\"rank\":" + rank_of(r, late->group) +
      ",\"group\":" + num(late->group) + ",\"last\":" + num(late->last) +
      ",\"caused_ns\":" + num(late->caused_ns) + "},\"op\":{\"op\":" + detail::json_quote(op->op) +
      ",\"wait_ns\":" + num(op->wait_ns) + ",\"instances\":" + num(op->instances) + "}}";
  return o;
}

observed checkpoint_steps(const analysis_result &r) {
  observed o;
  size_t g = 0;
  for (size_t i = 0; i < r.groups.size(); ++i) {
    o.count += r.groups[i].checkpoint_events;
    if (r.groups[i].checkpoint_max_ns > r.groups[g].checkpoint_max_ns) g = i;
  }
  if (!o.count || !r.step_p50) return o;
  o.available = true;
  o.ns = r.groups[g].checkpoint_max_ns;
  o.value = pct(o.ns, r.step_p50);
  o.evidence = "{\"longest_ns\":" + num(o.ns) + ",\"rank\":" + rank_of(r, g) +
               ",\"group\":" + num(g) + ",\"step_p50_ns\":" + num(r.step_p50) +
               ",\"checkpoint_events\":" + num(o.count) + "}";
  return o;
}

observed measure(const std::string &metric, const analysis_result &r) {
  // The layers' order in bound_by (analysis/analyze.hpp): compute, comm, io, data, other.
  static const char *const k_bound[] = {"bound_by.compute", "bound_by.comm", "bound_by.io",
                                        "bound_by.data", "bound_by.other"};
  for (size_t layer = 0; layer < 5; ++layer)
    if (metric == k_bound[layer]) return bound_by(r, layer);
  static const std::pair<const char *, observed (*)(const analysis_result &)> k_metrics[] = {
      {"io.small_access_share", small_accesses},
      {"io.random_share", random_access},
      {"io.metadata_share", metadata_share},
      {"stragglers.share", stragglers},
      {"imbalance.p50", imbalance},
      {"collectives.wait_share", collective_wait},
      {"checkpoint.steps", checkpoint_steps}};
  for (const auto &m : k_metrics)
    if (metric == m.first) return m.second(r);
  return observed();
}

}  // namespace

std::vector<std::string> rule_metrics() {
  return {"bound_by.compute", "bound_by.comm",          "bound_by.io",
          "bound_by.data",    "bound_by.other",         "io.small_access_share",
          "io.random_share",  "io.metadata_share",      "stragglers.share",
          "imbalance.p50",    "collectives.wait_share", "checkpoint.steps"};
}

namespace {

// A scalar's text as a number (the whole text), or false.
bool as_double(const detail::yaml_value &v, double *out) {
  if (!v.is_scalar() || v.text.empty()) return false;
  char *end = nullptr;
  *out = std::strtod(v.text.c_str(), &end);
  return end && *end == '\0';
}

bool as_u64(const detail::yaml_value &v, uint64_t *out) {
  if (!v.is_scalar() || v.text.empty() || v.text[0] == '-') return false;
  char *end = nullptr;
  *out = std::strtoull(v.text.c_str(), &end, 10);
  return end && *end == '\0';
}

bool as_bool(const detail::yaml_value &v, bool *out) {
  const std::string &t = v.text;
  if (t == "true" || t == "True" || t == "TRUE" || t == "yes" || t == "on") return *out = true;
  if (t == "false" || t == "False" || t == "FALSE" || t == "no" || t == "off") {
    *out = false;
    return true;
  }
  return false;
}

const detail::yaml_value *member(const detail::yaml_value &map, const char *key) {
  if (!map.is_map()) return nullptr;
  for (size_t i = 0; i + 1 < map.items.size(); i += 2)
    if (map.items[i].text == key) return &map.items[i + 1];
  return nullptr;
}

// One key of a rule into r: false with *why set when its value is not of the key's kind or the
// key is unknown.
bool rule_key(const std::string &k, const detail::yaml_value &v, rule &r, std::string *why) {
  bool ok = true;
  if (k == "metric")
    ok = v.is_scalar() && !(r.metric = v.text).empty();
  else if (k == "warning")
    ok = as_double(v, &r.warning);
  else if (k == "critical")
    ok = as_double(v, &r.critical);
  else if (k == "min_ns")
    ok = as_u64(v, &r.min_ns);
  else if (k == "min_count")
    ok = as_u64(v, &r.min_count);
  else if (k == "suggestion")
    ok = v.is_scalar() && (r.suggestion = v.text, true);
  else if (k == "enabled")
    ok = as_bool(v, &r.enabled);
  else {
    *why = "unknown key '" + k + "'";
    return false;
  }
  if (!ok) *why = "key '" + k + "': bad value '" + v.text + "'";
  return ok;
}

bool parse_root(const detail::yaml_value &root, const std::string &what, std::vector<rule> *rules,
                std::string *why) {
  const detail::yaml_value *list = member(root, "rules");
  if (!list || !list->is_sequence()) {
    *why = what + ": no `rules` list (rules: [{name: ..., metric: ..., warning: ...}])";
    return false;
  }
  const std::vector<std::string> metrics = rule_metrics();
  for (const detail::yaml_value &n : list->items) {
    const detail::yaml_value *nm = n.is_map() ? member(n, "name") : nullptr;
    if (!nm || !nm->is_scalar()) {
      *why = what + ": each rule is a map with a `name`";
      return false;
    }
    const std::string name = nm->text;
    auto it =
        std::find_if(rules->begin(), rules->end(), [&](const rule &x) { return x.name == name; });
    rule r = it == rules->end() ? rule() : *it;
    r.name = name;
    for (size_t i = 0; i + 1 < n.items.size(); i += 2) {
      const std::string &k = n.items[i].text;
      if (k == "name") continue;
      std::string reason;
      if (!rule_key(k, n.items[i + 1], r, &reason)) {
        *why = what + ": rule '" + name + "': " + reason;
        return false;
      }
    }
    if (std::find(metrics.begin(), metrics.end(), r.metric) == metrics.end()) {
      *why = what + ": rule '" + name + "': unknown metric '" + r.metric + "'";
      return false;
    }
    if (r.critical < r.warning) {
      *why = what + ": rule '" + name + "': critical is below warning";
      return false;
    }
    if (it == rules->end())
      rules->push_back(r);
    else
      *it = r;
  }
  return true;
}

}  // namespace

bool parse_rules(const std::string &yaml, const std::string &what, std::vector<rule> *rules,
                 std::string *why) {
  detail::yaml_value root;
  std::string reason;
  if (!detail::parse_yaml(yaml, &root, &reason)) {
    *why = what + ": " + reason;
    return false;
  }
  return parse_root(root, what, rules, why);
}

bool load_rules_file(const std::string &path, std::vector<rule> *rules, std::string *why) {
  detail::yaml_value root;
  std::string reason;
  if (detail::load_yaml_file(path, &root, &reason) != detail::yaml_load::ok) {
    *why = path + ": " + reason;
    return false;
  }
  return parse_root(root, path, rules, why);
}

std::vector<finding> evaluate_rules(const std::vector<rule> &rules, const analysis_result &r) {
  std::vector<finding> out;
  for (const rule &x : rules) {
    if (!x.enabled) continue;
    const observed o = measure(x.metric, r);
    if (!o.available || o.value < x.warning) continue;
    finding f;
    f.rule = x.name;
    f.metric = x.metric;
    f.value = o.value;
    f.suggestion = x.suggestion;
    f.severity = o.value >= x.critical ? "critical" : "warning";
    // too little time or too few calls to be sure of it
    if (o.ns < x.min_ns || o.count < x.min_count) f.severity = "info";
    f.evidence = "{\"magnitude_ns\":" + num(o.ns) + ",\"magnitude_count\":" + num(o.count) +
                 ",\"min_ns\":" + num(x.min_ns) + ",\"min_count\":" + num(x.min_count) +
                 ",\"details\":" + o.evidence + "}";
    out.push_back(f);
  }
  auto rank = [](const std::string &s) { return s == "critical" ? 0 : s == "warning" ? 1 : 2; };
  std::stable_sort(out.begin(), out.end(), [&](const finding &a, const finding &b) {
    return rank(a.severity) < rank(b.severity);
  });
  return out;
}

}  // namespace dftrace::analysis
