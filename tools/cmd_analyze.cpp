// cmd_analyze.cpp: dftrace analyze: what bound a run (layers, overlap, steps, stragglers),
// exact, from the engine in src/analysis; a readable summary or JSON; with --scheduler, the
// JSON computed on a Dask cluster by the Python face (dftrace.analyze, the same engine).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>

#include "analysis/analyze.hpp"
#include "analysis/findings.hpp"
#include "analysis/inputs.hpp"
#include "analysis/result_json.hpp"
#include "analysis_run.hpp"
#include "args.hpp"
#include "commands.hpp"
#include "inputs.hpp"

namespace dftrace::tools {

namespace {

using namespace dftrace::analysis;

std::string ms(uint64_t ns) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(ns) / 1e6);
  return buf;
}

std::string pct(uint64_t part, uint64_t whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%5.1f%%",
                whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
  return buf;
}

void text_inputs(std::string &o, const input_report &in, const analysis_result &r, size_t procs) {
  const line_counts &c = in.counts;
  o += std::to_string(in.files.size()) + " file(s), " + std::to_string(procs) + " process(es), " +
       std::to_string(r.ranks) + " rank(s), " + std::to_string(c.objects) + " events (" +
       std::to_string(c.complete) + " complete, " + std::to_string(c.aggregated) +
       " aggregated records, not placed in time)\n";
  for (const auto &d : in.damaged) o += "NOT READ: " + d.path + ": " + d.what + "\n";
  for (const auto &p : r.process_problems) o += "NOT READ: " + p + "\n";
  for (const auto &w : in.warnings) o += "warning: " + w.path + ": " + w.what + "\n";
  for (const auto &w : r.process_warnings) o += "warning: " + w + "\n";
}

void text_groups(std::string &o, const analysis_result &r) {
  o += "\ngroups (a rank and the processes it started); time in ms, share of the span\n";
  for (const group_result &g : r.groups) {
    o += group_label(g) + " (" + std::to_string(g.pids.size()) + " process(es)): span " +
         ms(g.span) + " ms\n";
    for (size_t l = 0; l < r.layers.size(); ++l) {
      if (!g.union_ns[l]) continue;
      char buf[160];
      std::snprintf(buf, sizeof buf, "  %-10s %12s ms %s   self %12s ms", r.layers[l].c_str(),
                    ms(g.union_ns[l]).c_str(), pct(g.union_ns[l], g.span).c_str(),
                    ms(g.self_ns[l]).c_str());
      o += buf;
      for (const auto &u : g.unoverlapped_ns)
        if (u.first == r.layers[l]) o += "   not hidden by compute " + ms(u.second) + " ms";
      o += "\n";
    }
    for (const auto &p : g.overlap_ns)
      if (p.second) o += "  overlap " + p.first + ": " + ms(p.second) + " ms\n";
  }
}

void text_steps(std::string &o, const analysis_result &r) {
  if (r.steps.empty()) {
    o += "\nno steps (no step events, no .iter events; --steps NAME names them)\n";
    return;
  }
  o += "\nsteps (" + r.step_source + "): " + std::to_string(r.steps.size()) + ", p50 " +
       ms(r.step_p50) + " ms, p99 " + ms(r.step_p99) + " ms\n  bound by:";
  for (size_t k = 0; k < k_nbound; ++k)
    o += std::string(" ") + k_bound_classes[k] + (k ? " not hidden " : " ") +
         pct(r.bound_total[k], r.step_total) + ",";
  o += " other " + pct(r.bound_total[k_nbound], r.step_total) + "\n";
  if (r.steps_compared) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "imbalance (slowest over median, %zu steps compared): max %.3f, mean %.3f, p50 "
                  "%.3f\n",
                  r.steps_compared, r.imbalance_max, r.imbalance_mean, r.imbalance_p50);
    o += buf;
  }
  if (!r.stragglers.empty())
    o += "stragglers (over 1.25 x the step's median and 1 ms more): " +
         std::to_string(r.stragglers.size()) + "\n";
  for (const straggler &s : r.stragglers.head()) {  // the first 10
    o += "  " + group_label(r.groups[s.group]) + " step " + s.step + ": " + ms(s.dur) +
         " ms, median " + ms(s.median) + " ms\n";
  }
}

void text_collectives(std::string &o, const analysis_result &r) {
  const coll_summary &c = r.collectives;
  if (c.ops.empty()) return;
  o += "\ncollectives: " + std::to_string(c.instances) + " matched, " + ms(c.wait_ns) +
       " ms waiting for the last rank (" + pct(c.wait_ns, c.blocked_ns) + " of their time)\n";
  for (const coll_op &x : c.ops) {
    o += "  " + x.op + (x.has_size ? " (" + std::to_string(x.comm_size) + " ranks)" : "") +
         (x.group.empty() ? "" : " group " + x.group) + ": " + std::to_string(x.instances) +
         " matched, wait " + ms(x.wait_ns) + " ms, spread p50 " + ms(x.spread_p50) + " ms p99 " +
         ms(x.spread_p99) + " ms";
    if (x.has_last)
      o += ", last most often: " + group_label(r.groups[x.last_group]) + " (" +
           std::to_string(x.last_count) + ")";
    if (!x.note.empty()) o += "; " + x.note;
    o += "\n";
  }
}

std::string mb(uint64_t bytes) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(bytes) / 1e6);
  return buf;
}

// What in-kernel copies moved that no file's figures hold: never left out silently.
void text_copies(std::string &o, const copy_figures &c) {
  if (c.unattributed_calls)
    o += "  copies not attributed: " + mb(c.unattributed_bytes) + " MB in " +
         std::to_string(c.unattributed_calls) +
         " in-kernel copies whose trace names neither end (counted as neither read nor written)\n";
  if (c.no_file[0] || c.no_file[1])
    o += "  copies with one end not a traced file (a pipe, a socket, an untraced file): " +
         mb(c.no_file[1]) + " MB read into none, " + mb(c.no_file[0]) + " MB written from none\n";
}

void text_io(std::string &o, const analysis_result &r) {
  const io_summary &s = r.io;
  if (!s.ops[0] && !s.ops[1] && !s.meta_ops) return;
  o += "\nI/O: read " + mb(s.bytes[0]) + " MB in " + std::to_string(s.ops[0]) + " calls, wrote " +
       mb(s.bytes[1]) + " MB in " + std::to_string(s.ops[1]) + " calls; time in data calls " +
       ms(s.data_ns) + " ms, in metadata calls " + ms(s.meta_ns) + " ms (" +
       std::to_string(s.meta_ops) + ")\n";
  text_copies(o, s.copies);
  for (int k = 0; k < 2; ++k) {
    o += k ? "  write sizes:" : "  read sizes: ";
    for (size_t i = 0; i < k_size_buckets; ++i)
      if (s.hist[k][i])
        o += std::string(" ") + k_size_bucket_names[i] + ":" + std::to_string(s.hist[k][i]);
    o += "\n";
  }
  const size_t shown = s.files.size() < 10 ? s.files.size() : 10;
  if (shown)
    o += "  files (" + std::to_string(shown) + " of " + std::to_string(s.files.size()) +
         ", most bytes first): read MB, write MB, sequential reads/writes, ranks\n";
  for (size_t i = 0; i < shown; ++i) {
    const io_file_summary &f = s.files[i];
    o += "  " + mb(f.fig.bytes[0]) + " " + mb(f.fig.bytes[1]) + " " + std::to_string(f.fig.seq[0]) +
         "/" + std::to_string(f.fig.seq[1]) + " " + std::to_string(f.groups.size()) +
         (f.groups.size() > 1 ? " shared " : " ") + f.name + "\n";
  }
}

void text_findings(std::string &o, const analysis_result &r) {
  if (r.findings.empty()) return;
  o += "\nfindings (rules: docs/analysis.md; --rules FILE adds or changes them)\n";
  for (const finding &f : r.findings) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", f.value);
    o += "  " + f.severity + " " + f.rule + ": " + f.metric + " = " + buf + "\n    " +
         f.suggestion + "\n";
  }
}

// --scheduler ADDR: the same document computed on a Dask cluster by dftrace.analyze (Python),
// from the files expanded here.
int analyze_on_cluster(const args_t &a, const std::vector<std::string> &files) {
  if (!a.has("--json")) {
    error_line("analyze: --scheduler prints the JSON document only: add --json");
    return 2;
  }
  std::vector<std::string> args = {"--scheduler", a.get("--scheduler"), "--json"};
  for (const char *opt : {"--steps", "--layers", "--rules"})
    if (a.has(opt)) args.insert(args.end(), {opt, a.get(opt)});
  if (a.has("--allow-damaged")) args.push_back("--allow-damaged");
  args.push_back("--");
  args.insert(args.end(), files.begin(), files.end());
  return run_module("analyze", "_analyze_cli", args);
}

}  // namespace

int cmd_analyze(const args_t &a) {
  bool ok = true;
  std::vector<std::pair<std::string, std::string>> again;  // files named twice: in the report
  const std::vector<std::string> files = input_files(a, "analyze", &ok, &again);
  if (files.empty()) return 2;
  if (a.has("--scheduler")) {
    for (const auto &d : again)
      error_line("warning: " + d.first + ": " + analysis::given_again(d.second));
    return analyze_on_cluster(a, files);
  }
  layer_table table;
  if (!analysis_table(a, "analyze", &table)) return 2;
  std::vector<rule> rules;
  std::string why;
  if (!parse_rules(k_default_rules, "the built-in rules", &rules, &why) ||
      (a.has("--rules") && !load_rules_file(a.get("--rules"), &rules, &why))) {
    error_line("analyze: --rules " + why);
    return 2;
  }
  analysis_run run;
  run_analysis(files, table, "analyze", &run);
  for (const auto &d : again) run.in.warnings.push_back({d.first, analysis::given_again(d.second)});
  std::stable_sort(run.in.warnings.begin(), run.in.warnings.end(),
                   [](const analysis::input_problem &x, const analysis::input_problem &y) {
                     return x.path < y.path;
                   });
  run.r.findings = evaluate_rules(rules, run.r);
  const analysis_result &r = run.r;
  const input_report &in = run.in;
  const size_t procs = run.processes;
  std::string out;
  bool whole = true;  // the document's temporary files read back whole
  if (a.has("--json")) {
    whole = result_json(in, r, procs, [](std::string &part) {
      fwrite(part.data(), 1, part.size(), stdout);
      part.clear();
    });
  } else {
    text_inputs(out, in, r, procs);
    text_groups(out, r);
    text_steps(out, r);
    text_collectives(out, r);
    text_io(out, r);
    text_findings(out, r);
  }
  fwrite(out.data(), 1, out.size(), stdout);
  fflush(stdout);
  if (!whole) {  // the document already said its input was read: it must not pass for whole
    error_line(
        "analyze: the analysis's temporary file could not be read back while the document was "
        "written: its step items or stragglers are incomplete");
    return 2;
  }
  if (run.damaged() && !a.has("--allow-damaged")) {
    error_line(
        "analyze: part of the input could not be read (listed above); --allow-damaged "
        "accepts the results of what was read");
    return 2;
  }
  return 0;
}

}  // namespace dftrace::tools
