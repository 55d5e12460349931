// process_exit.cpp: _exit and _Exit. A process that leaves through them skips exit()'s handlers,
// which finalize its trace: a forked child of Python's multiprocessing (a DataLoader worker)
// ends with os._exit(), and so do servers' workers and shells' children. Its buffered events
// and its end line would be lost; here the trace is finalized first (README.md, "Safety").
#include <stdlib.h>
#include <unistd.h>

#include "io/interpose.hpp"

using namespace dftrace::io;

namespace {

// Not in a vfork child (it shares its parent's memory, writer and file: the parent finalizes),
// nor before this library is ready or while inside dftrace.
void finalize_first() {
  if (!g_ready.load(std::memory_order_acquire) || t_inside || in_vfork_child()) return;
  inside g;
  dftrace_finalize();
}

}  // namespace

void _exit(int status) {
  DFTRACE_IO_REAL(_exit);
  finalize_first();
  real__exit(status);
  __builtin_unreachable();
}
DFTRACE_IO_REGISTER(_exit);

void _Exit(int status) {
  DFTRACE_IO_REAL(_Exit);
  finalize_first();
  real__Exit(status);
  __builtin_unreachable();
}
DFTRACE_IO_REGISTER(_Exit);
