/* plugin.h: the private contract between libdftrace and its plug-ins (libdftrace_io,
 * libdftrace_mpi, libdftrace_cupti), which are built with it from one tree. Never installed, and
 * no public header includes it: an application sees only dftrace.h.
 *
 * Two halves:
 *  - calls libdftrace exports for the plug-ins only (exported like the rest of the C ABI, so
 *    the list of exported symbols is unchanged, but declared here, not in dftrace.h);
 *  - the entry points each plug-in defines and libdftrace finds with dlsym. Each is declared
 *    once, with a function type of its own: the plug-in's definition must match the declaration
 *    (a C++ definition of an extern "C" function with another signature does not compile), and
 *    libdftrace calls it through a pointer of the same type (DFTRACE_PLUGIN_LOOKUP).
 *
 * C99 like dftrace.h; includes only dftrace.h.
 */
#ifndef DFTRACE_PLUGIN_H
#define DFTRACE_PLUGIN_H

#include "dftrace/dftrace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- calls for plug-ins */

/* Whether the calling thread is one of dftrace's own (the writer, its compressors), or an
 * application thread while dftrace does its own work on it: an interposer must not trace the
 * I/O those make. Thread-safe. */
DFTRACE_API bool dftrace_thread_is_internal(void);

/* The trace file's descriptor is not the program's: it is held at a high number (the first free
 * one at or above 1000, or the highest free one below a smaller RLIMIT_NOFILE), and given up when
 * the program meets EMFILE (then opened only while a write is under way).
 * dftrace_trace_fd_address: where that number is, or a negative value while none is held (a new
 * one each time a write lets it go, so that a caller can tell a write came between two loads);
 * read it with one relaxed atomic load (a close or dup2 compares it). */
DFTRACE_API const int *dftrace_trace_fd_address(void);

/* When `fd` is the trace file's descriptor: the write holding it is waited for (then `fd` is
 * free), or the file is moved to another number and `fd` closed, so that the program's
 * dup2/dup3 onto `fd`, or an open that failed with EMFILE, may follow; true when it was moved,
 * false otherwise. A negative `fd`: a write under way is waited for, false. */
DFTRACE_API bool dftrace_trace_fd_release(int fd);

/* The other descriptors dftrace has: those it holds for the whole run (the attach channel's
 * inotify instance, the telemetry node lock, at high numbers) and those its threads open for a
 * moment (a telemetry sample's /proc files). dftrace_held_fds_address is where they are counted
 * (one relaxed load): bits 0-7, how many are held; bits 8-15, how many stretches of momentary
 * ones are under way; bits 16-31, how many such stretches ended (wrapping).
 * dftrace_held_fds_release closes the held ones for good and waits (up to 200 ms) for the
 * stretches under way to end, so that a call of the program's that failed with EMFILE may be
 * made again. Thread-safe. */
DFTRACE_API const int *dftrace_held_fds_address(void);
DFTRACE_API void dftrace_held_fds_release(void);

/* A hash (kind as dftrace_hash_define) this process defined, or the process it was forked from
 * did: its definition is written to this process's trace if it is not there yet (a forked
 * child's events on an inherited descriptor). False when the hash is unknown. */
DFTRACE_API bool dftrace_hash_redefine(int kind, uint64_t hash);

/* The process is about to end by the signal `sig` that it sends itself (kill or raise of its own
 * pid, the signal's default action in place): the end line written next says so ("signal"), as
 * on the fatal-signal handler's path. Async-signal-safe; 0 forgets it. */
DFTRACE_API void dftrace_note_ending_signal(int sig);

/* The application has just put back the default action of `sig` (sigaction): where `sig` is a
 * request to end (SIGINT, SIGTERM, SIGHUP, SIGPIPE) and fatal-signal handling is on, its handler
 * goes in front of that default action again, so that the signal ends the process with its trace
 * written (Python puts SIGINT's back as it finalizes). Async-signal-safe. */
DFTRACE_API void dftrace_default_action_restored(int sig);

/* Whether the action of `sig` in place is dftrace's fatal-signal handler with the default action
 * behind it (the signal ends the process once its trace is written). Async-signal-safe. */
DFTRACE_API bool dftrace_default_action_behind(int sig);

/* The effective value of the configuration key `key` ("io.data_dir"), as
 * dftrace_config_describe writes it, copied into buf[size] and always NUL-terminated when size
 * is not 0 (cut to fit). Returns the value's full length in bytes (a result >= size means it
 * was cut: call again with a larger buffer), DFTRACE_ERR_NOT_FOUND for a key the configuration
 * does not have, DFTRACE_ERR_INVALID_ARGUMENT for a NULL key, or a NULL buf with size > 0.
 * Thread-safe; reads the configuration as initialisation left it (defaults before). */
DFTRACE_API int dftrace_config_get(const char *key, char *buf, size_t size);

/* ---------------------------------------------------------------- entry points of plug-ins */

/* libdftrace_io (src/plugins/io/README.md). The application mode: the rules (data directories
 * and exclusions, ':'-separated), then every loaded object's I/O calls bound to the
 * interposers; 0, or -1 where the architecture has no application mode. */
typedef int dftrace_io_bind_t(const char *data_dirs, const char *exclude);
/* A preloaded library's I/O calls given back to the C library (I/O switched off); 0. */
typedef int dftrace_io_unbind_t(void);
/* The folded stream calls still counted, written before the trace ends. */
typedef void dftrace_io_flush_folded_t(void);

/* The gpu.kinds the configuration accepted, as bits (the words are the configuration's). */
enum {
  DFTRACE_GPU_KERNEL = 1 << 0,
  DFTRACE_GPU_MEMCPY = 1 << 1,
  DFTRACE_GPU_MEMSET = 1 << 2,
  DFTRACE_GPU_SYNC = 1 << 3,
  DFTRACE_GPU_RUNTIME = 1 << 4,
  DFTRACE_GPU_DRIVER = 1 << 5,
  DFTRACE_GPU_API_ALL = 1 << 6,
  DFTRACE_GPU_ALL = (1 << 7) - 1
};

/* libdftrace_cupti (src/plugins/gpu/README.md): start recording `kinds` (DFTRACE_GPU_* bits);
 * log_level is libdftrace's (0 error .. 3 debug). 0 when recording, -1 otherwise (after one
 * line saying why). Safe to call again: later calls change the kinds. */
typedef int dftrace_cupti_start_t(unsigned kinds, int log_level);
/* Hands every record CUPTI holds to the trace and waits until it is written. Safe to call
 * more than once. */
typedef void dftrace_cupti_stop_t(void);

/* Exported by libdftrace for libdftrace_io (src/plugins/io/process_exec.cpp): an exec that
 * finalized the trace failed and the process goes on; recording starts again at its next event,
 * in a file of its own (a process's later file takes the first free name quietly). */
DFTRACE_API void dftrace_resume_after_exec(void);

/* Exported by the plug-ins (their definitions must have these types). */
DFTRACE_API dftrace_io_bind_t dftrace_io_bind;
DFTRACE_API dftrace_io_unbind_t dftrace_io_unbind;
DFTRACE_API dftrace_io_flush_folded_t dftrace_io_flush_folded;
DFTRACE_API dftrace_cupti_start_t dftrace_cupti_start;
DFTRACE_API dftrace_cupti_stop_t dftrace_cupti_stop;

/* The entry point `name` in the library `lib` (a dlopen handle, RTLD_DEFAULT...), as a pointer
 * of its declared type, or NULL. Needs <dlfcn.h>. */
#ifdef __cplusplus
#define DFTRACE_PLUGIN_LOOKUP(lib, name) reinterpret_cast<name##_t *>(::dlsym((lib), #name))
#else
#define DFTRACE_PLUGIN_LOOKUP(lib, name) ((name##_t *)dlsym((lib), #name))
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DFTRACE_PLUGIN_H */
