// yaml_direct.cpp: the YAML parser linked in (the tools and tests, which link the core
// statically); libdftrace opens it as a component instead (yaml_component.cpp).
#include "config/yaml_tree.hpp"

extern "C" char *dftrace_yaml_parse(const char *text, size_t len, size_t *out_len);

namespace dftrace::detail {

dftrace_yaml_parse_fn yaml_parser(std::string *) { return &dftrace_yaml_parse; }

}  // namespace dftrace::detail
