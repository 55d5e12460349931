// args.hpp: a subcommand's parsed arguments, the values they carry (sizes, counts), and the
// one-line error messages every command writes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dftrace::tools {

// The arguments after the subcommand, with the helpers each command uses to read them.
struct args_t {
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> options;  // "--name" -> value ("" = flag)
  bool after_dashdash = false;                               // the operands came after "--"
  bool has(std::string_view name) const;
  std::string get(std::string_view name, const std::string &def = "") const;
  std::vector<std::string> get_all(std::string_view name) const;  // repeated or comma lists
  // -o / --output; when absent, one "CMD: -o WHAT is required" line and "".
  std::string output(const char *cmd, const char *what) const;
};

// One "dftrace: ..." line on stderr.
void error_line(const std::string &msg);

// A size of at least one byte, read by the library's parser (config/config.hpp: K, KiB and
// the like count in 1024s, kB, MB, GB in 1000s): 64MiB, 1G, 500k, 1048576.
bool parse_size(const std::string &s, uint64_t *out);
// A count of at least 1, digits only.
bool parse_count(const std::string &s, uint64_t *out);

}  // namespace dftrace::tools
