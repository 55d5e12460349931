// config.hpp: the effective configuration and the layers it comes from
// (defaults < YAML file < environment < init arguments), per docs/configuration.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct dftrace_options;

namespace dftrace::detail {

// Every field that is a key starts at that key's default, which lives only in the key table
// (config_table.cpp, listed by config_keys()): the constructor applies the table's defaults.
struct config {
  config();

  bool enable{};
  std::string config_file;
  std::string init_mode;      // DFTracer's DFTRACER_INIT: function or preload
  std::string output_prefix;  // output.prefix (DFTRACE_LOG_FILE, dftrace_options.output_prefix)
  std::string output_file;    // exact path, overrides output_prefix
  bool compression{};         // gzip or none
  std::string compressor;     // auto, isal, libdeflate, zlib
  int level{};                // -1: the codec's default
  size_t member_bytes{};
  double flush_interval{};  // seconds
  size_t buffer_bytes{};    // per-thread chunk
  size_t queue_bytes{};     // most buffered records before on_full applies
  bool on_full_drop{};      // false: block
  int compress_threads{};   // members compressed at once when there is a backlog
  bool metadata{};
  bool ns_precision{};
  std::string timer_source;  // auto | tsc | monotonic
  std::string cmdline;       // output.cmdline: full | exec | none
  std::string redact;        // output.redact: names whose values the command line hides
  // The step schedule (schedule.*): steps skipped first, then cycles of wait, warmup and
  // active steps, repeat cycles (0: no end); off while schedule_active is 0.
  uint64_t schedule_skip_first{}, schedule_wait{}, schedule_warmup{}, schedule_active{},
      schedule_repeat{};
  std::vector<std::pair<std::string, bool>> categories;  // in order; later wins
  // Aggregation: complete events folded per interval into count/min/max/sum records.
  bool aggregation{};
  bool aggregation_full{};        // full: every node unless a rule says no; selective: only rules
  double aggregation_interval{};  // seconds
  std::vector<std::pair<std::string, bool>> aggregation_rules;  // true: aggregate
  // aggregation.file (DFTRACER_AGGREGATION_FILE): DFTracer 2.x's rules file, and the rule
  // expressions read from it (compiled by the writer's event_rules).
  std::string aggregation_file;
  std::vector<std::string> aggregation_include, aggregation_exclude;
  // output.budget, per name before it is aggregated: events per second, or bytes of lines per
  // hour (one of the two; 0: none); output.sample: (cat or cat.name, N): 1 event in N kept.
  uint64_t budget{}, budget_bytes{};
  std::vector<std::pair<std::string, uint64_t>> sample;
  // The flight recorder (output.mode: ring; docs/flight-recorder.md): the last ring_seconds
  // (at most ring_bytes) of compressed members kept in memory; a trigger writes them and keeps
  // full detail for ring.after (steps, or seconds when ring_after_steps is 0).
  bool ring{};
  double ring_seconds{};
  size_t ring_bytes{};
  uint64_t ring_after_steps{};
  double ring_after_seconds{};
  // ring.direct: a trigger's dump of the ring with O_DIRECT (on), not (off), or as the trace
  // file's file system says (automatic: output/fs_direct.hpp).
  enum class ring_direct_mode : uint8_t { off, on, automatic };
  ring_direct_mode ring_direct = ring_direct_mode::automatic;
  // Triggers: a step longer than step_factor x the median of the recent steps (0: off) or than
  // step_ns (0: off); a signal (0: none); at least min_gap seconds apart.
  double trigger_step_factor{};
  uint64_t trigger_step_ns{};
  int trigger_signal{};
  double trigger_min_gap{};
  // dftrace attach (docs/attach.md): a thread waits for requests in attach_dir ("": the
  // default, /tmp/dftrace-attach-UID), even when tracing is off.
  bool attach{};
  std::string attach_dir;
  double telemetry_interval{};  // seconds between telemetry samples; 0: off (docs/telemetry.md)
  bool nvtx_forward{};          // regions as NVTX ranges, instants as marks (runtime/nvtx_forward)
  bool signals{};
  bool atexit{};
  bool core_affinity{};
  int log_level{};  // error=0 warn=1 info=2 debug=3
  bool tids{};      // false: tid = pid (DFTRACER_DISABLE_TIDS)
  // I/O tracing (src/plugins/io): the data directories ("" or "all": every file), what is excluded,
  // whether a process that initialises dftrace binds the interposers itself (function) or
  // leaves that to the preloaded library (preload), and the category switches.
  std::string data_dir;
  std::string io_exclude;
  bool io_function{};
  bool io{};
  bool posix{};
  bool stdio{};
  std::string exec_name;  // set by init arguments (e.g. the Python script)
  long parent_pid = 0;    // set by init arguments: the `ppid` recorded (0: getppid())
  bool gpu_cupti{};       // load libdftrace_cupti and record GPU activity
  std::string gpu_kinds;  // which GPU activity (gpu_kinds.hpp's normal form)

  // The configuration file named is not a file (a directory): tracing stays off, whatever the
  // other layers say (reported once by load_config).
  bool config_unusable = false;

  // Where each key's value came from: "default", "yaml <file>", "env <NAME>", "init".
  std::map<std::string, std::string> source;
};

// Reads the layers. Problems (unparsable YAML, unknown keys, wrong types) are reported
// through log() one line each, naming the file, key and value; the key keeps its previous
// layer's value. Never throws.
config load_config(const dftrace_options *options);

// Parses "-comm,+comm.all_reduce" / "comm:false,compute.step" into ordered rules.
bool parse_category_rules(const std::string &text, std::vector<std::pair<std::string, bool>> *rules,
                          std::string *error);

// Value parsers shared by the YAML and environment layers (exposed for the tests).
bool parse_bool(const std::string &text, bool *out);
// A size in bytes: digits with an optional fraction and unit, blanks around it allowed; K/KiB,
// M/MiB, G/GiB count in 1024s and kB/MB/GB in 1000s (any case). The one size parser: the
// dftrace tools use it too.
bool parse_size(const std::string &text, size_t *out);      // 1048576, 64KiB, 1MiB, 1MB
bool parse_duration(const std::string &text, double *out);  // 2, 2s, 500ms, 1.5
int parse_log_level(const std::string &text);               // -1 if unknown

// The sizes the writer uses, from output.member_bytes, output.flush_interval, output.buffer_bytes
// and output.queue_bytes as set, adjusted for each other and for ring mode (the one place that
// does it: the runtime's writer and describe() both take them from here). A *_why is "" when
// the value is the key's own, else why it differs ("default in ring mode").
struct writer_sizes {
  size_t member_bytes = 0;
  size_t chunk_bytes = 0;  // per-thread chunk: at most a member
  size_t queue_bytes = 0;
  double flush_interval = 0;  // seconds
  std::string member_why, flush_why, queue_why;
};
writer_sizes effective_writer_sizes(const config &cfg);

// One line per key: "key = value  (source)"; the writer's sizes as the writer uses them
// (effective_writer_sizes), with why they differ from the key's value.
std::string describe(const config &cfg);
// The value of one key as describe() writes it; false for a key the table does not have.
bool config_value(const config &cfg, std::string_view key, std::string *value);

// Every key with its default and the environment names that set it (for docs and tests).
struct key_info {
  const char *key;
  const char *env;           // DFTRACE_* name
  const char *dftracer_env;  // DFTracer name or nullptr
  const char *default_text;
};
const std::vector<key_info> &config_keys();

}  // namespace dftrace::detail
