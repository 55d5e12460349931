/* dftrace.h: the stable C ABI of dftrace, the one surface every language face is built on.
 *
 * Model: a process-wide tree of named nodes. The root is "ai"; its children are categories
 * ("compute", "data", "comm", ... and any the application creates); their children are the
 * events of that category ("compute.forward"). A region is one use of a node: it begins, it
 * ends, and it is written as one complete ("X") event named after the node, in the node's
 * category, carrying the node's arguments as they are when it ends, then its own per-use
 * arguments. Nodes hold arguments that update() sets on a whole subtree, and an enable flag
 * that enable()/disable() set on a whole subtree.
 *
 * Rules of this header:
 *  - C99; includes only <stdint.h>, <stddef.h>, <stdbool.h>.
 *  - Set-up calls return a status: 0 = ok, negative = error (dftrace_status_string names it).
 *  - Hot-path calls (region begin/end, args, counters, instants) return nothing that can fail:
 *    they never block the caller on I/O and count what they could not record.
 *  - Every function is thread-safe unless it says otherwise. Node handles are valid from the
 *    moment they are returned until the process exits; they never need freeing.
 *  - Strings passed in are copied (or escaped) before the call returns; the caller keeps
 *    ownership. Strings returned are owned by dftrace and stay valid until the process exits
 *    unless stated otherwise.
 */
#ifndef DFTRACE_DFTRACE_H
#define DFTRACE_DFTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define DFTRACE_API
#else
#define DFTRACE_API __attribute__((visibility("default")))
#endif

#define DFTRACE_VERSION_MAJOR 0
#define DFTRACE_VERSION_MINOR 1
#define DFTRACE_VERSION_PATCH 0

/* ---------------------------------------------------------------- status codes */

enum {
  DFTRACE_OK = 0,
  DFTRACE_ERR_INVALID_ARGUMENT = -1, /* a NULL or malformed argument */
  DFTRACE_ERR_CONFIG = -2,           /* the configuration could not be used */
  DFTRACE_ERR_IO = -3,               /* the trace file could not be opened or written */
  DFTRACE_ERR_STATE = -4,            /* the call does not fit the current state */
  DFTRACE_ERR_NOT_FOUND = -5,        /* no such node */
  DFTRACE_ERR_DISABLED = -6          /* tracing is switched off by configuration */
};

/* Name of a status code ("ok", "invalid argument", ...). Never NULL. */
DFTRACE_API const char *dftrace_status_string(int status);

/* Library version as "MAJOR.MINOR.PATCH". */
DFTRACE_API const char *dftrace_version(void);

/* ---------------------------------------------------------------- initialisation */

/* Options for dftrace_init. Always initialise with dftrace_options_init() first: it sets
 * struct_size and marks every field "not set", so that only what the caller sets overrides
 * the configuration (defaults < YAML < environment < these options).
 * Tri-state ints: -1 = not set, 0 = off, 1 = on. */
typedef struct dftrace_options {
  size_t struct_size;        /* sizeof(dftrace_options_t), set by dftrace_options_init */
  int enable;                /* master switch */
  const char *config_file;   /* YAML file to read instead of DFTRACE_CONFIG */
  const char *output_prefix; /* file-name prefix: <prefix>-<exec>-<pid>-app.pfw.gz */
  const char *output_file;   /* exact file to write (overrides the prefix scheme) */
  int compression;           /* 1 = gzip, 0 = none */
  int level;                 /* deflate level; -1 = not set */
  const char *exec_name;     /* name used in the file name and SH line (e.g. a script) */
  int metadata;              /* write hhash, level, p_idx and the start details */
  int install_signal_handlers;
  int bind_atexit; /* finalize at process exit (default on) */
  /* Appended (read only when struct_size covers them): */
  const char *io_data_dir; /* directories whose I/O is traced (':'-separated, or "all"), added
                              to io.data_dir's: DFTRACER_C_INIT's data_dirs */
  int io_init;             /* 1: bind I/O tracing in this process (io.init function), 0: do not
                              (io.init preload: DFTRACER_C_INIT_NO_BIND) */
  long parent_pid;         /* the process recorded as this one's parent (`ppid` of the start event):
                              the process that started it, where the OS's parent is another (a
                              forkserver's child); 0: getppid() */
} dftrace_options_t;

/* dftrace_options_init(o) fills the whole struct as this header declares it (through
 * dftrace_options_init_sized, so that a library newer than the caller never writes past the
 * caller's struct). The function of that name, which programs built before the struct grew
 * call, fills only the fields up to bind_atexit. */
DFTRACE_API void dftrace_options_init(dftrace_options_t *options);
DFTRACE_API void dftrace_options_init_sized(dftrace_options_t *options, size_t size);
#define dftrace_options_init(options) \
  dftrace_options_init_sized((options), sizeof(dftrace_options_t))

/* Starts tracing for this process: reads the configuration, opens nothing until there is
 * something to write, starts the writer thread. `options` may be NULL. Calling it again
 * while initialised returns DFTRACE_OK and changes nothing. If configuration leaves tracing
 * disabled, returns DFTRACE_ERR_DISABLED and every later call is a cheap no-op.
 * Tracing also starts by itself on the first use of any node when DFTRACE_ENABLE (or
 * DFTRACER_ENABLE) is on in the environment. */
DFTRACE_API int dftrace_init(const dftrace_options_t *options);

/* Writes everything buffered, the "end" event and the closing "]", closes the file. Regions
 * still open are not written. Safe to call more than once and from any thread; also runs at
 * process exit when the application never calls it. DFTRACE_ERR_IO when the file could not be
 * made or written (a full file system, the file-size limit): events were lost (the end line,
 * when it could be written, counts them as dropped). */
DFTRACE_API int dftrace_finalize(void);

/* Compresses and writes everything buffered so far, as whole gzip members. Blocks until the
 * data is in the file (or the writer failed). */
DFTRACE_API int dftrace_flush(void);

/* The same from a signal handler: writes what every thread has recorded so far without
 * allocating, waiting at most about a second for each lock (skipping what it cannot take), as
 * dftrace does itself on a fatal signal (but without that path's fsync). With `ending` false
 * the trace stays open and dftrace_finalize may follow; with `ending` true the end line is
 * written too and nothing after it (the process leaves right after: a handler that calls
 * _exit). libdftrace_io's _exit calls it before finalizing. */
DFTRACE_API void dftrace_flush_from_signal(bool ending);

/* True while events are being recorded (initialised and enabled). */
DFTRACE_API bool dftrace_is_enabled(void);

/* Switches recording for the whole process without touching node states. */
DFTRACE_API void dftrace_set_enabled(bool enabled);

/* ---- the step schedule (docs/configuration.md, schedule.*)
 * As torch.profiler's schedule: the first skip_first steps are skipped, then cycles of `wait`,
 * `warmup` and `active` steps follow, `repeat` cycles (0: no end); events are recorded in
 * active steps only. Off (every step recorded) while `active` is 0. */
typedef struct dftrace_schedule {
  size_t struct_size; /* sizeof(dftrace_schedule_t) */
  uint64_t skip_first, wait, warmup, active, repeat;
} dftrace_schedule_t;

/* The phase of the step under way (dftrace_step_phase). */
enum {
  DFTRACE_STEP_NONE = 0, /* no schedule: every step is recorded */
  DFTRACE_STEP_SKIP = 1,
  DFTRACE_STEP_WAIT = 2,
  DFTRACE_STEP_WARMUP = 3,
  DFTRACE_STEP_ACTIVE = 4,
  DFTRACE_STEP_DONE = 5 /* after the last cycle: nothing more is recorded */
};

/* Marks the end of a training step (as torch.profiler's step()) and switches recording for
 * the next step as the schedule says. Returns 1 when the step that ended closed an active
 * window: its events are then in the file (flushed), the moment for an on_trace_ready
 * action; 0 otherwise; a negative DFTRACE_ERR_* on failure. Without a schedule it only counts
 * steps. Call it from one thread (the training loop's). */
DFTRACE_API int dftrace_step(void);

/* Replaces the schedule (the schedule.* configuration keys set the first one) and restarts
 * counting at step 0. DFTRACE_ERR_INVALID_ARGUMENT for NULL, a wrong struct_size, or wait,
 * warmup, skip_first or repeat without active steps. */
DFTRACE_API int dftrace_schedule_set(const dftrace_schedule_t *schedule);

/* A trigger of the flight recorder (output.mode: ring; docs/flight-recorder.md): the ring,
 * the last ring.seconds of events, is written to the trace with a trigger line that says
 * `reason` (NULL: none), then full detail follows for ring.after. Any thread; not from a
 * signal handler (trigger.signal is the signal's way). 1 when taken, 0 when not (not in ring
 * mode, not tracing, within trigger.min_gap of the last trigger). */
DFTRACE_API int dftrace_trigger(const char *reason);

/* ---- dftrace attach and the instrumentation a binding installs (docs/attach.md)
 * A process that waits for `dftrace attach` while it records nothing can leave out what would
 * only write events an attach window might ask for (the Python binding removes its PyTorch
 * wrappers between windows). */

/* 1 when events of `category` may be written now: the process records (traces, aggregates, or
 * records its ring), or waits for no attach, or an attach window that takes that category is
 * open; 0 while the process waits for dftrace attach with that category off (no window open,
 * or one of another level). Any thread; it takes dftrace's lock: not for the event path. */
DFTRACE_API int dftrace_attach_wants(const char *category);

/* Registers fn(user) (NULL: none), called each time the answer of dftrace_attach_wants may
 * have changed: an attach window opens or closes, or recording is switched in a process that
 * waits for attach. fn runs on the thread that made the change (dftrace's attach thread, or the
 * one in dftrace_step or dftrace_set_enabled) with dftrace's lock held: it must only note the
 * change (set a flag, schedule work) and call no dftrace function. When this returns, a
 * callback replaced is not running and is not called again. One per process. Returns 0. */
DFTRACE_API int dftrace_on_window(void (*fn)(void *user), void *user);

/* The phase of the step under way (DFTRACE_STEP_*), and the number of steps ended so far. */
DFTRACE_API int dftrace_step_phase(void);
DFTRACE_API uint64_t dftrace_step_count(void);

/* One line describing the state: enabled or not and why, the output file, events written
 * and dropped. The returned string is thread-local and valid until the next call on the
 * same thread. */
DFTRACE_API const char *dftrace_status(void);

/* Path of this process's trace file, or NULL before the first write / when disabled.
 * Thread-local copy, valid until the next call on the same thread. */
DFTRACE_API const char *dftrace_output_path(void);

/* The effective configuration, one "key = value  (source)" line per key. Thread-local copy,
 * valid until the next call on the same thread. */
DFTRACE_API const char *dftrace_config_describe(void);

/* ---------------------------------------------------------------- the node tree */

typedef struct dftrace_node dftrace_node_t; /* opaque; lives until process exit */

/* The root "ai" (event name and category "ai_root"). Never NULL. */
DFTRACE_API dftrace_node_t *dftrace_node_root(void);

/* Finds a node by dotted path from the root: "compute", "compute.forward",
 * "data.preprocess.collate". "" or "ai" is the root. NULL if there is no such node. A node
 * derived with dots in its name (a module path, "transformer.h.0") is found by its path too
 * (dftrace_node_path). */
DFTRACE_API dftrace_node_t *dftrace_node_find(const char *path);

/* The category `name` (a child of the root whose event name and category are `name`),
 * created if missing. Returns NULL only for an empty or NULL name. */
DFTRACE_API dftrace_node_t *dftrace_category(const char *name);

/* The child `name` of `parent` (event name `name`, category of `parent`), created if
 * missing. Children inherit the parent's arguments and enable state at creation. */
DFTRACE_API dftrace_node_t *dftrace_node_child(dftrace_node_t *parent, const char *name);

/* The derived node `<parent event name>.<name>` (same category), created if missing:
 * derive(data.preprocess, "collate") is named "preprocess.collate", path
 * "data.preprocess.collate". Deriving the same name again returns the same node. */
DFTRACE_API dftrace_node_t *dftrace_node_derive(dftrace_node_t *parent, const char *name);

/* Properties of a node. The strings live as long as the node. */
DFTRACE_API const char *dftrace_node_name(const dftrace_node_t *node);
DFTRACE_API const char *dftrace_node_category(const dftrace_node_t *node);
DFTRACE_API const char *dftrace_node_path(const dftrace_node_t *node);

/* Enable or disable a node and its whole subtree. Read when a region begins. */
DFTRACE_API void dftrace_node_enable(dftrace_node_t *node);
DFTRACE_API void dftrace_node_disable(dftrace_node_t *node);
/* True when a region on this node would be recorded now. */
DFTRACE_API bool dftrace_node_is_enabled(const dftrace_node_t *node);

/* The same check, inlined: the first byte of every node is its "recording now" flag (a
 * promise of this ABI), so a disabled region costs one load and one predictable branch. */
static inline bool dftrace_node_active_fast(const dftrace_node_t *node) {
  return node != NULL &&
         __atomic_load_n((const unsigned char *)(const void *)node, __ATOMIC_RELAXED) != 0;
}

/* Sets one argument on a node and its whole subtree (the root reaches every node).
 * Events carry these values as they are when the event ends. Keys "hhash", "level" and
 * "p_idx" are reserved: they are written as "user_<key>". */
DFTRACE_API void dftrace_node_update_int(dftrace_node_t *node, const char *key, int64_t value);
DFTRACE_API void dftrace_node_update_double(dftrace_node_t *node, const char *key, double value);
DFTRACE_API void dftrace_node_update_string(dftrace_node_t *node, const char *key,
                                            const char *value);
DFTRACE_API void dftrace_node_update_bool(dftrace_node_t *node, const char *key, bool value);
/* Removes the argument from the node and its subtree. */
DFTRACE_API void dftrace_node_update_remove(dftrace_node_t *node, const char *key);

/* ---------------------------------------------------------------- arguments */

typedef enum dftrace_arg_type {
  DFTRACE_ARG_INT = 1,
  DFTRACE_ARG_DOUBLE = 2,
  DFTRACE_ARG_STRING = 3,
  DFTRACE_ARG_BOOL = 4,
  DFTRACE_ARG_UINT = 5 /* unsigned 64-bit, e.g. a hash from dftrace_hash_define */
} dftrace_arg_type_t;

/* One typed key/value pair. Build it with the DFTRACE_ARG_* macros below. Keys longer than
 * 1024 bytes are cut to 1024; values of any length are kept. Reserved keys (hhash, level,
 * p_idx) are written as user_<key>. */
typedef struct dftrace_arg {
  const char *key;
  int32_t type; /* dftrace_arg_type_t */
  union {
    int64_t i;
    double d;
    const char *s;
    bool b;
    uint64_t u;
  } value;
} dftrace_arg_t;

/* Sets several arguments on a node and its whole subtree in one pass (pydftracer's
 * update(epoch=, step=)). A DFTRACE_ARG_STRING whose value is NULL removes that key. */
DFTRACE_API void dftrace_node_update_args(dftrace_node_t *node, const dftrace_arg_t *args,
                                          size_t nargs);

/* ---------------------------------------------------------------- regions */

/* A region in progress: returned by begin, passed to end. 0 means "not recorded" (node
 * disabled, tracing off); passing 0 to the other region calls is allowed and does nothing. */
typedef uint64_t dftrace_region_t;

/* Per-use enable override. */
enum { DFTRACE_USE_NODE_STATE = -1, DFTRACE_FORCE_OFF = 0, DFTRACE_FORCE_ON = 1 };

/* Begins a region on `node` on the calling thread. */
DFTRACE_API dftrace_region_t dftrace_region_begin(dftrace_node_t *node);

/* The same, with the disabled check inlined at the call site (no call when the node is off). */
#define DFTRACE_REGION_BEGIN(node) \
  (dftrace_node_active_fast(node) ? dftrace_region_begin(node) : (dftrace_region_t)0)

/* Begins a region with a per-use enable override and per-use arguments (copied now,
 * written after the node's arguments). `args` may be NULL when `nargs` is 0. */
DFTRACE_API dftrace_region_t dftrace_region_begin_ex(dftrace_node_t *node, int enable,
                                                     const dftrace_arg_t *args, size_t nargs);

/* Adds or replaces a per-use argument of an open region of the calling thread. */
DFTRACE_API void dftrace_region_arg_int(dftrace_region_t region, const char *key, int64_t value);
DFTRACE_API void dftrace_region_arg_double(dftrace_region_t region, const char *key, double value);
DFTRACE_API void dftrace_region_arg_string(dftrace_region_t region, const char *key,
                                           const char *value);
DFTRACE_API void dftrace_region_arg_bool(dftrace_region_t region, const char *key, bool value);
DFTRACE_API void dftrace_region_arg_uint(dftrace_region_t region, const char *key, uint64_t value);

/* Ends a region begun on the calling thread and writes its event. Regions normally end in
 * the reverse order they began; ending an outer one first is allowed (each event keeps the
 * level/p_idx it got at begin). A region begun on another thread, or already ended, is
 * ignored and counted. */
DFTRACE_API void dftrace_region_end(dftrace_region_t region);

/* Ends a region and adds per-use arguments first. */
DFTRACE_API void dftrace_region_end_ex(dftrace_region_t region, const dftrace_arg_t *args,
                                       size_t nargs);

/* Prepared arguments, for a call site that writes the same numeric keys on every event (an
 * I/O interposer, a communication wrapper): the keys and types of `args` (their values are
 * ignored) are encoded once, and each event then passes only its values, in the same order.
 * Only DFTRACE_ARG_INT, _UINT and _DOUBLE; NULL for anything else, an empty key, or more than
 * 64 arguments. A layout is never freed: make one per call site, not per event. Thread-safe. */
typedef struct dftrace_arg_layout dftrace_arg_layout_t;
typedef union dftrace_value {
  int64_t i;
  uint64_t u;
  double d;
} dftrace_value_t;
DFTRACE_API const dftrace_arg_layout_t *dftrace_arg_layout(const dftrace_arg_t *args, size_t nargs);
/* dftrace_region_end_ex with a layout's arguments: values[i] is the value of its i-th key. */
DFTRACE_API void dftrace_region_end_values(dftrace_region_t region,
                                           const dftrace_arg_layout_t *layout,
                                           const dftrace_value_t *values);

/* Leaf events: an event that can contain no other (a system call, a library call that makes
 * no traced call inside), at the least cost. Nothing is pushed on the thread's stack; the event
 * is recorded at its end, nested in the thread's innermost open region (its level and p_idx).
 * dftrace_leaf_begin returns the start (0: not recorded: the node is off, or tracing is); pass
 * it, on the same thread, to one of the two ends (0 is allowed and does nothing). An event
 * begun between a leaf's begin and end is not the leaf's child. */
DFTRACE_API uint64_t dftrace_leaf_begin(dftrace_node_t *node);
/* Ends a leaf with a layout's arguments (values[i]: its i-th key's); layout may be NULL. */
DFTRACE_API void dftrace_leaf_end_values(dftrace_node_t *node, uint64_t start,
                                         const dftrace_arg_layout_t *layout,
                                         const dftrace_value_t *values);
/* Ends a leaf with per-use arguments of any type. `args` may be NULL when `nargs` is 0. */
DFTRACE_API void dftrace_leaf_end_ex(dftrace_node_t *node, uint64_t start,
                                     const dftrace_arg_t *args, size_t nargs);

/* Drops a region without writing it (for example an iteration that yielded no item). */
DFTRACE_API void dftrace_region_cancel(dftrace_region_t region);

/* Start and stop by node, for hooks that can not keep a region handle (a callback pair, a
 * language's enter and exit): the region lives on the calling thread's own stack.
 * dftrace_node_start begins a region on `node` as dftrace_region_begin does: DFTRACE_OK, or
 * DFTRACE_ERR_DISABLED when nothing was begun (the node or tracing is off) and
 * DFTRACE_ERR_INVALID_ARGUMENT for NULL. dftrace_node_stop ends and writes the innermost open
 * region of `node` on the calling thread, however it was begun: DFTRACE_OK, or
 * DFTRACE_ERR_STATE when none is open there (never started, already stopped, started on
 * another thread, or by the parent of a forked child); a region open when the trace was
 * finalized is closed without being written. Neither call ever fails visibly otherwise. */
DFTRACE_API int dftrace_node_start(dftrace_node_t *node);
DFTRACE_API int dftrace_node_stop(dftrace_node_t *node);

/* ---------------------------------------------------------------- iteration */

/* Flags for dftrace_iter_begin. */
enum { DFTRACE_ITER_NO_ITER = 1u, DFTRACE_ITER_NO_BLOCK = 2u };

/* State of one iter loop; owned by the caller (usually on its stack). Fields are private. */
typedef struct dftrace_iter {
  size_t struct_size;
  dftrace_node_t *iter_node;  /* names "<n>.iter" or the custom iter name */
  dftrace_node_t *block_node; /* names "<n>.block" or the custom block name */
  dftrace_region_t open_iter;
  dftrace_region_t open_block;
  int64_t count;
  uint32_t flags;
  int32_t enable;
} dftrace_iter_t;

/* Prepares an iter loop on `node`: per item, one "<n>.iter" event (time to obtain the item)
 * and one "<n>.block" event (time of the loop body), both with arg count = 1, 2, ...
 * iter_name/block_name replace the names verbatim when not NULL. No event yet. */
DFTRACE_API void dftrace_iter_begin(dftrace_iter_t *it, dftrace_node_t *node, uint32_t flags,
                                    const char *iter_name, const char *block_name, int enable);
/* Call before obtaining the next item: ends the previous block, begins an iter event. */
DFTRACE_API void dftrace_iter_fetch(dftrace_iter_t *it);
/* Call once the item is obtained, before the body: ends the iter event, begins the block. */
DFTRACE_API void dftrace_iter_body(dftrace_iter_t *it);
/* Call when the loop ends for any reason: ends an open block, drops an open iter event
 * (a fetch that produced no item). Idempotent. */
DFTRACE_API void dftrace_iter_end(dftrace_iter_t *it);

/* The innermost region open on the calling thread, or 0. Lets integrations tie their own
 * events to the region that caused them (for example a GPU kernel to its launching region). */
DFTRACE_API dftrace_region_t dftrace_region_current(void);

/* ---------------------------------------------------------------- events with explicit times */

/* The tracer's clock: monotonic nanoseconds. Events are written in epoch microseconds as
 * (this clock + the offset recorded in the "start" event). */
DFTRACE_API uint64_t dftrace_now_ns(void);

/* A complete event with explicit start and end (dftrace_now_ns() clock) on a track: a
 * thread id, or a virtual track (for example one per GPU stream) named once with
 * dftrace_track_name. The event gets level 1 and p_idx -1: it does not nest in the calling
 * thread's regions. For activity recorded elsewhere and translated afterwards. */
DFTRACE_API void dftrace_event_complete(dftrace_node_t *node, uint64_t start_ns, uint64_t end_ns,
                                        int64_t track, const dftrace_arg_t *args, size_t nargs);

/* Names a track (a thread_name line for tid = track). */
DFTRACE_API void dftrace_track_name(int64_t track, const char *name);

/* ---------------------------------------------------------------- other events */

/* An instant event ("ph":"i", "s":"t") named after the node, with per-use arguments. */
DFTRACE_API void dftrace_instant(dftrace_node_t *node, const dftrace_arg_t *args, size_t nargs);

/* A counter sample ("ph":"C"): name = the node's event name, args {series: value}. */
DFTRACE_API void dftrace_counter_int(dftrace_node_t *node, const char *series, int64_t value);
DFTRACE_API void dftrace_counter_double(dftrace_node_t *node, const char *series, double value);

/* Metadata (streaming) mode: an M line {"name":"CM",...,"args":{"name":"<n>.start" or
 * "<n>.end","value":"<time in us>"}} instead of a complete event. */
DFTRACE_API void dftrace_node_mark_start(dftrace_node_t *node);
DFTRACE_API void dftrace_node_mark_end(dftrace_node_t *node);

/* A custom metadata line (CM): args {name: key, value: value}. */
DFTRACE_API void dftrace_metadata(const char *key, const char *value);

/* A process property line (PR): value written as a JSON string, integer or raw JSON
 * (raw JSON is validated; invalid JSON is written as a string). */
DFTRACE_API void dftrace_process_property_string(const char *key, const char *value);
DFTRACE_API void dftrace_process_property_int(const char *key, int64_t value);
DFTRACE_API void dftrace_process_property_json(const char *key, const char *json);

/* Hash of a string as DFTracer computes it, with its definition line (HH/SH/FH) written
 * once per file before the hash is returned. Slow path: cache the result. */
enum { DFTRACE_HASH_HOST = 1, DFTRACE_HASH_STRING = 2, DFTRACE_HASH_FILE = 3 };
DFTRACE_API uint64_t dftrace_hash_define(int kind, const char *value);

/* The MPI rank and world size of this process (also set automatically by libdftrace_mpi):
 * writes PR rank/size lines, names the process "rank N" and puts the rank in the file name
 * (renaming the file if it is already open). */
DFTRACE_API int dftrace_set_rank(int rank, int size);

/* The program name (file name and SH/PR exec lines; NULL or "": unchanged) and the parent
 * (`ppid`; <= 0: unchanged) of a process that was initialised before whoever started it could
 * say them (a `spawn` child of a launcher, which libdftrace_io initialised from the
 * environment). The file is renamed; its header says them when the file was not created yet,
 * otherwise `PR exec` / `PR ppid` lines follow. DFTRACE_ERR_STATE before initialisation. */
DFTRACE_API int dftrace_set_process_identity(const char *exec_name, long parent_pid);

/* Names the calling thread in the trace (a thread_name line). */
DFTRACE_API void dftrace_thread_name(const char *name);

/* Counts of this process: events written and dropped so far. */
DFTRACE_API uint64_t dftrace_events_written(void);
DFTRACE_API uint64_t dftrace_events_dropped(void);

/* The current time in the trace's time base, in nanoseconds since the Unix epoch: what `ts`
 * is written from (dftrace_now_ns() plus the epoch offset of the "start" event). Callable
 * before initialisation (the offset is then fixed by this first call). For comparing clocks
 * across processes (libdftrace_mpi's clock alignment, torch.distributed's in the Python face). */
DFTRACE_API uint64_t dftrace_trace_time_ns(void);

/* A few more calls are exported for dftrace's own plug-ins only (libdftrace_io, libdftrace_mpi,
 * libdftrace_cupti); they are declared in a private header that is not installed. */

/* ---------------------------------------------------------------- argument helpers */

/* clang-format off */
#define DFTRACE_ARG_I(k, v) \
  { (k), DFTRACE_ARG_INT, { .i = (int64_t)(v) } }
#define DFTRACE_ARG_D(k, v) \
  { (k), DFTRACE_ARG_DOUBLE, { .d = (double)(v) } }
#define DFTRACE_ARG_S(k, v) \
  { (k), DFTRACE_ARG_STRING, { .s = (v) } }
#define DFTRACE_ARG_B(k, v) \
  { (k), DFTRACE_ARG_BOOL, { .b = (bool)(v) } }
#define DFTRACE_ARG_U(k, v) \
  { (k), DFTRACE_ARG_UINT, { .u = (uint64_t)(v) } }
/* clang-format on */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DFTRACE_DFTRACE_H */
