#include "common.hpp"
namespace dftrace::tools {
int cmd_split(const args_t &) { return 3; }
int cmd_convert(const args_t &) { return 3; }
}
