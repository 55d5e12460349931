// cmd_diff.cpp: dftrace diff BASE NEW: two runs analysed and compared (per name, steps,
// bound_by, I/O), with --fail-if gates for CI (exit status 1 when one fails).
#include <sys/stat.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "analysis/diff.hpp"
#include "analysis/diff_json.hpp"
#include "analysis_run.hpp"
#include "args.hpp"
#include "commands.hpp"
#include "inputs.hpp"

namespace dftrace::tools {

namespace {

using namespace dftrace::analysis;

// A run on the command line: a trace, a directory of traces, or a comma-separated list. A path
// that exists is one input, whole, even when its name holds a comma.
std::vector<std::string> run_files(const std::string &arg, bool *ok) {
  std::vector<std::string> parts;
  struct stat st;
  if (::stat(arg.c_str(), &st) == 0) return expand_inputs({arg}, ok);
  size_t at = 0;
  for (;;) {
    const size_t c = arg.find(',', at);
    parts.push_back(arg.substr(at, c == std::string::npos ? std::string::npos : c - at));
    if (c == std::string::npos) break;
    at = c + 1;
  }
  return expand_inputs(parts, ok);
}

std::string number(double x) {
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[48];
  if (x == std::floor(x) && std::fabs(x) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", x);
  else
    std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

void text_out(std::string &o, const std::vector<metric> &ms, const run_summary &base,
              const run_summary &now, const std::vector<std::string> &appeared,
              const std::vector<std::string> &vanished) {
  char buf[320];
  std::snprintf(buf, sizeof buf, "%-34s %18s %18s %18s %9s\n", "metric", "base", "new", "change",
                "%");
  o += buf;
  auto row = [&](const metric &m) {
    std::snprintf(buf, sizeof buf, "%-34s %18s %18s %18s %9s\n", m.key.c_str(),
                  m.in_base ? number(m.base).c_str() : "-", m.in_new ? number(m.now).c_str() : "-",
                  number(m.change()).c_str(),
                  (std::isfinite(m.change_pct()) ? number(std::round(m.change_pct() * 10) / 10)
                                                 : std::string("-"))
                      .c_str());
    o += buf;
  };
  for (const metric &m : ms)
    if (!is_name_metric(m.key)) row(m);
  o += "\nper name (cat/name; times in ns):\n";
  for (const metric &m : ms)
    if (is_name_metric(m.key) && m.in_base && m.in_new && m.base != m.now) row(m);
  (void)base;
  (void)now;
  for (const auto &n : appeared) o += "appeared: " + n + "\n";
  for (const auto &n : vanished) o += "vanished: " + n + "\n";
}

// --base-list / --new-list FILE: the run's inputs, each ended by a NUL byte (as `find -print0`
// writes them), so that any path, commas and newlines included, is passed whole.
bool list_files(const std::string &list, std::vector<std::string> *out, bool *ok) {
  std::ifstream in(list, std::ios::binary);
  if (!in) return false;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> parts;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\0', at);
    if (end == std::string::npos) end = text.size();
    if (end > at) parts.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  *out = expand_inputs(parts, ok);
  return true;
}

// The run named by the option `list` (a file of paths), else by the positional argument arg.
bool load_run(const std::string &arg, const std::string &list, const layer_table &table,
              const char *what, run_summary *out, bool *damaged) {
  bool ok = true;
  std::vector<std::string> files;
  if (list.empty()) {
    files = run_files(arg, &ok);
  } else if (!list_files(list, &files, &ok)) {
    error_line(std::string("diff: ") + what + ": cannot read the list " + list);
    return false;
  }
  if (files.empty()) {
    error_line(std::string("diff: ") + what + ": no trace files in " + arg);
    return false;
  }
  analysis_run run;
  run_analysis(files, table, "diff", &run);
  for (const auto &d : run.in.damaged)
    error_line(std::string("diff: ") + what + ": NOT READ: " + d.path + ": " + d.what);
  for (const auto &p : run.r.process_problems)
    error_line(std::string("diff: ") + what + ": NOT READ: " + p);
  if (!run.names_held.empty())
    error_line(std::string("diff: ") + what + ": NOT READ: " + run.names_held);
  if (!run.names_calls_held.empty())
    error_line(std::string("diff: ") + what + ": NOT READ: " + run.names_calls_held);
  for (const auto &n : run.names_unread)
    error_line(std::string("diff: ") + what + ": NOT READ: the durations of " + n +
               " (spill file): its p50 and p99 are unknown");
  *damaged = *damaged || run.damaged() || !ok;
  out->events = run.events;
  out->names = std::move(run.names);
  out->steps = run.r.steps.size();
  out->r = std::move(run.r);
  out->r.steps.clear();  // one per step of every rank: not compared
  return true;
}

}  // namespace

int cmd_diff(const args_t &a) {
  const std::string base_list = a.get("--base-list"), new_list = a.get("--new-list");
  const size_t wanted = (base_list.empty() ? 1 : 0) + (new_list.empty() ? 1 : 0);
  if (a.positional.size() != wanted) {
    error_line(
        "diff: expected BASE NEW (each a trace, a directory or a comma-separated list, "
        "or --base-list / --new-list FILE in its place)");
    return 2;
  }
  const std::string base_arg = base_list.empty() ? a.positional[0] : "";
  const std::string new_arg = new_list.empty() ? a.positional.back() : "";
  layer_table table;
  if (!analysis_table(a, "diff", &table)) return 2;
  table.set_name_stats(true);
  std::vector<fail_rule> rules;
  for (const std::string &t : a.get_all("--fail-if")) {
    fail_rule r;
    std::string why;
    if (!parse_fail_rule(t, &r, &why)) {
      error_line("diff: --fail-if " + why);
      return 2;
    }
    rules.push_back(r);
  }
  run_summary base, now;
  bool damaged = false;
  if (!load_run(base_arg, base_list, table, "BASE", &base, &damaged) ||
      !load_run(new_arg, new_list, table, "NEW", &now, &damaged))
    return 2;
  const std::vector<metric> ms = compare_runs(base, now);
  std::vector<std::string> appeared, vanished, failed;
  appeared_vanished(base, now, &appeared, &vanished);
  for (const fail_rule &r : rules) {
    const metric *m = nullptr;
    for (const metric &x : ms)
      if (x.key == r.metric) m = &x;
    if (!m) {
      error_line("diff: --fail-if '" + r.text + "': no metric " + r.metric +
                 " in either run (see the metric column)");
      return 2;
    }
    std::string line;
    if (rule_fails(r, *m, &line)) failed.push_back(line);
  }
  std::string out;
  if (a.has("--json")) {
    diff_json(out, ms, base, now, appeared, vanished, failed);
  } else {
    text_out(out, ms, base, now, appeared, vanished);
    for (const auto &f : failed) out += "FAILED: " + f + "\n";
  }
  fwrite(out.data(), 1, out.size(), stdout);
  fflush(stdout);
  for (const auto &f : failed) error_line("diff: failed: " + f);
  if (damaged && !a.has("--allow-damaged")) {
    error_line("diff: part of the input could not be read; --allow-damaged accepts it");
    return 2;
  }
  return failed.empty() ? 0 : 1;
}

}  // namespace dftrace::tools
