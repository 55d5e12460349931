// signals.hpp: the runtime's fatal-signal handlers (src/runtime/README.md, "Fatal signals").
#pragma once

namespace dftrace::detail {

// Whether the process is a Python interpreter (its executable, or a libpython loaded globally),
// and whether that interpreter has started. Python reads the dispositions when it starts: it
// takes SIGINT (KeyboardInterrupt) only where it finds the default action, and its
// signal.getsignal reports what it found then (a foreign handler as None, which
// multiprocessing's forkserver, saving and restoring the handler, takes for an error). Once it
// has started, it never reads them again.
enum class python { none, starting, started };
python python_host();

// Whether the action of `sig` in place is the fatal-signal handler with the default action
// behind it (it ends the process once the trace is written). Signal-safe.
bool default_action_behind(int sig);

}  // namespace dftrace::detail
