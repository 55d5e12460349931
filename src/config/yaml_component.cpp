// yaml_component.cpp: libdftrace's YAML parser: libdftrace_yaml.so, opened beside libdftrace
// the first time a YAML file is read (so a process that reads none never loads yaml-cpp).
#include <mutex>

#include "base/component.hpp"
#include "config/yaml_tree.hpp"

namespace dftrace::detail {

dftrace_yaml_parse_fn yaml_parser(std::string *why) {
  static std::once_flag once;
  static dftrace_yaml_parse_fn parse = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    if (void *lib = open_component("libdftrace_yaml.so", &failure))
      parse = reinterpret_cast<dftrace_yaml_parse_fn>(
          component_symbol(lib, "dftrace_yaml_parse", &failure));
  });
  if (!parse) *why = failure;
  return parse;
}

}  // namespace dftrace::detail
