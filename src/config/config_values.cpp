// config_values.cpp: the parsers of the values keys take (booleans, sizes, durations, counts,
// log levels, rules on node paths).
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "config/config.hpp"
#include "config/config_table.hpp"

namespace dftrace::detail {

namespace keys {

std::string lower(std::string s) {
  for (auto &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string &s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

bool parse_count(const std::string &text, uint64_t *out) {
  const std::string t = trim(text);
  char *end = nullptr;
  const unsigned long long n = std::strtoull(t.c_str(), &end, 10);
  if (t.empty() || *end || !std::isdigit(static_cast<unsigned char>(t[0])) || n > 1000000000000ull)
    return false;
  *out = n;
  return true;
}

}  // namespace keys

using keys::lower;
using keys::trim;

bool parse_bool(const std::string &text, bool *out) {
  const std::string t = lower(trim(text));
  if (t == "1" || t == "true" || t == "yes" || t == "on") {
    *out = true;
    return true;
  }
  if (t == "0" || t == "false" || t == "no" || t == "off") {
    *out = false;
    return true;
  }
  return false;
}

bool parse_size(const std::string &text, size_t *out) {
  // Digits with an optional fraction, then an optional unit: no sign, exponent or hex, so
  // that "1e3" or "0x10" is reported rather than read as something nobody wrote.
  const std::string t = trim(text);
  size_t i = 0;
  double v = 0;
  bool digits = false;
  auto digit = [&] { return i < t.size() && std::isdigit(static_cast<unsigned char>(t[i])); };
  for (; digit(); ++i) {
    v = v * 10 + (t[i] - '0');
    digits = true;
  }
  if (i < t.size() && t[i] == '.') {
    double scale = 0.1;
    for (++i; digit(); ++i) {
      v += (t[i] - '0') * scale;
      scale /= 10;
      digits = true;
    }
  }
  if (!digits) return false;
  const std::string unit = lower(trim(t.substr(i)));
  // docs/configuration.md: K/KiB, M/MiB, G/GiB count in 1024s; kB, MB, GB in 1000s (SI).
  double mult;
  if (unit.empty() || unit == "b")
    mult = 1;
  else if (unit == "k" || unit == "kib")
    mult = 1024.0;
  else if (unit == "kb")
    mult = 1e3;
  else if (unit == "m" || unit == "mib")
    mult = 1048576.0;
  else if (unit == "mb")
    mult = 1e6;
  else if (unit == "g" || unit == "gib")
    mult = 1073741824.0;
  else if (unit == "gb")
    mult = 1e9;
  else
    return false;
  const double bytes = v * mult;
  if (bytes > 1e15) return false;
  *out = static_cast<size_t>(bytes);
  return true;
}

bool parse_duration(const std::string &text, double *out) {
  const std::string t = trim(text);
  if (t.empty()) return false;
  char *end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str()) return false;
  std::string unit = lower(trim(end));
  if (unit.empty() || unit == "s")
    *out = v;
  else if (unit == "ms")
    *out = v / 1e3;
  else if (unit == "us")
    *out = v / 1e6;
  else if (unit == "m" || unit == "min")
    *out = v * 60;
  else
    return false;
  return std::isfinite(*out);
}

int parse_log_level(const std::string &text) {
  const std::string t = lower(trim(text));
  if (t == "error" || t == "0") return 0;
  if (t == "warn" || t == "warning" || t == "1") return 1;
  if (t == "info" || t == "2") return 2;
  if (t == "debug" || t == "trace" || t == "3") return 3;
  return -1;
}

bool parse_category_rules(const std::string &text, std::vector<std::pair<std::string, bool>> *rules,
                          std::string *error) {
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = trim(item);
    if (item.empty()) continue;
    bool on = true;
    std::string path = item;
    auto colon = item.find(':');
    if (colon == std::string::npos) colon = item.find('=');
    if (colon != std::string::npos) {
      path = trim(item.substr(0, colon));
      if (!parse_bool(item.substr(colon + 1), &on)) {
        *error = "is not a list of [+|-]path or path:bool (bad entry '" + item + "')";
        return false;
      }
    } else if (item[0] == '-' || item[0] == '+') {
      on = item[0] == '+';
      path = trim(item.substr(1));
    }
    if (path.empty()) {
      *error = "has an empty category path";
      return false;
    }
    for (char ch : path) {
      if (std::isspace(static_cast<unsigned char>(ch)) || ch == '"') {
        *error = "has '" + path + "', which is not a category path";
        return false;
      }
    }
    rules->emplace_back(path, on);
  }
  return true;
}

}  // namespace dftrace::detail
