// main.cpp: the dftrace command: dispatches to its subcommands.
#include <cstdio>
#include <cstring>
#include <string>

#include "common.hpp"

namespace {

const char *k_usage =
    "usage: dftrace <command> [options]\n"
    "\n"
    "  cat FILES... [--cat C] [--name N] [--pid P] [--from T] [--to T]\n"
    "      print the JSON lines that match (T: epoch microseconds); members outside the\n"
    "      time window are skipped without inflating them\n"
    "  cat --graph FILES...\n"
    "      the model graphs dftrace.torch.model_graph recorded, as tables (a module torch.fx\n"
    "      could not trace is a leaf, with its message; its submodules' graphs follow)\n"
    "  merge FILES|DIRS... -o OUT.pfw.gz [--no-clock-align]\n"
    "      one trace ordered by ts; metadata de-duplicated; ids kept unique\n"
    "  split FILE -o DIR [--size 64MiB] [--by size|pid|time]\n"
    "      stand-alone pieces, each with the definitions and names it uses\n"
    "  stat FILES... [--json] [--fast]\n"
    "      counts and durations per category/name, pid and thread (--fast: DT fields only)\n"
    "  analyze TRACES... [--json] [--steps NAME] [--layers FILE] [--rules FILE] [--allow-damaged]\n"
    "      what bound the run, exact to the ns: per rank (and the processes it started) the\n"
    "      union of each layer's time, overlaps, time not hidden by compute, self time; steps\n"
    "      split over compute, comm, io, data and other; stragglers and imbalance; the I/O\n"
    "      characterisation (Darshan's); findings from rules (--rules FILE adds); exit\n"
    "      status 2 when part of the input could not be read (unless --allow-damaged)\n"
    "  diff BASE NEW [--json] [--fail-if 'METRIC OP VALUE']... [--steps NAME] [--layers FILE]\n"
    "      two runs (each a trace, a directory or a comma-separated list) compared: steps,\n"
    "      bound_by shares, I/O bytes and bandwidth, calls and times per name; exit status 1\n"
    "      when a gate holds, e.g. --fail-if 'step.p50 > +5%'\n"
    "  validate FILES... [--max-findings N] [--quiet]\n"
    "      line-numbered findings; exit status 1 when there are errors\n"
    "  convert FILE --to perfetto -o OUT.json[.gz] [--keep-args]\n"
    "      Chrome JSON for Perfetto, chrome://tracing and speedscope: times relative to the\n"
    "      first event, exact to the ns; 64-bit integers as strings; parents before children;\n"
    "      --keep-args keeps the bookkeeping arguments (level, p_idx, hhash)\n"
    "  convert FILES --to dftracer-2.0.2|dftracer-2-typed|dftracer -o OUT.pfw[.gz]\n"
    "      the trace in DFTracer 2.x's dialect, or back in this one; every event kept\n"
    "  report TRACES... -o report.html [--title T]\n"
    "      one self-contained HTML file of plots and tables (Python: pandas, matplotlib)\n"
    "  watch [--interval S] [--prefix P|--out DIR] [--deep] SCRIPT.py [ARGS...]\n"
    "  watch [options] -- python3 SCRIPT [ARGS...]\n"
    "      run a Python script traced (as run --torch) with a live dashboard in the terminal\n"
    "  run [--prefix P|--out DIR] [--data-dirs D] [--no-io] [--torch] [--deep] -- CMD [ARGS...]\n"
    "  run [options] SCRIPT.py [ARGS...]\n"
    "      run CMD traced, with its POSIX and STDIO calls (libdftrace_io), and every process\n"
    "      it starts; --torch (implied by SCRIPT.py): PyTorch's steps, forward, backward,\n"
    "      optimizer, data loading, copies and checkpoints too; --deep: and every layer\n"
    "  trigger PID... | --all DIR\n"
    "      the flight recorder's trigger (output.mode: ring) in running processes of this\n"
    "      user, by the signal their trace's header names; --all: every process writing a\n"
    "      trace in DIR\n"
    "  config [--keys]\n"
    "      the effective configuration (defaults < DFTRACE_CONFIG file < environment) and\n"
    "      where each value comes from; --keys: every key, its default and variables\n"
    "\n"
    "Environment: DFTRACE_TOOL_THREADS (worker threads), DFTRACE_NO_PROGRESS (no bar).\n";

}  // namespace

int main(int argc, char **argv) {
  using namespace dftrace::tools;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    fputs(k_usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  if (cmd == "run") return cmd_run(argc, argv);
  if (cmd == "report") return cmd_report(argc, argv);
  if (cmd == "watch") return cmd_watch(argc, argv);
  args_t a;
  bool parsed = false;
  int (*fn)(const args_t &) = nullptr;
  if (cmd == "cat") {
    parsed =
        parse_args(argc, argv, 2, {"--cat", "--name", "--pid", "--from", "--to"}, {"--graph"}, &a);
    fn = cmd_cat;
  } else if (cmd == "merge") {
    parsed = parse_args(argc, argv, 2, {"-o", "--output"}, {"--no-clock-align"}, &a);
    fn = cmd_merge;
  } else if (cmd == "split") {
    parsed = parse_args(argc, argv, 2, {"-o", "--output", "--size", "--by"}, {}, &a);
    fn = cmd_split;
  } else if (cmd == "stat") {
    parsed = parse_args(argc, argv, 2, {}, {"--json", "--fast"}, &a);
    fn = cmd_stat;
  } else if (cmd == "analyze") {
    parsed = parse_args(argc, argv, 2, {"--steps", "--layers", "--rules"},
                        {"--json", "--allow-damaged"}, &a);
    fn = cmd_analyze;
  } else if (cmd == "diff") {
    parsed = parse_args(argc, argv, 2, {"--steps", "--layers", "--fail-if"},
                        {"--json", "--allow-damaged"}, &a);
    fn = cmd_diff;
  } else if (cmd == "validate") {
    parsed = parse_args(argc, argv, 2, {"--max-findings"}, {"--quiet"}, &a);
    fn = cmd_validate;
  } else if (cmd == "convert") {
    parsed = parse_args(argc, argv, 2, {"-o", "--output", "--to"}, {"--keep-args"}, &a);
    fn = cmd_convert;
  } else if (cmd == "trigger") {
    parsed = parse_args(argc, argv, 2, {"--all"}, {}, &a);
    fn = cmd_trigger;
  } else if (cmd == "config") {
    parsed = parse_args(argc, argv, 2, {}, {"--keys"}, &a);
    fn = cmd_config;
  } else {
    error_line("unknown command '" + cmd + "' (see dftrace --help)");
    return 2;
  }
  if (!parsed) return 2;
  return fn(a);
}
