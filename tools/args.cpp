// args.cpp: reading a subcommand's parsed arguments; error lines.
#include "args.hpp"

#include <cstdio>
#include <cstdlib>

#include "config/config.hpp"
#include "lines.hpp"

namespace dftrace::tools {

bool args_t::has(std::string_view name) const {
  for (auto &o : options)
    if (o.first == name) return true;
  return false;
}

std::string args_t::get(std::string_view name, const std::string &def) const {
  for (auto it = options.rbegin(); it != options.rend(); ++it)
    if (it->first == name) return it->second;
  return def;
}

std::string args_t::output(const char *cmd, const char *what) const {
  const std::string out = has("-o") ? get("-o") : get("--output");
  if (out.empty()) error_line(std::string(cmd) + ": -o " + what + " is required");
  return out;
}

std::vector<std::string> args_t::get_all(std::string_view name) const {
  std::vector<std::string> out;
  for (auto &o : options) {
    if (o.first != name) continue;
    size_t pos = 0;
    while (pos <= o.second.size()) {
      const size_t c = o.second.find(',', pos);
      const size_t end = c == std::string::npos ? o.second.size() : c;
      if (end > pos) out.push_back(o.second.substr(pos, end - pos));
      pos = end + 1;
    }
  }
  return out;
}

void error_line(const std::string &msg) {
  std::string line = "dftrace: " + msg + "\n";
  fwrite(line.data(), 1, line.size(), stderr);
  fflush(stderr);
}

bool parse_size(const std::string &s, uint64_t *out) {
  size_t n = 0;
  if (!detail::parse_size(s, &n) || n == 0) return false;
  *out = n;
  return true;
}

bool parse_count(const std::string &s, uint64_t *out) {
  const std::string t(trim(s));
  if (t.empty() || t.size() > 18 || t.find_first_not_of("0123456789") != std::string::npos)
    return false;
  *out = std::strtoull(t.c_str(), nullptr, 10);
  return *out >= 1;
}

}  // namespace dftrace::tools
