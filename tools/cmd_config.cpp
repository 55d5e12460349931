// cmd_config.cpp: `dftrace config`: the effective configuration for this environment and
// where each value comes from (docs/configuration.md); problems in it are reported as the library
// would.
#include <cstdio>
#include <string>

#include "args.hpp"
#include "commands.hpp"
#include "config/config.hpp"

namespace dftrace::tools {

int cmd_config(const args_t &a) {
  if (a.has("--keys")) {  // every key, its default and its environment names
    std::printf("%-28s %-18s %-34s %s\n", "key", "default", "environment", "DFTracer name");
    for (const auto &k : dftrace::detail::config_keys())
      std::printf("%-28s %-18s %-34s %s\n", k.key, *k.default_text ? k.default_text : "\"\"", k.env,
                  k.dftracer_env ? k.dftracer_env : "-");
    return 0;
  }
  // Warnings about the file or the environment go to stderr, exactly as the library prints them.
  const dftrace::detail::config c = dftrace::detail::load_config(nullptr);
  std::fputs(dftrace::detail::describe(c).c_str(), stdout);
  return 0;
}

}  // namespace dftrace::tools
