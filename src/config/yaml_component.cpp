// yaml_component.cpp: libdftrace's YAML parser: libdftrace_yaml.so, opened beside libdftrace
// the first time a YAML file is read (so a process that reads none never loads yaml-cpp).
#include "base/component.hpp"
#include "config/yaml_tree.hpp"

namespace dftrace::detail {

dftrace_yaml_parse_fn yaml_parser(std::string *why) {
  static component_entry parse("libdftrace_yaml.so", "dftrace_yaml_parse");
  return reinterpret_cast<dftrace_yaml_parse_fn>(parse.get(why));
}

}  // namespace dftrace::detail
