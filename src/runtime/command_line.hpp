// command_line.hpp: the command line as a trace records it (output.cmdline, output.redact).
#pragma once

#include <string>
#include <vector>

namespace dftrace::detail {

// This process's arguments, from /proc/self/cmdline (empty when it can not be read).
std::vector<std::string> process_arguments();

// Whether `key` (an option or variable name: "--db-password", "API_KEY") names a secret under
// `redact`, a comma-separated list of names ("password,token"; "none" or "": nothing). Case,
// leading dashes and '_' against '-' do not matter; a name matches the whole key or its last
// parts ("password" matches "--db-password", "token" matches "GITHUB_TOKEN", but not
// "--token-file").
bool is_secret_key(const std::string &key, const std::string &redact);

// The command line to record, its arguments joined by ';' (DFTracer's form): with mode "full"
// every argument, with "exec" only the program (argv[0]), with "none" nothing (""). Under
// `redact` the value of a secret is replaced by "***": "--password=x", "--password x" (the
// next argument), "PASSWORD=x", and the password of a URL ("https://user:x@host").
std::string recorded_command_line(const std::vector<std::string> &argv, const std::string &mode,
                                  const std::string &redact);

}  // namespace dftrace::detail
