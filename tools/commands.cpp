// commands.cpp: the subcommands' table, and the option parser and help made from it.
#include "commands.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace dftrace::tools {

namespace {

const option_spec k_output{"-o", "--output", "OUT", "the output file"};
// analyze's and diff's: how a run is read.
const option_spec k_steps{"--steps", nullptr, "NAME", "the event that marks a step"};
const option_spec k_layers{"--layers", nullptr, "FILE", "the layers' definitions"};

// cat, merge, split and stat: the trace's lines, read, joined, cut and counted.
void add_line_commands(std::vector<command_spec> &t) {
  t.push_back({"cat",
               {{"cat FILES... [--cat C] [--name N] [--pid P] [--from T] [--to T]",
                 "print the JSON lines that match (T: epoch microseconds); members outside the\n"
                 "time window are skipped without inflating them"},
                {"cat --graph FILES...",
                 "the model graphs dftrace.torch.model_graph recorded, as tables (a module "
                 "torch.fx\ncould not trace is a leaf, with its message; its submodules' graphs "
                 "follow)"}},
               {{"--cat", nullptr, "C", "only events of category C"},
                {"--name", nullptr, "N", "only events named N"},
                {"--pid", nullptr, "P", "only events of process P"},
                {"--from", nullptr, "T", "only events that end at or after T"},
                {"--to", nullptr, "T", "only events that start at or before T"},
                {"--graph", nullptr, nullptr, "the model graphs, as tables"}},
               cmd_cat});
  t.push_back({"merge",
               {{"merge FILES|DIRS... -o OUT.pfw.gz [--no-clock-align]",
                 "one trace ordered by ts; metadata de-duplicated; ids kept unique"}},
               {k_output,
                {"--no-clock-align", nullptr, nullptr,
                 "keep each input's ts as written (no PR clock_offset_ns added)"}},
               cmd_merge});
  t.push_back({"split",
               {{"split FILE -o DIR [--size 64MiB] [--by size|pid|time]",
                 "stand-alone pieces, each with the definitions and names it uses"}},
               {{"-o", "--output", "DIR", "the directory of the pieces"},
                {"--size", nullptr, "SIZE",
                 "event text per piece (K, KiB, M, MiB, G, GiB: 1024s; kB, MB, GB: 1000s)"},
                {"--by", nullptr, "HOW", "size (file order), pid (a piece per process) or time"}},
               cmd_split});
  t.push_back(
      {"stat",
       {{"stat FILES... [--json] [--fast]",
         "counts and durations per category/name, pid and thread (--fast: DT fields only)"}},
       {{"--json", nullptr, nullptr, "the figures as one JSON document"},
        {"--fast", nullptr, nullptr, "line counts and times from the DT fields only"}},
       cmd_stat});
}

// analyze, diff, validate and convert: what the trace says, whether it holds, other forms.
void add_analysis_commands(std::vector<command_spec> &t) {
  t.push_back(
      {"analyze",
       {{"analyze TRACES... [--json] [--steps NAME] [--layers FILE] [--rules FILE] "
         "[--allow-damaged]\n"
         "        [--scheduler ADDR]",
         "what bound the run, exact to the ns: per rank (and the processes it started) the\n"
         "union of each layer's time, overlaps, time not hidden by compute, self time; steps\n"
         "split over compute, comm, io, data and other; stragglers and imbalance; the I/O\n"
         "characterisation (Darshan's); findings from rules (--rules FILE adds); exit\n"
         "status 2 when part of the input could not be read (unless --allow-damaged);\n"
         "--scheduler ADDR --json: the same document computed on a Dask cluster (Python's\n"
         "distributed)"}},
       {{"--json", nullptr, nullptr, "the analysis as one JSON document"},
        k_steps,
        k_layers,
        {"--rules", nullptr, "FILE", "rules that change or extend the built-in findings"},
        {"--allow-damaged", nullptr, nullptr,
         "exit status 0 even when part of the input is damaged"},
        {"--scheduler", nullptr, "ADDR",
         "a Dask scheduler (tcp://HOST:8786): analyse there, through dftrace.analyze"}},
       cmd_analyze});
  t.push_back(
      {"diff",
       {{"diff BASE NEW [--json] [--fail-if 'METRIC OP VALUE']... [--steps NAME] [--layers FILE]\n"
         "     [--allow-damaged] [--base-list FILE] [--new-list FILE]",
         "two runs (each a trace, a directory or a comma-separated list; a path that exists is\n"
         "taken whole) compared: steps, bound_by shares, I/O bytes and bandwidth, calls and\n"
         "times per name; exit status 1 when a gate holds, e.g. --fail-if 'step.p50 > +5%'"}},
       {{"--json", nullptr, nullptr, "the comparison as one JSON document"},
        {"--fail-if", nullptr, "GATE", "exit status 1 when the gate holds (repeatable)"},
        k_steps,
        k_layers,
        {"--allow-damaged", nullptr, nullptr, "compare even when part of the input is damaged"},
        {"--base-list", nullptr, "FILE", "BASE's inputs, each ended by a NUL byte (no BASE)"},
        {"--new-list", nullptr, "FILE", "NEW's inputs, each ended by a NUL byte (no NEW)"}},
       cmd_diff});
  t.push_back({"validate",
               {{"validate FILES... [--max-findings N] [--quiet]",
                 "line-numbered findings; exit status 1 when there are errors"}},
               {{"--max-findings", nullptr, "N", "findings printed per kind and file (20)"},
                {"--quiet", nullptr, nullptr, "no findings, only the summary"}},
               cmd_validate});
  t.push_back(
      {"convert",
       {{"convert FILE --to perfetto -o OUT.json[.gz] [--keep-args]",
         "Chrome JSON for Perfetto, chrome://tracing and speedscope: times relative to the\n"
         "first event, exact to the ns; 64-bit integers as strings; parents before children;\n"
         "--keep-args keeps the bookkeeping arguments (level, p_idx, hhash)"},
        {"convert FILES --to dftracer-2.0.2|dftracer-2-typed|dftracer -o OUT.pfw[.gz]",
         "the trace in DFTracer 2.x's dialect, or back in this one; every event kept"}},
       {{"--to", nullptr, "FORMAT", "perfetto, dftracer-2.0.2, dftracer-2-typed or dftracer"},
        k_output,
        {"--keep-args", nullptr, nullptr, "keep the bookkeeping arguments (level, p_idx, hhash)"}},
       cmd_convert});
}

// report, watch, run, trigger and config: dftrace around a running program.
void add_program_commands(std::vector<command_spec> &t) {
  t.push_back({"report",
               {{"report TRACES... -o report.html [--title T] [--compare BASE]",
                 "one self-contained HTML file of plots and tables (Python: pandas, matplotlib),\n"
                 "with dftrace analyze's findings, overlap, steps, stragglers and I/O; --compare\n"
                 "BASE adds dftrace diff BASE TRACES"}},
               {},
               nullptr,
               cmd_report});
  t.push_back(
      {"watch",
       {{"watch [--interval S] [--prefix P|--out DIR] [--deep] SCRIPT.py [ARGS...]", nullptr},
        {"watch [options] -- python3 SCRIPT [ARGS...]",
         "run a Python script traced (as run --torch) with a live dashboard in the terminal"}},
       {},
       nullptr,
       cmd_watch});
  t.push_back(
      {"run",
       {{"run [--prefix P|--out DIR] [--data-dirs D] [--no-io] [--mpi] [--torch] [--deep]\n"
         "    [--summary] [--attach] -- CMD [ARGS...]",
         nullptr},
        {"run [options] SCRIPT.py [ARGS...]",
         "run CMD traced, with its POSIX and STDIO calls (libdftrace_io), and every process\n"
         "it starts; --torch (implied by SCRIPT.py): PyTorch's steps, forward, backward,\n"
         "optimizer, data loading, copies and checkpoints too; --deep: and every layer"}},
       {{"--prefix", nullptr, "P", "trace files are P-<exec>-<pid>-app.pfw.gz (DFTRACE_LOG_FILE)"},
        {"--out", nullptr, "DIR",
         "trace files go to DIR (made if missing): DIR/trace-<exec>-<pid>-app.pfw.gz"},
        {"--data-dirs", nullptr, "D",
         "trace I/O only under these directories, D1:D2 or all (DFTRACE_IO_DATA_DIR)"},
        {"--no-io", nullptr, nullptr, "do not preload libdftrace_io"},
        {"--mpi", nullptr, nullptr,
         "also preload libdftrace_mpi: MPI communication and MPI-IO (MPIIO) in\nthe ranks of "
         "an mpirun CMD that was not linked with it"},
        {"--torch", nullptr, nullptr,
         "trace PyTorch automatically (DFTRACE_TORCH_AUTO=1, dftrace/_autostart on\n"
         "PYTHONPATH): steps, forward, backward, optimizer, data loading down to\neach sample "
         "in the workers, device copies, checkpoints; implies --summary"},
        {"--attach", nullptr, nullptr,
         "start not tracing, waiting for dftrace attach PID (DFTRACE_ATTACH=1)"},
        {"--deep", nullptr, nullptr,
         "--torch, and every model's layers with their memory (DFTRACE_TORCH_DEEP)"},
        {"--summary", nullptr, nullptr,
         "when CMD ends, print a short summary of its trace on stderr (steps, step\ntime, time "
         "per category, data-loader wait, the trace's path)"}},
       cmd_run,
       nullptr,
       true,
       "SCRIPT.py runs with Python (DFTRACE_PYTHON, else /usr/bin/python3), as with --torch.\n"
       "CMD's exit status is run's; a signal that ended CMD ends run the same way."});
  t.push_back({"trigger",
               {{"trigger PID... | --all DIR",
                 "the flight recorder's trigger (output.mode: ring) in running processes of "
                 "this\nuser, by the signal their trace's header names; --all: every process "
                 "writing a\ntrace in DIR"}},
               {{"--all", nullptr, "DIR", "every process writing a trace in DIR"}},
               cmd_trigger});
  t.push_back(
      {"attach",
       {{"attach PID... | --all DIR [--for T | --steps N] [--level L]",
         "tracing for a window in running processes of this user that wait for it\n"
         "(DFTRACE_ATTACH=1), then back to what they did; --all: every such process writing\n"
         "its trace in DIR"}},
       {{"--all", nullptr, "DIR", "every waiting process writing its trace in DIR"},
        {"--for", nullptr, "T", "the window's length (30s by default; 500ms, 2m)"},
        {"--steps", nullptr, "N", "the window: the next N steps (dftrace_step)"},
        {"--level", nullptr, "L",
         "what is traced: full (default), io (I/O calls), torch (AI tree)"}},
       cmd_attach});
  t.push_back({"config",
               {{"config [--keys]",
                 "the effective configuration (defaults < DFTRACE_CONFIG file < environment) and\n"
                 "where each value comes from; --keys: every key, its default and variables"}},
               {{"--keys", nullptr, nullptr, "every key, its default and its variables"}},
               cmd_config});
}

std::vector<command_spec> make_table() {
  std::vector<command_spec> t;
  add_line_commands(t);
  add_analysis_commands(t);
  add_program_commands(t);
  return t;
}

// Each line of text, the first after `indent`, the others after `more` (or `indent`).
void indented(std::string *out, const char *text, const char *indent, const char *more = nullptr) {
  const char *p = text;
  for (;;) {
    const char *nl = std::strchr(p, '\n');
    *out += p == text || !more ? indent : more;
    out->append(p, nl ? static_cast<size_t>(nl - p) : std::strlen(p));
    *out += '\n';
    if (!nl) return;
    p = nl + 1;
  }
}

const option_spec *find_option(const command_spec &c, const std::string &s) {
  for (const auto &o : c.options)
    if (s == o.name || (o.alias && s == o.alias)) return &o;
  return nullptr;
}

}  // namespace

const std::vector<command_spec> &commands() {
  static const std::vector<command_spec> table = make_table();
  return table;
}

const command_spec *find_command(std::string_view name) {
  for (const auto &c : commands())
    if (name == c.name) return &c;
  return nullptr;
}

std::string overview() {
  std::string out = "usage: dftrace <command> [options]\n\n";
  for (const auto &c : commands())
    for (const auto &f : c.forms) {
      indented(&out, f.synopsis, "  ");
      if (f.about) indented(&out, f.about, "      ");
    }
  out +=
      "\nEnvironment: DFTRACE_TOOL_THREADS (worker threads), DFTRACE_NO_PROGRESS (no bar).\n"
      "dftrace COMMAND --help: the command's options.\n";
  return out;
}

std::string command_help(const command_spec &c) {
  std::string out;
  for (size_t i = 0; i < c.forms.size(); ++i)
    indented(&out, c.forms[i].synopsis, i ? "       dftrace " : "usage: dftrace ", "          ");
  for (const auto &f : c.forms)
    if (f.about) indented(&out, f.about, "  ");
  if (c.notes) indented(&out, c.notes, "  ");
  if (c.options.empty()) return out;
  out += "options:\n";
  for (const auto &o : c.options) {
    std::string head = std::string("  ") + o.name;
    if (o.alias) head += std::string(", ") + o.alias;
    if (o.value) head += std::string(" ") + o.value;
    head.resize(std::max<size_t>(head.size() + 2, 24), ' ');
    const std::string pad(head.size(), ' ');
    std::string body;
    indented(&body, o.help, "");
    size_t start = 0;
    for (size_t nl; (nl = body.find('\n', start)) != std::string::npos; start = nl + 1)
      out += (start ? pad : head) + body.substr(start, nl - start) + "\n";
  }
  return out;
}

parse_result parse_args(const command_spec &c, int argc, char **argv, int first, args_t *out) {
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    if (out->after_dashdash || s.size() < 2 || s[0] != '-' ||
        (c.options_first && !out->positional.empty())) {
      out->positional.push_back(s);
      continue;
    }
    if (s == "--") {
      out->after_dashdash = true;
      continue;
    }
    if (s == "--help" || s == "-h") return parse_result::help;
    std::string value;
    bool inline_value = false;
    const size_t eq = s.find('=');
    if (s.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = s.substr(eq + 1);
      s = s.substr(0, eq);
      inline_value = true;
    }
    const option_spec *o = find_option(c, s);
    if (!o || (!o->value && inline_value)) {
      error_line("unknown option " + s + " (see dftrace " + c.name + " --help)");
      return parse_result::error;
    }
    if (o->value && !inline_value) {
      if (i + 1 >= argc) {
        error_line("option " + s + " needs a value");
        return parse_result::error;
      }
      value = argv[++i];
    }
    out->options.emplace_back(o->name, value);
  }
  return parse_result::ok;
}

}  // namespace dftrace::tools
