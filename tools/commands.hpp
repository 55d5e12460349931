// commands.hpp: the table of the dftrace command's subcommands. Each entry holds the
// subcommand's synopsis, description and options; the option parser, `dftrace --help` and
// `dftrace CMD --help` are all made from it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "args.hpp"

namespace dftrace::tools {

struct option_spec {
  const char *name;   // "--cat", "-o"
  const char *alias;  // another spelling ("--output"), or nullptr
  const char *value;  // the value's name in the help ("C"), or nullptr for a flag
  const char *help;   // one line
};

struct command_spec {
  const char *name;
  // The forms of the command line, each a synopsis without the leading "dftrace " and what
  // it does (nullptr: said by the next form's); lines separated by '\n'. Every option in
  // `options` appears in a synopsis, and nothing else that looks like one.
  struct form {
    const char *synopsis;
    const char *about;
  };
  std::vector<form> forms;
  std::vector<option_spec> options;
  int (*run)(const args_t &) = nullptr;  // called with the parsed arguments
  int (*exec)(int, char **) = nullptr;   // or handed argv as it is (its own parser: Python)
  bool options_first = false;            // options end at the first operand (run's command)
  const char *notes = nullptr;           // said after the description in CMD --help
};

// Every subcommand, in the order of `dftrace --help`.
const std::vector<command_spec> &commands();
const command_spec *find_command(std::string_view name);

// `dftrace --help`: every command's synopsis and description.
std::string overview();
// `dftrace CMD --help`: the synopsis, the description and one line per option.
std::string command_help(const command_spec &c);

enum class parse_result { ok, help, error };
// Parses argv[first..] by the command's options: "--opt value", "--opt=value", flags, "--"
// (operands only from there on), and --help / -h. On an unknown option or a missing value,
// one line on stderr and error.
parse_result parse_args(const command_spec &c, int argc, char **argv, int first, args_t *out);

// The subcommands.
int cmd_cat(const args_t &a);
int cmd_stat(const args_t &a);
int cmd_analyze(const args_t &a);  // cmd_analyze.cpp, on src/analysis
int cmd_diff(const args_t &a);     // cmd_diff.cpp, on src/analysis
int cmd_validate(const args_t &a);
int cmd_merge(const args_t &a);
int cmd_split(const args_t &a);
int cmd_convert(const args_t &a);
int cmd_config(const args_t &a);
int cmd_attach(const args_t &a);        // full tracing for a window in running processes
int cmd_trigger(const args_t &a);       // the flight recorder's trigger in running processes
int cmd_run(const args_t &a);           // runs its operands (the command after --) traced
int cmd_report(int argc, char **argv);  // runs the Python report (dftrace.report)
int cmd_watch(int argc, char **argv);   // runs the Python dashboard (dftrace.watch)
// cmd_python.cpp: replaces this process with `python -m dftrace.MODULE ARGS...` (Python's
// dftrace beside this command); returns only on failure, after one error line (`cmd: ...`).
int run_module(const char *cmd, const char *module, const std::vector<std::string> &args);

}  // namespace dftrace::tools
