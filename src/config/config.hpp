// config.hpp: the effective configuration and the layers it comes from
// (defaults < YAML file < environment < init arguments), per docs/configuration.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

struct dftrace_options;

namespace dftrace::detail {

struct config {
  bool enable = false;
  std::string config_file;
  std::string init_mode = "function";  // DFTracer's DFTRACER_INIT: function or preload
  std::string prefix = "./trace";
  std::string output_file;              // exact path, overrides prefix
  bool compression = true;              // gzip or none
  std::string compressor = "auto";      // auto, isal, libdeflate, zlib
  int level = -1;                       // -1: the codec's default
  size_t member_bytes = 1u << 20;
  double flush_interval = 2.0;          // seconds
  size_t buffer_bytes = 64u << 10;      // per-thread chunk
  size_t queue_bytes = 16u << 20;       // most buffered records before on_full applies
  bool on_full_drop = false;            // false: block
  int compress_threads = 2;             // members compressed at once when there is a backlog
  bool metadata = true;
  bool ns_precision = false;
  std::string timer_source = "auto";  // auto | tsc | monotonic
  std::vector<std::pair<std::string, bool>> categories;  // in order; later wins
  bool signals = true;
  bool atexit = true;
  bool core_affinity = true;
  int log_level = 1;                    // error=0 warn=1 info=2 debug=3
  bool tids = true;                     // false: tid = pid (DFTRACER_DISABLE_TIDS)
  std::string data_dir;                 // DFTracer compatibility; I/O interception filter
  bool io = true;                       // DFTracer compatibility: I/O interception switches
  bool posix = true;
  bool stdio = true;
  std::string exec_name;                // set by init arguments (e.g. the Python script)
  bool gpu_cupti = false;               // load libdftrace_cupti and record GPU activity
  std::string gpu_kinds = "kernel,memcpy,memset,sync,runtime";  // which GPU activity

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
bool parse_category_rules(const std::string &text,
                          std::vector<std::pair<std::string, bool>> *rules, std::string *error);

// Value parsers shared by the YAML and environment layers (exposed for the tests).
bool parse_bool(const std::string &text, bool *out);
bool parse_size(const std::string &text, size_t *out);      // 1048576, 64KiB, 1MiB, 1MB
bool parse_duration(const std::string &text, double *out);  // 2, 2s, 500ms, 1.5
int parse_log_level(const std::string &text);               // -1 if unknown

// Checks a gpu.kinds list ("kernel,memcpy", "[kernel, memcpy]", "all"); on success the
// normalised comma-separated list goes to *out.
bool parse_gpu_kinds(const std::string &text, std::string *out, std::string *error);

// One line per key: "key = value  (source)".
std::string describe(const config &cfg);

// Every key with its default and the environment names that set it (for docs and tests).
struct key_info {
  const char *key;
  const char *env;          // DFTRACE_* name
  const char *dftracer_env; // DFTracer name or nullptr
  const char *default_text;
};
const std::vector<key_info> &config_keys();

}  // namespace dftrace::detail
