// image_end.hpp: the trace finalized before the process image ends (_exit and _Exit in
// process_exit.cpp, the exec family in process_exec.cpp), under a watchdog (README.md,
// "Safety").
#pragma once

namespace dftrace::io {

// What finalize_before_image_ends did.
enum class image_end {
  untouched,  // nothing: before this library is ready, in a vfork child, or tracing was off
  finalized,  // the trace has its end line and dftrace is finalized
  abandoned,  // finalizing did not end within the watchdog's time: left where it was waiting
              // (the end line was written before, the signal-safe way)
};

// The image is about to end: what is buffered and the end line are written the signal-safe
// way (no allocation, bounded waits: the fatal-signal path), then dftrace is finalized (nothing
// left to write) under a watchdog. The caller may be a signal handler that interrupted the C
// library's allocator or one of dftrace's locks, which finalizing needs: if it has not ended
// within k_finalize_seconds, SIGALRM takes this thread out of it and `abandoned` is returned
// (the process is leaving or replacing its image: what was left waiting dies with it). SIGALRM's
// disposition, this thread's signal mask and a pending alarm() of the application's are put
// back as they were (an exec keeps them). Not in a vfork child (it shares its parent's memory,
// writer and file: the parent finalizes), nor before this library is ready; inside a dftrace
// call on this thread, the signal-safe write only (finalizing there would re-enter it). errno
// is kept. `sig`: the signal the process ends by next (one it sends itself), which the end
// line records; 0 for none.
image_end finalize_before_image_ends(int sig = 0);

constexpr unsigned k_finalize_seconds = 3;

}  // namespace dftrace::io
