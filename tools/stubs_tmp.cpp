#include "common.hpp"
namespace dftrace::tools {
int cmd_cat(const args_t &) { return 3; }
int cmd_validate(const args_t &) { return 3; }
int cmd_merge(const args_t &) { return 3; }
int cmd_split(const args_t &) { return 3; }
int cmd_convert(const args_t &) { return 3; }
}
