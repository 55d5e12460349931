// result_json.cpp: writes inputs, groups, steps, stragglers and imbalance as JSON.
#include "analysis/result_json.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "base/format.hpp"

namespace dftrace::analysis {

namespace {

std::string num(uint64_t v) { return std::to_string(v); }

std::string ratio(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

// A pid as JSON: its canonical number, or a string when it is none.
std::string pid_json(const std::string &p) {
  for (char ch : p)
    if ((ch < '0' || ch > '9') && ch != '-') return detail::json_quote(p);
  return p.empty() ? "null" : p;
}

std::string rank_json(const group_result &g) {
  return g.has_rank ? std::to_string(g.rank) : std::string("null");
}

void named_map(std::string &o, const char *key, const std::vector<std::string> &names,
               const std::vector<uint64_t> &v) {
  o += std::string(",\"") + key + "\":{";
  for (size_t i = 0; i < v.size(); ++i)
    o += (i ? "," : "") + detail::json_quote(names[i]) + ":" + num(v[i]);
  o += "}";
}

void pair_map(std::string &o, const char *key,
              const std::vector<std::pair<std::string, uint64_t>> &v) {
  o += std::string(",\"") + key + "\":{";
  for (size_t i = 0; i < v.size(); ++i)
    o += (i ? "," : "") + detail::json_quote(v[i].first) + ":" + num(v[i].second);
  o += "}";
}

void inputs_json(std::string &o, const input_report &in, const analysis_result &r,
                 size_t processes) {
  const line_counts &c = in.counts;
  o += "\"inputs\":{\"files\":" + num(in.files.size()) + ",\"processes\":" + num(processes) +
       ",\"ranks\":" + num(r.ranks) + ",\"events\":" + num(c.objects) +
       ",\"lines\":" + num(c.lines) + ",\"complete_events\":" + num(c.complete) +
       ",\"aggregated_records\":" + num(c.aggregated) + ",\"metadata\":" + num(c.metadata) +
       ",\"invalid_lines\":" + num(c.invalid) +
       ",\"processes_without_end\":" + num(r.processes_without_end) +
       ",\"complete\":" + (inputs_complete(in, r) ? "true" : "false") + ",\"damaged\":[";
  bool first = true;
  for (const auto &d : in.damaged) {
    o += std::string(first ? "" : ",") + "{\"file\":" + detail::json_quote(d.path) +
         ",\"what\":" + detail::json_quote(d.what) + "}";
    first = false;
  }
  for (const auto &p : r.process_problems) {
    o += std::string(first ? "" : ",") + "{\"file\":null,\"what\":" + detail::json_quote(p) + "}";
    first = false;
  }
  o += "],\"warnings\":[";
  for (size_t i = 0; i < in.warnings.size(); ++i)
    o += (i ? "," : "") + std::string("{\"file\":") + detail::json_quote(in.warnings[i].path) +
         ",\"what\":" + detail::json_quote(in.warnings[i].what) + "}";
  for (size_t i = 0; i < r.process_warnings.size(); ++i)
    o += (i || !in.warnings.empty() ? "," : "") + std::string("{\"file\":null,\"what\":") +
         detail::json_quote(r.process_warnings[i]) + "}";
  o += "],\"per_file\":[";
  for (size_t i = 0; i < in.files.size(); ++i) {
    const file_report &f = in.files[i];
    o += (i ? "," : "") + std::string("{\"path\":") + detail::json_quote(f.path) +
         ",\"lines\":" + num(f.lines) + ",\"text_bytes\":" + num(f.text_bytes) +
         ",\"compressed_bytes\":" + num(f.compressed_bytes) + ",\"members\":" + num(f.members) +
         ",\"dt_members\":" + num(f.dt_members) + ",\"damaged\":" + (f.damaged ? "true" : "false") +
         "}";
  }
  o += "]}";
}

// A value's text as it stood in the line (the escaped inside of a string), quoted again.
std::string jstr(const std::string &s) {
  std::string q = "\"" + s + "\"";
  return detail::is_valid_json_value(q) ? q : detail::json_quote(s);
}

void io_file_json(std::string &o, const io_file_summary &f, const analysis_result &r) {
  const file_io &x = f.fig;
  o += "{\"file\":" + jstr(f.name) + ",\"path_known\":" + (f.path_known ? "true" : "false");
  for (int k = 0; k < 2; ++k) {
    const std::string d = k ? "write" : "read";
    o += ",\"" + d + "_bytes\":" + num(x.bytes[k]) + ",\"" + d + "s\":" + num(x.ops[k]) + ",\"" +
         d + "_ns\":" + num(x.ns[k]) + ",\"sequential_" + d + "s\":" + num(x.seq[k]) +
         ",\"consecutive_" + d + "s\":" + num(x.consec[k]);
  }
  o += ",\"metadata_ops\":" + num(x.meta_ops) + ",\"metadata_ns\":" + num(x.meta_ns) +
       ",\"ranks\":[";
  bool first = true;
  for (size_t g : f.groups)
    if (r.groups[g].has_rank) {
      o += (first ? "" : ",") + std::to_string(r.groups[g].rank);
      first = false;
    }
  o += "],\"groups\":[";
  for (size_t i = 0; i < f.groups.size(); ++i) o += (i ? "," : "") + num(f.groups[i]);
  o += std::string("],\"shared\":") + (f.groups.size() > 1 ? "true" : "false") + "}";
}

void io_json(std::string &o, const analysis_result &r,
             const std::function<void(std::string &)> &sink) {
  const io_summary &s = r.io;
  o += ",\"io\":{";
  for (int k = 0; k < 2; ++k) {
    const std::string d = k ? "write" : "read";
    o += (k ? "," : "") + std::string("\"") + d + "_bytes\":" + num(s.bytes[k]) + ",\"" + d +
         "s\":" + num(s.ops[k]) + ",\"" + d + "_ns\":" + num(s.ns[k]);
  }
  o += ",\"metadata_ops\":" + num(s.meta_ops) + ",\"metadata_ns\":" + num(s.meta_ns) +
       ",\"data_ns\":" + num(s.data_ns) + ",\"access_sizes\":{";
  for (int k = 0; k < 2; ++k) {
    o += std::string(k ? "," : "") + (k ? "\"write\":{" : "\"read\":{");
    for (size_t i = 0; i < k_size_buckets; ++i)
      o += std::string(i ? "," : "") + "\"" + k_size_bucket_names[i] + "\":" + num(s.hist[k][i]);
    o += "}";
  }
  o += ",\"not_binned\":{\"read\":" + num(s.unbinned[0]) + ",\"write\":" + num(s.unbinned[1]) +
       "}},\"common_access_sizes\":[";
  for (size_t i = 0; i < s.common_sizes.size(); ++i)
    o += (i ? "," : "") + std::string("{\"size\":") + num(s.common_sizes[i].first) +
         ",\"count\":" + num(s.common_sizes[i].second) + "}";
  o += "],\"offset_unknown\":{\"read\":" + num(s.offset_unknown[0]) +
       ",\"write\":" + num(s.offset_unknown[1]) +
       "},\"copies\":{\"written_from_no_file_bytes\":" + num(s.copies.no_file[0]) +
       ",\"read_to_no_file_bytes\":" + num(s.copies.no_file[1]) +
       ",\"unattributed_calls\":" + num(s.copies.unattributed_calls) +
       ",\"unattributed_bytes\":" + num(s.copies.unattributed_bytes) + "},\"files\":[";
  for (size_t i = 0; i < s.files.size(); ++i) {
    if (i) o += ",";
    io_file_json(o, s.files[i], r);
    if (o.size() >= (1u << 20)) sink(o);
  }
  o += "],\"bandwidth\":{\"bin_ns\":" + num(s.bin_ns) + ",\"start_ns\":" + num(s.bin_start_ns) +
       ",\"groups\":[";
  for (size_t i = 0; i < s.bandwidth.size(); ++i) {
    const io_group_bins &b = s.bandwidth[i];
    o += (i ? "," : "") + std::string("{\"group\":") + num(b.group) +
         ",\"rank\":" + rank_json(r.groups[b.group]);
    for (int k = 0; k < 2; ++k) {
      o += k ? ",\"write_bytes\":[" : ",\"read_bytes\":[";
      for (size_t j = 0; j < b.bytes[k].size(); ++j) o += (j ? "," : "") + num(b.bytes[k][j]);
      o += "]";
    }
    o += "}";
    if (o.size() >= (1u << 20)) sink(o);
  }
  o += "]}}";
}

// One step item appended to o: a million steps are a million items, so no temporary strings.
void append_int(std::string &o, int64_t v, bool is_signed) {
  char buf[24];
  const auto res = is_signed ? std::to_chars(buf, buf + sizeof buf, v)
                             : std::to_chars(buf, buf + sizeof buf, static_cast<uint64_t>(v));
  o.append(buf, res.ptr);
}
void append_step(std::string &o, const step_result &s, const std::string &rank) {
  auto u = [&o](const char *key, uint64_t v) {
    o += key;
    append_int(o, static_cast<int64_t>(v), false);
  };
  o += "{\"rank\":";
  o += rank;
  u(",\"group\":", s.group);
  u(",\"index\":", s.index);
  o += ",\"step\":";
  if (s.has_step)
    append_int(o, s.step, true);
  else
    o += "null";
  o += ",\"epoch\":";
  if (s.has_epoch)
    append_int(o, s.epoch, true);
  else
    o += "null";
  u(",\"ts_ns\":", s.start);
  u(",\"dur_ns\":", s.dur);
  u(",\"compute_ns\":", s.parts[0]);
  u(",\"comm_ns\":", s.parts[1]);
  u(",\"io_ns\":", s.parts[2]);
  u(",\"data_ns\":", s.parts[3]);
  u(",\"other_ns\":", s.parts[k_nbound]);
  o += '}';
}
static_assert(k_nbound == 4, "append_step names the four bound classes");

}  // namespace

std::string group_label(const group_result &g) {
  if (g.has_rank) return "rank " + std::to_string(g.rank);
  return "pid " + (g.pids.empty() ? std::string("?") : g.pids[0]) +
         (g.host.empty() ? "" : " on " + g.host);
}

std::string result_json(const input_report &in, const analysis_result &r, size_t processes,
                        bool *read_whole) {
  std::string all;
  const bool whole = result_json(in, r, processes, [&](std::string &part) {
    all += part;
    part.clear();
  });
  if (read_whole) *read_whole = whole;
  return all;
}

// The figure of a layer pair, in either order ("compute+comm"), or 0.
uint64_t pair_ns(const group_result &g, const std::string &a, const std::string &b) {
  for (const auto &kv : g.overlap_ns)
    if (kv.first == a + "+" + b || kv.first == b + "+" + a) return kv.second;
  return 0;
}

void collectives_json(std::string &o, const analysis_result &r) {
  const coll_summary &c = r.collectives;
  auto group_ref = [&](size_t g) {
    return "\"rank\":" + rank_json(r.groups[g]) + ",\"group\":" + num(g);
  };
  o += ",\"collectives\":{\"instances\":" + num(c.instances) + ",\"wait_ns\":" + num(c.wait_ns) +
       ",\"blocked_ns\":" + num(c.blocked_ns) + ",\"ops\":[";
  for (size_t i = 0; i < c.ops.size(); ++i) {
    const coll_op &x = c.ops[i];
    o +=
        (i ? "," : "") + std::string("{\"op\":") + detail::json_quote(x.op) +
        ",\"comm_size\":" + (x.has_size ? num(x.comm_size) : std::string("null")) +
        ",\"comm_group\":" + (x.group.empty() ? std::string("null") : detail::json_quote(x.group)) +
        ",\"instances\":" + num(x.instances) + ",\"unmatched_calls\":" + num(x.unmatched_calls) +
        ",\"wait_ns\":" + num(x.wait_ns) + ",\"blocked_ns\":" + num(x.blocked_ns) +
        ",\"spread_p50_ns\":" + num(x.spread_p50) + ",\"spread_p99_ns\":" + num(x.spread_p99) +
        ",\"spread_max_ns\":" + num(x.spread_max) + ",\"last\":";
    o += x.has_last ? "{" + group_ref(x.last_group) + ",\"count\":" + num(x.last_count) + "}"
                    : std::string("null");
    o += ",\"note\":" + (x.note.empty() ? std::string("null") : detail::json_quote(x.note)) +
         ",\"ranks\":[";
    for (size_t k = 0; k < x.ranks.size(); ++k) {
      const coll_rank &y = x.ranks[k];
      o += (k ? ",{" : "{") + group_ref(y.group) + ",\"calls\":" + num(y.calls) +
           ",\"wait_ns\":" + num(y.wait_ns) + ",\"last\":" + num(y.last) +
           ",\"caused_ns\":" + num(y.caused_ns) + "}";
    }
    o += "]}";
  }
  // Per group: the wait at matched collectives, and how much of its comm time compute hides.
  o += "],\"groups\":[";
  const auto it = std::find(r.layers.begin(), r.layers.end(), std::string("comm"));
  const bool has_comm = it != r.layers.end();
  const size_t ci = static_cast<size_t>(it - r.layers.begin());
  size_t k = 0;
  std::vector<const coll_group_total *> tot(r.groups.size(), nullptr);
  for (const coll_group_total &t : c.groups) tot[t.group] = &t;
  for (size_t g = 0; g < r.groups.size(); ++g) {
    const group_result &x = r.groups[g];
    const uint64_t comm = has_comm && ci < x.union_ns.size() ? x.union_ns[ci] : 0;
    if (!comm && !tot[g]) continue;
    const uint64_t hidden = pair_ns(x, "compute", "comm");
    o += (k++ ? ",{" : "{") + group_ref(g) + ",\"calls\":" + num(tot[g] ? tot[g]->calls : 0) +
         ",\"wait_ns\":" + num(tot[g] ? tot[g]->wait_ns : 0) +
         ",\"last\":" + num(tot[g] ? tot[g]->last : 0) +
         ",\"caused_ns\":" + num(tot[g] ? tot[g]->caused_ns : 0) + ",\"comm_ns\":" + num(comm) +
         ",\"comm_overlapped_ns\":" + num(hidden) +
         ",\"comm_overlap_pct\":" + ratio(comm ? 100.0 * double(hidden) / double(comm) : 0.0) + "}";
  }
  o += "]}";
}

// The stragglers (read back in order: false when their file cannot be) and the imbalance.
bool stragglers_json(std::string &o, const analysis_result &r,
                     const std::function<void(std::string &)> &sink) {
  o += ",\"stragglers\":[";
  bool first = true;
  const bool whole = r.stragglers.for_each([&](const straggler &s) {
    o += (first ? "" : ",") + std::string("{\"rank\":") + rank_json(r.groups[s.group]) +
         ",\"group\":" + num(s.group) + ",\"step\":" + detail::json_quote(s.step) +
         ",\"dur_ns\":" + num(s.dur) + ",\"median_ns\":" + num(s.median) + "}";
    first = false;
    if (o.size() >= (1u << 20)) sink(o);
  });
  o += "],\"imbalance\":{\"factor\":" + ratio(double(k_straggler_num) / double(k_straggler_den)) +
       ",\"margin_ns\":" + num(k_straggler_margin_ns) +
       ",\"steps_compared\":" + num(r.steps_compared) +
       ",\"max_over_median_max\":" + ratio(r.imbalance_max) +
       ",\"max_over_median_mean\":" + ratio(r.imbalance_mean) +
       ",\"max_over_median_p50\":" + ratio(r.imbalance_p50) + ",\"worst\":";
  if (r.steps_compared)
    o += "{\"step\":" + detail::json_quote(r.imbalance_worst_step) +
         ",\"rank\":" + rank_json(r.groups[r.imbalance_worst_group]) +
         ",\"group\":" + num(r.imbalance_worst_group) + "}";
  else
    o += "null";
  o += "}";
  return whole;
}

bool result_json(const input_report &in, const analysis_result &r, size_t processes,
                 const std::function<void(std::string &)> &sink, bool step_items) {
  std::string o = "{\"version\":1,";
  inputs_json(o, in, r, processes);
  o += ",\"layers\":[";
  for (size_t i = 0; i < r.layers.size(); ++i)
    o += (i ? "," : "") + detail::json_quote(r.layers[i]);
  o += "],\"groups\":[";
  for (size_t g = 0; g < r.groups.size(); ++g) {
    const group_result &x = r.groups[g];
    o += (g ? "," : "") + std::string("{\"rank\":") + rank_json(x) +
         ",\"host\":" + (x.host.empty() ? std::string("null") : detail::json_quote(x.host)) +
         ",\"pids\":[";
    for (size_t i = 0; i < x.pids.size(); ++i) o += (i ? "," : "") + pid_json(x.pids[i]);
    o += "],\"start_ns\":" + num(x.start) + ",\"span_ns\":" + num(x.span) +
         ",\"steps\":" + num(x.steps);
    named_map(o, "union_ns", r.layers, x.union_ns);
    pair_map(o, "overlap_ns", x.overlap_ns);
    pair_map(o, "unoverlapped_ns", x.unoverlapped_ns);
    named_map(o, "self_ns", r.layers, x.self_ns);
    o += "}";
  }
  o += "],\"steps\":{\"source\":" +
       (r.step_source.empty() ? std::string("null") : detail::json_quote(r.step_source)) +
       ",\"count\":" + num(r.steps.size()) + ",\"p50_ns\":" + num(r.step_p50) +
       ",\"p99_ns\":" + num(r.step_p99) + ",\"total_ns\":" + num(r.step_total) + ",\"bound_by\":{";
  for (size_t k = 0; k < k_nbound; ++k)
    o += std::string(k ? "," : "") + "\"" + k_bound_classes[k] + "_ns\":" + num(r.bound_total[k]);
  o += ",\"other_ns\":" + num(r.bound_total[k_nbound]) + "},\"items\":[";
  std::vector<std::string> ranks(r.groups.size());
  for (size_t g = 0; g < r.groups.size(); ++g) ranks[g] = rank_json(r.groups[g]);
  bool whole = true;
  if (step_items)
    whole = r.steps.for_each([&](const step_result &s, size_t i) {
      if (i) o += ',';
      append_step(o, s, ranks[s.group]);
      if (o.size() >= (1u << 20)) sink(o);
    });
  o += "]}";
  whole = stragglers_json(o, r, sink) && whole;
  collectives_json(o, r);
  io_json(o, r, sink);
  o += ",\"findings\":[";
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const finding &f = r.findings[i];
    char v[40];
    std::snprintf(v, sizeof v, "%.6g", f.value);
    o += (i ? "," : "") + std::string("{\"rule\":") + detail::json_quote(f.rule) +
         ",\"severity\":" + detail::json_quote(f.severity) +
         ",\"metric\":" + detail::json_quote(f.metric) + ",\"value\":" + v +
         ",\"evidence\":" + f.evidence + ",\"suggestion\":" + detail::json_quote(f.suggestion) +
         "}";
  }
  o += "]}\n";
  sink(o);
  return whole;
}

}  // namespace dftrace::analysis
