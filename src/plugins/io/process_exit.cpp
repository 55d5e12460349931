// process_exit.cpp: _exit and _Exit. A process that leaves through them skips exit()'s handlers,
// which finalize its trace: a forked child of Python's multiprocessing (a DataLoader worker)
// ends with os._exit(), and so do servers' workers and shells' children. Its buffered events
// and its end line would be lost; here the trace is finalized first (README.md, "Safety").
//
// _exit is also how a signal handler ends a process, and the handler may have interrupted the
// C library's allocator or one of dftrace's locks, which finalizing needs (a SIGALRM handler that
// calls _exit while the program allocates): finalize_before_image_ends (image_end.hpp) writes the
// end line the signal-safe way first and finalizes under a watchdog.
#include <stdlib.h>
#include <unistd.h>

#include "plugins/io/image_end.hpp"
#include "plugins/io/interpose.hpp"

using namespace dftrace::io;

void _exit(int status) {
  DFTRACE_IO_REAL(_exit);
  finalize_before_image_ends();
  real__exit(status);
  __builtin_unreachable();
}

void _Exit(int status) {
  DFTRACE_IO_REAL(_Exit);
  finalize_before_image_ends();
  real__Exit(status);
  __builtin_unreachable();
}

// The registry's entries of the table's EXIT_OWN rows: those written here and the exec family
// (process_exec.cpp).
#define DFTRACE_IO_SHAPE_EXIT_OWN(cat, name, ...) DFTRACE_IO_REGISTER(name);
#include "plugins/io/shapes.hpp"
#define DFTRACE_IO_CALL DFTRACE_IO_WRAPPER
#include "dftrace/io_calls.def"
