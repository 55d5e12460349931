// fuzz_config.cpp: the configuration loader: a YAML file (DFTRACE_CONFIG) and the
// environment layer over it. Input: YAML text, then optionally a NUL byte and lines
// "NAME=VALUE" whose NAME is one of the configuration's environment variables (DFTRACE_* or
// DFTracer's names; other names are ignored). The loader must never throw or crash, whatever
// the file and the variables hold, and describe() must work on what it returns.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

using namespace dftrace::detail;

namespace {

const std::set<std::string> &known_names() {
  static const std::set<std::string> names = [] {
    std::set<std::string> s;
    for (const auto &k : config_keys()) {
      if (k.env) s.insert(k.env);
      if (k.dftracer_env) s.insert(k.dftracer_env);
    }
    s.erase("DFTRACE_CONFIG");  // the file comes from the input
    s.erase("DFTRACER_CONFIGURATION");
    return s;
  }();
  return names;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view in(reinterpret_cast<const char *>(data), size);
  const size_t nul = in.find('\0');
  const std::string_view yaml = in.substr(0, nul);
  const int fd = memfd_create("fuzz-config", MFD_CLOEXEC);
  if (fd < 0) return 0;
  size_t off = 0;
  while (off < yaml.size()) {
    const ssize_t w = write(fd, yaml.data() + off, yaml.size() - off);
    if (w <= 0) break;
    off += static_cast<size_t>(w);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  setenv("DFTRACE_CONFIG", path.c_str(), 1);
  std::vector<std::string> set_names;
  if (nul != std::string_view::npos) {
    std::string_view rest = in.substr(nul + 1);
    while (!rest.empty()) {
      const size_t nl = rest.find('\n');
      const std::string_view line = rest.substr(0, nl);
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
      const size_t eq = line.find('=');
      if (eq == std::string_view::npos) continue;
      const std::string name(line.substr(0, eq));
      const std::string value(line.substr(eq + 1));
      if (!known_names().count(name) || value.find('\0') != std::string::npos) continue;
      setenv(name.c_str(), value.c_str(), 1);
      set_names.push_back(name);
    }
  }
  const config c = load_config(nullptr);
  const std::string text = describe(c);
  if (text.empty()) abort();
  for (const auto &n : set_names) unsetenv(n.c_str());
  unsetenv("DFTRACE_CONFIG");
  close(fd);
  return 0;
}
