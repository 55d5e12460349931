// config.cpp: the key table, and the YAML, environment and init-argument layers over it.
#include "config/config.hpp"
#include "base/gpu_kinds.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <sstream>

#include "config/config_files.hpp"
#include "config/messages.hpp"
#include "config/yaml_tree.hpp"
#include "dftrace/dftrace.h"

namespace dftrace::detail {

namespace {

std::string lower(std::string s) {
  for (auto &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string &s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

const char *const k_level_names[] = {"error", "warn", "info", "debug"};

// One configuration key: how to set it from text, how to print it.
struct entry {
  key_info info;
  bool dftracer_inverted;  // DFTRACER_DISABLE_* mean the opposite of the key
  std::function<bool(config &, const std::string &, std::string &why)> set;
  std::function<std::string(const config &)> get;
  // The unit of a bare number under the DFTracer name (DFTRACER_TRACE_INTERVAL_MS: "ms").
  const char *dftracer_unit = nullptr;
};

template <typename T>
std::string to_text(const T &v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

entry bool_key(const char *key, const char *env, const char *denv, const char *def,
               bool config::*field, bool inverted = false) {
  return {{key, env, denv, def},
          inverted,
          [field](config &c, const std::string &v, std::string &why) {
            if (!parse_bool(v, &(c.*field))) {
              why = "is not a boolean (1/0, true/false, yes/no, on/off)";
              return false;
            }
            return true;
          },
          [field](const config &c) { return std::string(c.*field ? "true" : "false"); }};
}

// A key that takes one of two words (case-insensitive); `field` is true for the second.
entry two_word_key(const char *key, const char *env, const char *off, const char *on,
                   bool config::*field) {
  const std::string why_not = std::string("is not '") + off + "' or '" + on + "'";
  return {{key, env, nullptr, off},
          false,
          [=](config &c, const std::string &v, std::string &why) {
            const std::string m = lower(trim(v));
            if (m != off && m != on) {
              why = why_not;
              return false;
            }
            c.*field = m == on;
            return true;
          },
          [=](const config &c) { return std::string(c.*field ? on : off); }};
}

// A key that takes one word of a list (case-insensitive), kept in lower case; `def` is one.
entry word_key(const char *key, const char *env, const char *def, std::vector<std::string> words,
               std::string config::*field) {
  std::string why_not = "is not ";
  for (size_t i = 0; i < words.size(); ++i)
    why_not += (i == 0 ? "'" : i + 1 == words.size() ? " or '" : ", '") + words[i] + "'";
  return {{key, env, nullptr, def},
          false,
          [=](config &c, const std::string &v, std::string &why) {
            const std::string m = lower(trim(v));
            if (std::find(words.begin(), words.end(), m) == words.end()) {
              why = why_not;
              return false;
            }
            c.*field = m;
            return true;
          },
          [=](const config &c) { return c.*field; }};
}

entry string_key(const char *key, const char *env, const char *denv, const char *def,
                 std::string config::*field) {
  return {{key, env, denv, def},
          false,
          [field](config &c, const std::string &v, std::string &) {
            c.*field = v;
            return true;
          },
          [field](const config &c) { return c.*field; }};
}

// A size in [min_value, max_value] bytes (each key's range is documented in conf/dftrace.yaml).
// Out of range: one message, and the key keeps its earlier value (the default unless a file set
// it).
entry size_key(const char *key, const char *env, const char *denv, const char *def,
               size_t config::*field, size_t min_value, size_t max_value) {
  return {{key, env, denv, def},
          false,
          [field, min_value, max_value](config &c, const std::string &v, std::string &why) {
            size_t n = 0;
            if (!parse_size(v, &n)) {
              why = "is not a size (bytes, or with KiB/MiB/GiB)";
              return false;
            }
            if (n < min_value || n > max_value) {
              why = "is outside the range " + std::to_string(min_value) + " to " +
                    std::to_string(max_value) + " bytes";
              return false;
            }
            c.*field = n;
            return true;
          },
          [field](const config &c) { return std::to_string(c.*field); }};
}

// A duration from 1 ms to 1 day: seconds, or with a unit (2, 2s, 500ms).
entry duration_key(const char *key, const char *env, const char *def, double config::*field) {
  return {{key, env, nullptr, def},
          false,
          [field](config &c, const std::string &s, std::string &why) {
            double d;
            if (!parse_duration(s, &d) || d < 0.001 || d > 86400) {
              why = "is not a duration from 1ms to 1 day (2, 2s, 500ms)";
              return false;
            }
            c.*field = d;
            return true;
          },
          [field](const config &c) { return to_text(c.*field) + "s"; }};
}

// A count from 0 to 10^12: digits only, blanks around them allowed.
bool parse_count(const std::string &text, uint64_t *out) {
  const std::string t = trim(text);
  char *end = nullptr;
  const unsigned long long n = std::strtoull(t.c_str(), &end, 10);
  if (t.empty() || *end || !std::isdigit(static_cast<unsigned char>(t[0])) || n > 1000000000000ull)
    return false;
  *out = n;
  return true;
}

// A count from 0 to 10^12 (steps of the schedule); `what` names it.
entry count_key(const char *key, const char *env, const char *def, const char *what,
                uint64_t config::*field) {
  return {{key, env, nullptr, def},
          false,
          [field, what](config &c, const std::string &v, std::string &why) {
            if (!parse_count(v, &(c.*field))) {
              why = std::string("is not a count of ") + what + " (0 to 10^12)";
              return false;
            }
            return true;
          },
          [field](const config &c) { return std::to_string(c.*field); }};
}

// output.budget: events per second per name ("N", "N/s") or bytes of lines per hour per name
// (a size with "/h": "200MB/h"); 0: none.
entry budget_key() {
  return {
      {"output.budget", "DFTRACE_OUTPUT_BUDGET", nullptr, "0"},
      false,
      [](config &c, const std::string &v, std::string &why) {
        const size_t slash = v.rfind('/');
        const std::string per = slash == std::string::npos ? "s" : lower(trim(v.substr(slash + 1)));
        const std::string amount = v.substr(0, slash);
        uint64_t n = 0;
        size_t bytes = 0;
        if (per == "s" && parse_count(amount, &n)) {
          c.budget = n;
          c.budget_bytes = 0;
        } else if (per == "h" && parse_size(amount, &bytes)) {
          c.budget = 0;
          c.budget_bytes = bytes;
        } else {
          why = "is not events per second (1000, 1000/s) or bytes per hour (200MB/h)";
          return false;
        }
        return true;
      },
      [](const config &c) {
        return c.budget_bytes ? std::to_string(c.budget_bytes) + "/h" : std::to_string(c.budget);
      }};
}

// output.sample: "path=N,..." (YAML: a map {path: N}); each layer adds to the earlier ones'.
entry sample_key() {
  return {{"output.sample", "DFTRACE_OUTPUT_SAMPLE", nullptr, ""},
          false,
          [](config &c, const std::string &v, std::string &why) {
            std::vector<std::pair<std::string, uint64_t>> rules;
            std::stringstream ss(v);
            for (std::string item; std::getline(ss, item, ',');) {
              if (trim(item).empty()) continue;
              const size_t eq = item.find_last_of("=:");
              uint64_t n = 0;
              std::string path = eq == std::string::npos ? "" : trim(item.substr(0, eq));
              if (path.size() > 3 && path.compare(0, 3, "ai.") == 0) path.erase(0, 3);
              if (path.empty() || !parse_count(item.substr(eq + 1), &n) || n == 0) {
                why = "has '" + trim(item) + "', not path=N (N from 1: 1 event in N kept)";
                return false;
              }
              rules.emplace_back(path, n);
            }
            c.sample.insert(c.sample.end(), rules.begin(), rules.end());
            return true;
          },
          [](const config &c) {
            std::string out;
            for (auto &r : c.sample)
              out += (out.empty() ? "" : ",") + r.first + "=" + std::to_string(r.second);
            return out;
          }};
}

// ring.after: steps (a bare count) or a time with its unit ("2s", "500ms").
entry ring_after_key() {
  return {{"ring.after", "DFTRACE_RING_AFTER", nullptr, "2s"},
          false,
          [](config &c, const std::string &v, std::string &why) {
            uint64_t n = 0;
            double d = 0;
            if (parse_count(v, &n) && n > 0) {
              c.ring_after_steps = n;
              c.ring_after_seconds = 0;
            } else if (parse_duration(v, &d) && d >= 0.001 && d <= 86400) {
              c.ring_after_steps = 0;
              c.ring_after_seconds = d;
            } else {
              why = "is not a count of steps (from 1) or a duration from 1ms to 1 day (2s, 500ms)";
              return false;
            }
            return true;
          },
          [](const config &c) {
            return c.ring_after_steps ? std::to_string(c.ring_after_steps)
                                      : to_text(c.ring_after_seconds) + "s";
          }};
}

// trigger.step_factor: a factor over the median step (0: off, else from 1.01).
entry step_factor_key() {
  return {{"trigger.step_factor", "DFTRACE_TRIGGER_STEP_FACTOR", nullptr, "3"},
          false,
          [](config &c, const std::string &v, std::string &why) {
            const std::string t = trim(v);
            char *end = nullptr;
            const double f = std::strtod(t.c_str(), &end);
            if (t.empty() || *end || !std::isfinite(f) || (f != 0 && (f < 1.01 || f > 1e6))) {
              why = "is not 0 (off) or a factor from 1.01 to 10^6";
              return false;
            }
            c.trigger_step_factor = f;
            return true;
          },
          [](const config &c) { return to_text(c.trigger_step_factor); }};
}

// trigger.signal: a signal's name (USR2, SIGUSR2) or number; none or 0: no signal.
entry trigger_signal_key() {
  return {{"trigger.signal", "DFTRACE_TRIGGER_SIGNAL", nullptr, "SIGUSR2"},
          false,
          [](config &c, const std::string &v, std::string &why) {
            std::string t = lower(trim(v));
            if (t.compare(0, 3, "sig") == 0) t.erase(0, 3);
            static const std::pair<const char *, int> names[] = {
                {"usr1", SIGUSR1},   {"usr2", SIGUSR2}, {"hup", SIGHUP},
                {"winch", SIGWINCH}, {"urg", SIGURG},   {"pwr", SIGPWR}};
            for (const auto &n : names)
              if (t == n.first) {
                c.trigger_signal = n.second;
                return true;
              }
            uint64_t n = 0;
            if (t == "none" || (parse_count(t, &n) && n == 0)) {
              c.trigger_signal = 0;
              return true;
            }
            if (parse_count(t, &n) && n >= 1 && n < static_cast<uint64_t>(SIGRTMAX) + 1 &&
                n != SIGKILL && n != SIGSTOP && n != SIGSEGV && n != SIGBUS && n != SIGFPE &&
                n != SIGILL && n != SIGABRT) {
              c.trigger_signal = static_cast<int>(n);
              return true;
            }
            why =
                "is not a signal (USR1, USR2, HUP, WINCH, URG, PWR or a number that is not a "
                "fault, KILL or STOP) or none";
            return false;
          },
          [](const config &c) {
            return c.trigger_signal == SIGUSR2   ? std::string("SIGUSR2")
                   : c.trigger_signal == SIGUSR1 ? std::string("SIGUSR1")
                   : c.trigger_signal == 0       ? std::string("none")
                                                 : std::to_string(c.trigger_signal);
          }};
}

// Rules on node paths ("-comm,+comm.all_reduce"): later and more specific win; each layer adds
// to the earlier layers' rules.
entry rules_key(const char *key, const char *env,
                std::vector<std::pair<std::string, bool>> config::*field) {
  return {{key, env, nullptr, ""},
          false,
          [field](config &c, const std::string &s, std::string &why) {
            std::vector<std::pair<std::string, bool>> rules;
            if (!parse_category_rules(s, &rules, &why)) return false;
            (c.*field).insert((c.*field).end(), rules.begin(), rules.end());
            return true;
          },
          [field](const config &c) {
            std::string out;
            for (auto &r : c.*field) {
              if (!out.empty()) out += ',';
              out += (r.second ? "+" : "-") + r.first;
            }
            return out;
          }};
}

const entry *find_entry(const std::string &key);

// Never destroyed (as the other tables below): an initialisation during the process's exit
// would otherwise read them after their destructor (the runtime refuses to initialise then, and
// this keeps any later reader safe too).
const std::vector<entry> &table() {
  static const std::vector<entry> &t = *new std::vector<entry>([] {
    std::vector<entry> v;
    v.push_back(bool_key("enable", "DFTRACE_ENABLE", "DFTRACER_ENABLE", "false", &config::enable));
    v.push_back(
        string_key("config", "DFTRACE_CONFIG", "DFTRACER_CONFIGURATION", "", &config::config_file));
    v.push_back({{"init", "DFTRACE_INIT", "DFTRACER_INIT", "function"},
                 false,
                 [](config &c, const std::string &s, std::string &why) {
                   std::string m = lower(trim(s));
                   if (m != "function" && m != "preload") {
                     why = "is not 'function' or 'preload'";
                     return false;
                   }
                   c.init_mode = m;
                   return true;
                 },
                 [](const config &c) { return c.init_mode; }});
    // An empty prefix means the default (a file name needs one).
    v.push_back({{"output.prefix", "DFTRACE_LOG_FILE", "DFTRACER_LOG_FILE", "./trace"},
                 false,
                 [](config &c, const std::string &s, std::string &) {
                   c.output_prefix = s.empty() ? find_entry("output.prefix")->info.default_text : s;
                   return true;
                 },
                 [](const config &c) { return c.output_prefix; }});
    v.push_back(
        string_key("output.file", "DFTRACE_OUTPUT_FILE", nullptr, "", &config::output_file));
    v.push_back(
        {{"output.compression", "DFTRACE_OUTPUT_COMPRESSION", "DFTRACER_TRACE_COMPRESSION", "gzip"},
         false,
         [](config &c, const std::string &s, std::string &why) {
           std::string m = lower(trim(s));
           bool b;
           if (m == "gzip")
             c.compression = true;
           else if (m == "none")
             c.compression = false;
           else if (parse_bool(m, &b))
             c.compression = b;
           else {
             why = "is not 'gzip' or 'none'";
             return false;
           }
           return true;
         },
         [](const config &c) { return std::string(c.compression ? "gzip" : "none"); }});
    v.push_back(word_key("output.compressor", "DFTRACE_OUTPUT_COMPRESSOR", "auto",
                         {"auto", "isal", "libdeflate", "zlib"}, &config::compressor));
    v.push_back({{"output.level", "DFTRACE_OUTPUT_LEVEL", nullptr, "-1"},
                 false,
                 [](config &c, const std::string &s, std::string &why) {
                   char *end = nullptr;
                   std::string t = trim(s);
                   long n = std::strtol(t.c_str(), &end, 10);
                   if (t.empty() || *end || n < -1 || n > 12) {
                     why = "is not a deflate level (-1 for the default, 0 to 12)";
                     return false;
                   }
                   c.level = static_cast<int>(n);
                   return true;
                 },
                 [](const config &c) { return std::to_string(c.level); }});
    v.push_back(size_key("output.member_bytes", "DFTRACE_OUTPUT_MEMBER_BYTES", nullptr, "1048576",
                         &config::member_bytes, 4096, size_t{256} << 20));
    v.push_back(duration_key("output.flush_interval", "DFTRACE_OUTPUT_FLUSH_INTERVAL", "2s",
                             &config::flush_interval));
    v.push_back(size_key("output.buffer_bytes", "DFTRACE_OUTPUT_BUFFER_BYTES",
                         "DFTRACER_WRITE_BUFFER_SIZE", "65536", &config::buffer_bytes, 4096,
                         size_t{64} << 20));
    v.push_back(size_key("output.queue_bytes", "DFTRACE_OUTPUT_QUEUE_BYTES", nullptr, "16777216",
                         &config::queue_bytes, 65536, size_t{64} << 30));
    v.push_back({{"output.compress_threads", "DFTRACE_OUTPUT_COMPRESS_THREADS", nullptr, "2"},
                 false,
                 [](config &c, const std::string &s, std::string &why) {
                   char *end = nullptr;
                   const std::string t = trim(s);
                   const long n = std::strtol(t.c_str(), &end, 10);
                   if (t.empty() || *end || n < 1 || n > 64) {
                     why = "is not a thread count (1 to 64)";
                     return false;
                   }
                   c.compress_threads = static_cast<int>(n);
                   return true;
                 },
                 [](const config &c) { return std::to_string(c.compress_threads); }});
    v.push_back(two_word_key("output.on_full", "DFTRACE_OUTPUT_ON_FULL", "block", "drop",
                             &config::on_full_drop));
    // What the trace records of the command line (docs/format.md, "What a trace records about
    // the process"), and the names whose values it hides.
    v.push_back(word_key("output.cmdline", "DFTRACE_OUTPUT_CMDLINE", "full",
                         {"full", "exec", "none"}, &config::cmdline));
    v.push_back(string_key("output.redact", "DFTRACE_OUTPUT_REDACT", nullptr,
                           "password,passwd,token,secret,api-key", &config::redact));
    v.push_back(bool_key("metadata", "DFTRACE_METADATA", "DFTRACER_INC_METADATA", "true",
                         &config::metadata));
    v.push_back(two_word_key("timer.precision", "DFTRACE_TIMER_PRECISION", "us", "ns",
                             &config::ns_precision));
    v.push_back(word_key("timer.source", "DFTRACE_TIMER_SOURCE", "auto",
                         {"auto", "tsc", "monotonic"}, &config::timer_source));
    // The step schedule (dftrace_step): off while schedule.active is 0.
    struct step_key {
      const char *key, *env;
      uint64_t config::*field;
    };
    for (const step_key &k :
         {step_key{"schedule.skip_first", "DFTRACE_SCHEDULE_SKIP_FIRST",
                   &config::schedule_skip_first},
          {"schedule.wait", "DFTRACE_SCHEDULE_WAIT", &config::schedule_wait},
          {"schedule.warmup", "DFTRACE_SCHEDULE_WARMUP", &config::schedule_warmup},
          {"schedule.active", "DFTRACE_SCHEDULE_ACTIVE", &config::schedule_active},
          {"schedule.repeat", "DFTRACE_SCHEDULE_REPEAT", &config::schedule_repeat}})
      v.push_back(count_key(k.key, k.env, "0", "steps", k.field));
    v.push_back(rules_key("categories", "DFTRACE_CATEGORIES", &config::categories));
    // Aggregation (docs/configuration.md, "Aggregation"): DFTracer 2.x's names work too.
    v.push_back(bool_key("aggregation.enable", "DFTRACE_AGGREGATION", "DFTRACER_ENABLE_AGGREGATION",
                         "false", &config::aggregation));
    v.push_back(
        {{"aggregation.type", "DFTRACE_AGGREGATION_TYPE", "DFTRACER_AGGREGATION_TYPE", "full"},
         false,
         [](config &c, const std::string &s, std::string &why) {
           const std::string m = lower(trim(s));
           if (m != "full" && m != "selective") {
             why = "is not 'full' or 'selective'";
             return false;
           }
           c.aggregation_full = m == "full";
           return true;
         },
         [](const config &c) { return std::string(c.aggregation_full ? "full" : "selective"); }});
    v.push_back(duration_key("aggregation.interval", "DFTRACE_AGGREGATION_INTERVAL", "1s",
                             &config::aggregation_interval));
    v.back().info.dftracer_env = "DFTRACER_TRACE_INTERVAL_MS";  // a bare number: milliseconds
    v.back().dftracer_unit = "ms";
    v.push_back(string_key("aggregation.file", "DFTRACE_AGGREGATION_FILE",
                           "DFTRACER_AGGREGATION_FILE", "", &config::aggregation_file));
    v.push_back(
        rules_key("aggregation.rules", "DFTRACE_AGGREGATION_RULES", &config::aggregation_rules));
    v.push_back(budget_key());
    v.push_back(sample_key());
    // The flight recorder and its triggers (docs/flight-recorder.md).
    v.push_back(two_word_key("output.mode", "DFTRACE_OUTPUT_MODE", "file", "ring", &config::ring));
    v.push_back(duration_key("ring.seconds", "DFTRACE_RING_SECONDS", "30s", &config::ring_seconds));
    v.push_back(size_key("ring.bytes", "DFTRACE_RING_BYTES", nullptr, "67108864",
                         &config::ring_bytes, 65536, size_t{64} << 30));
    v.push_back(ring_after_key());
    v.push_back(step_factor_key());
    v.push_back(count_key("trigger.step_ns", "DFTRACE_TRIGGER_STEP_NS", "0", "nanoseconds",
                          &config::trigger_step_ns));
    v.push_back(trigger_signal_key());
    v.push_back(duration_key("trigger.min_gap", "DFTRACE_TRIGGER_MIN_GAP", "10s",
                             &config::trigger_min_gap));
    v.push_back({{"telemetry.interval", "DFTRACE_TELEMETRY_INTERVAL", nullptr, "off"},
                 false,
                 [](config &c, const std::string &s, std::string &why) {
                   const std::string m = lower(trim(s));
                   double d = 0;
                   if (m != "off" && m != "0" &&
                       (!parse_duration(m, &d) || d < 0.01 || d > 86400)) {
                     why = "is not 'off' or a duration from 10ms to 1 day (100ms, 1s)";
                     return false;
                   }
                   c.telemetry_interval = d;
                   return true;
                 },
                 [](const config &c) {
                   return c.telemetry_interval > 0 ? to_text(c.telemetry_interval) + "s" : "off";
                 }});
    v.push_back(
        bool_key("nvtx.forward", "DFTRACE_NVTX_FORWARD", nullptr, "false", &config::nvtx_forward));
    v.push_back(
        bool_key("signals", "DFTRACE_SIGNALS", "DFTRACER_BIND_SIGNALS", "true", &config::signals));
    v.push_back(bool_key("atexit", "DFTRACE_ATEXIT", nullptr, "true", &config::atexit));
    v.push_back(bool_key("core_affinity", "DFTRACE_CORE_AFFINITY", "DFTRACER_SET_CORE_AFFINITY",
                         "true", &config::core_affinity));
    v.push_back({{"log_level", "DFTRACE_LOG_LEVEL", "DFTRACER_LOG_LEVEL", "warn"},
                 false,
                 [](config &c, const std::string &s, std::string &why) {
                   int l = parse_log_level(s);
                   if (l < 0) {
                     why = "is not error, warn, info or debug";
                     return false;
                   }
                   c.log_level = l;
                   return true;
                 },
                 [](const config &c) { return std::string(k_level_names[c.log_level]); }});
    v.push_back(
        bool_key("tids", "DFTRACE_TIDS", "DFTRACER_DISABLE_TIDS", "true", &config::tids, true));
    v.push_back(string_key("io.data_dir", "DFTRACE_IO_DATA_DIR", "DFTRACER_DATA_DIR", "",
                           &config::data_dir));
    // What a process reads without meaning to (its configuration, devices, libraries, Python's
    // own modules); /usr/workspace-like data file systems under /usr stay traced.
    v.push_back(string_key("io.exclude", "DFTRACE_IO_EXCLUDE", nullptr,
                           "/proc:/sys:/dev:/etc:/run:/lib:/lib64:/usr/lib:/usr/lib64:/usr/libexec:"
                           "/usr/share:/usr/include:/usr/local/lib:/usr/local/share:*.so:*.so.*:"
                           "*.py:*.pyc:*/__pycache__/*:*/site-packages/*:*/dist-packages/*",
                           &config::io_exclude));
    v.push_back(
        {{"io.init", "DFTRACE_IO_INIT", "DFTRACER_INIT", "function"},
         false,
         [](config &c, const std::string &s, std::string &why) {
           const std::string m = lower(trim(s));
           if (m != "function" && m != "preload") {
             why = "is not 'function' or 'preload'";
             return false;
           }
           c.io_function = m == "function";
           return true;
         },
         [](const config &c) { return std::string(c.io_function ? "function" : "preload"); }});
    v.push_back(bool_key("io.enable", "DFTRACE_IO_ENABLE", "DFTRACER_DISABLE_IO", "true",
                         &config::io, true));
    v.push_back(bool_key("io.posix", "DFTRACE_IO_POSIX", "DFTRACER_DISABLE_POSIX", "true",
                         &config::posix, true));
    v.push_back(bool_key("io.stdio", "DFTRACE_IO_STDIO", "DFTRACER_DISABLE_STDIO", "true",
                         &config::stdio, true));
    v.push_back(bool_key("gpu.cupti", "DFTRACE_GPU_CUPTI", nullptr, "false", &config::gpu_cupti));
    v.push_back({{"gpu.kinds", "DFTRACE_GPU_KINDS", nullptr, "kernel,memcpy,memset,sync,runtime"},
                 false,
                 [](config &c, const std::string &s, std::string &why) {
                   if (!parse_gpu_kinds(s, nullptr, &c.gpu_kinds, &why)) return false;
                   // An empty list means the default (as libdftrace_cupti always read it).
                   if (c.gpu_kinds.empty())
                     parse_gpu_kinds(find_entry("gpu.kinds")->info.default_text, nullptr,
                                     &c.gpu_kinds, nullptr);
                   return true;
                 },
                 [](const config &c) { return c.gpu_kinds; }});
    return v;
  }());
  return t;
}

const entry *find_entry(const std::string &key) {
  for (const auto &e : table())
    if (key == e.info.key) return &e;
  return nullptr;
}

size_t edit_distance(const std::string &a, const std::string &b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string suggestion(const std::string &key) {
  const char *best = nullptr;
  size_t best_d = 4;
  for (const auto &e : table()) {
    size_t d = edit_distance(key, e.info.key);
    // also compare with the last component ("prefix" for "output.prefix")
    std::string k = e.info.key;
    auto dot = k.rfind('.');
    if (dot != std::string::npos) d = std::min(d, edit_distance(key, k.substr(dot + 1)) + 1);
    if (d < best_d) {
      best_d = d;
      best = e.info.key;
    }
  }
  return best ? std::string("; did you mean '") + best + "'?" : std::string();
}

// Keys whose every layer adds to the earlier ones' rules instead of replacing them.
bool adds_up(const std::string &key) {
  return key == "categories" || key == "aggregation.rules" || key == "output.sample";
}

// Applies one value; reports and keeps the earlier value on a bad one. A value that replaces
// another layer's different value is said at info level (which layer won).
void apply(config &c, const entry &e, const std::string &value, const std::string &source,
           const std::string &where, config_messages &msgs) {
  config trial = c;
  std::string why;
  if (e.set(trial, value, why)) {
    const std::string before = e.get(c), after = e.get(trial);
    const std::string was = c.source[e.info.key];
    if (was != "default" && was != source && before != after && !adds_up(e.info.key))
      msgs.info("key '%s': %s ('%s') wins over %s ('%s')", e.info.key, source.c_str(),
                after.c_str(), was.c_str(), before.c_str());
    c = std::move(trial);
    c.source[e.info.key] = source;
  } else {
    msgs.warn("%s: key '%s': value '%s' %s; keeping %s", where.c_str(), e.info.key, value.c_str(),
              why.c_str(), e.get(c).c_str());
  }
}

// One YAML file's walk: its name, where to report, and the line of each key seen so far (a key
// set twice, "output: {prefix: a}" and "output.prefix: b" alike, is said once with the winner).
struct yaml_walk {
  const std::string &file;
  config_messages &msgs;
  std::map<std::string, int> seen;
};

// The text of a rules key (categories, aggregation.rules, output.sample): a map {path: bool}
// ({path: N} for output.sample), a list ["-comm", "+comm.all_reduce"], or a string.
std::string rules_text(const std::string &key, const yaml_value &value, yaml_walk &w) {
  std::string rules;
  const bool counts = key == "output.sample";
  if (value.is_map()) {
    for (size_t i = 0; i + 1 < value.items.size(); i += 2) {
      bool b;
      const std::string &path = value.items[i].text;
      const yaml_value &rule_value = value.items[i + 1];
      if (counts && rule_value.is_scalar()) {  // sample_key checks the count
        rules += (rules.empty() ? "" : ",") + path + "=" + rule_value.text;
        continue;
      }
      if (!rule_value.is_scalar() || !parse_bool(rule_value.text, &b)) {
        w.msgs.warn("%s: key '%s.%s': value '%s' is not a %s; ignored", w.file.c_str(), key.c_str(),
                    path.c_str(), rule_value.text.c_str(), counts ? "count" : "boolean");
        continue;
      }
      rules += (rules.empty() ? "" : ",") + std::string(b ? "+" : "-") + path;
    }
  } else if (value.is_sequence()) {
    for (const auto &r : value.items) rules += (rules.empty() ? "" : ",") + r.text;
  } else {
    rules = value.text;
  }
  return rules;
}

void apply_yaml_node(config &c, const yaml_value &node, const std::string &prefix, yaml_walk &w) {
  const std::string &file = w.file;
  const std::string source = "yaml " + file;
  for (size_t i = 0; i + 1 < node.items.size(); i += 2) {
    const yaml_value &key_node = node.items[i];
    const yaml_value &value = node.items[i + 1];
    const std::string key = (prefix.empty() ? "" : prefix + ".") + key_node.text;
    if (adds_up(key)) {
      if (const entry *e = find_entry(key))
        apply(c, *e, rules_text(key, value, w), source, file, w.msgs);
      continue;
    }
    if (value.is_map()) {
      apply_yaml_node(c, value, key, w);
      continue;
    }
    const entry *e = find_entry(key);
    if (!e || key == "config") {
      // Past the cap nobody reads the suggestion: a file of many unknown keys stays cheap.
      w.msgs.warn("%s: unknown key '%s'%s; ignored", file.c_str(), key.c_str(),
                  key == "config" ? " (the file can not name another file)"
                  : w.msgs.full() ? ""
                                  : suggestion(key).c_str());
      continue;
    }
    const int line = key_node.line;
    auto [at, first] = w.seen.emplace(key, line);
    if (!first) {
      w.msgs.warn("%s: key '%s' is set twice (lines %d and %d); the later one, line %d, wins",
                  file.c_str(), key.c_str(), at->second, line, line);
      at->second = line;
    }
    if (key == "gpu.kinds" && value.is_sequence()) {  // [kernel, memcpy] as well as "kernel,memcpy"
      std::string list;
      for (const auto &item : value.items) list += (list.empty() ? "" : ",") + item.text;
      apply(c, *e, list, source, file, w.msgs);
      continue;
    }
    if (!value.is_scalar() && !value.is_null()) {
      w.msgs.warn("%s: key '%s': value '%s' is not a single value; keeping %s", file.c_str(),
                  key.c_str(), value.text.c_str(), e->get(c).c_str());
      continue;
    }
    apply(c, *e, value.text, source, file, w.msgs);
  }
}

void apply_yaml_file(config &c, const std::string &file, config_messages &msgs) {
  yaml_value root;
  std::string why;
  switch (load_yaml_file(file, &root, &why)) {
    case yaml_load::ok: break;
    case yaml_load::not_a_file:
      // There, but not a file (a directory, a FIFO, a device): the user meant something else
      // entirely, so tracing stays off rather than run with settings nobody chose.
      msgs.error("%s: the configuration file is %s, not a file; tracing is off", file.c_str(),
                 why.c_str());
      c.config_unusable = true;
      return;
    case yaml_load::not_yaml:
      msgs.warn("%s: not valid YAML (%s); ignoring this file", file.c_str(), why.c_str());
      return;
    default:
      msgs.warn("%s: configuration file can not be read (%s); using the other layers", file.c_str(),
                why.c_str());
      return;
  }
  if (root.is_null()) return;
  if (!root.is_map()) {
    msgs.warn("%s: the top level is not a mapping of keys; ignoring this file", file.c_str());
    return;
  }
  try {
    yaml_walk w{file, msgs, {}};
    apply_yaml_node(c, root, "", w);
  } catch (const std::exception &e) {
    msgs.warn("%s: could not be applied (%s); ignoring the rest of this file", file.c_str(),
              e.what());
  }
}

const char *getenv_nonempty(const char *name) {
  if (!name) return nullptr;
  const char *v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

}  // namespace

bool parse_bool(const std::string &text, bool *out) {
  const std::string t = lower(trim(text));
  if (t == "1" || t == "true" || t == "yes" || t == "on") {
    *out = true;
    return true;
  }
  if (t == "0" || t == "false" || t == "no" || t == "off") {
    *out = false;
    return true;
  }
  return false;
}

bool parse_size(const std::string &text, size_t *out) {
  // Digits with an optional fraction, then an optional unit: no sign, exponent or hex, so
  // that "1e3" or "0x10" is reported rather than read as something nobody wrote.
  const std::string t = trim(text);
  size_t i = 0;
  double v = 0;
  bool digits = false;
  auto digit = [&] { return i < t.size() && std::isdigit(static_cast<unsigned char>(t[i])); };
  for (; digit(); ++i) {
    v = v * 10 + (t[i] - '0');
    digits = true;
  }
  if (i < t.size() && t[i] == '.') {
    double scale = 0.1;
    for (++i; digit(); ++i) {
      v += (t[i] - '0') * scale;
      scale /= 10;
      digits = true;
    }
  }
  if (!digits) return false;
  const std::string unit = lower(trim(t.substr(i)));
  // docs/configuration.md: K/KiB, M/MiB, G/GiB count in 1024s; kB, MB, GB in 1000s (SI).
  double mult;
  if (unit.empty() || unit == "b")
    mult = 1;
  else if (unit == "k" || unit == "kib")
    mult = 1024.0;
  else if (unit == "kb")
    mult = 1e3;
  else if (unit == "m" || unit == "mib")
    mult = 1048576.0;
  else if (unit == "mb")
    mult = 1e6;
  else if (unit == "g" || unit == "gib")
    mult = 1073741824.0;
  else if (unit == "gb")
    mult = 1e9;
  else
    return false;
  const double bytes = v * mult;
  if (bytes > 1e15) return false;
  *out = static_cast<size_t>(bytes);
  return true;
}

bool parse_duration(const std::string &text, double *out) {
  const std::string t = trim(text);
  if (t.empty()) return false;
  char *end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str()) return false;
  std::string unit = lower(trim(end));
  if (unit.empty() || unit == "s")
    *out = v;
  else if (unit == "ms")
    *out = v / 1e3;
  else if (unit == "us")
    *out = v / 1e6;
  else if (unit == "m" || unit == "min")
    *out = v * 60;
  else
    return false;
  return std::isfinite(*out);
}

int parse_log_level(const std::string &text) {
  const std::string t = lower(trim(text));
  if (t == "error" || t == "0") return 0;
  if (t == "warn" || t == "warning" || t == "1") return 1;
  if (t == "info" || t == "2") return 2;
  if (t == "debug" || t == "trace" || t == "3") return 3;
  return -1;
}

bool parse_category_rules(const std::string &text, std::vector<std::pair<std::string, bool>> *rules,
                          std::string *error) {
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = trim(item);
    if (item.empty()) continue;
    bool on = true;
    std::string path = item;
    auto colon = item.find(':');
    if (colon == std::string::npos) colon = item.find('=');
    if (colon != std::string::npos) {
      path = trim(item.substr(0, colon));
      if (!parse_bool(item.substr(colon + 1), &on)) {
        *error = "is not a list of [+|-]path or path:bool (bad entry '" + item + "')";
        return false;
      }
    } else if (item[0] == '-' || item[0] == '+') {
      on = item[0] == '+';
      path = trim(item.substr(1));
    }
    if (path.empty()) {
      *error = "has an empty category path";
      return false;
    }
    for (char ch : path) {
      if (std::isspace(static_cast<unsigned char>(ch)) || ch == '"') {
        *error = "has '" + path + "', which is not a category path";
        return false;
      }
    }
    rules->emplace_back(path, on);
  }
  return true;
}

config::config() {
  // Every key through its own setter, from the table's text: the one home of each default.
  std::string why;
  for (const auto &e : table()) {
    e.set(*this, e.info.default_text, why);
    source[e.info.key] = "default";
  }
}

namespace {

// The DFTracer name's value as the key reads it: a bare number in the name's unit, and the
// meaning of DFTRACER_DISABLE_* turned round.
std::string dftracer_value(const entry &e, std::string value) {
  if (e.dftracer_unit && !value.empty() &&
      value.find_first_not_of("0123456789.") == std::string::npos)
    value += e.dftracer_unit;
  if (e.dftracer_inverted) {
    bool b;
    if (parse_bool(value, &b)) value = b ? "false" : "true";
  }
  return value;
}

// Environment: the DFTRACE_* name, else the DFTracer name; both set to different values is said.
void apply_environment(config &c, config_messages &msgs) {
  for (const auto &e : table()) {
    if (std::string(e.info.key) == "config") continue;
    const char *v = getenv_nonempty(e.info.env);
    const char *d = getenv_nonempty(e.info.dftracer_env);
    if (v) {
      if (d) {
        config ours = c, theirs = c;
        std::string why;
        const bool ok = e.set(ours, v, why);
        if (ok && e.set(theirs, dftracer_value(e, d), why) && e.get(ours) != e.get(theirs))
          msgs.warn("environment: %s=%s and %s=%s both set key '%s'; %s wins", e.info.env, v,
                    e.info.dftracer_env, d, e.info.key, e.info.env);
      }
      apply(c, e, v, std::string("env ") + e.info.env, std::string("environment ") + e.info.env,
            msgs);
    } else if (d) {
      apply(c, e, dftracer_value(e, d), std::string("env ") + e.info.dftracer_env,
            std::string("environment ") + e.info.dftracer_env, msgs);
    }
  }
}

void apply_init_arguments(config &c, const dftrace_options *options, config_messages &msgs) {
  auto set = [&](const char *key, const std::string &v) {
    if (const entry *e = find_entry(key)) apply(c, *e, v, "init", "dftrace_init", msgs);
  };
  if (options->enable >= 0) set("enable", options->enable ? "true" : "false");
  if (options->output_prefix) set("output.prefix", options->output_prefix);
  if (options->output_file) set("output.file", options->output_file);
  if (options->compression >= 0) set("output.compression", options->compression ? "gzip" : "none");
  if (options->level >= 0) set("output.level", std::to_string(options->level));
  if (options->metadata >= 0) set("metadata", options->metadata ? "true" : "false");
  if (options->install_signal_handlers >= 0)
    set("signals", options->install_signal_handlers ? "true" : "false");
  if (options->bind_atexit >= 0) set("atexit", options->bind_atexit ? "true" : "false");
  if (options->exec_name) c.exec_name = options->exec_name;
  if (options->struct_size >= offsetof(dftrace_options_t, io_init) + sizeof(int)) {
    // DFTracer's init: its data directories join the configured ones.
    if (options->io_data_dir && *options->io_data_dir) {
      const bool both = !c.data_dir.empty() && c.data_dir != options->io_data_dir;
      set("io.data_dir", both ? std::string(options->io_data_dir) + ":" + c.data_dir
                              : std::string(options->io_data_dir));
    }
    if (options->io_init >= 0) set("io.init", options->io_init ? "function" : "preload");
  }
}

}  // namespace

config load_config(const dftrace_options *options) {
  config c;
  config_messages msgs;
  const bool have_opts =
      options && options->struct_size >= offsetof(dftrace_options_t, bind_atexit) + sizeof(int);

  // The file: init argument, else environment.
  std::string file;
  if (have_opts && options->config_file)
    file = options->config_file;
  else if (const char *v = getenv_nonempty("DFTRACE_CONFIG"))
    file = v;
  else if (const char *v2 = getenv_nonempty("DFTRACER_CONFIGURATION"))
    file = v2;
  if (!file.empty()) {
    c.config_file = file;
    c.source["config"] = have_opts && options->config_file ? "init" : "env";
    apply_yaml_file(c, file, msgs);
  }
  apply_environment(c, msgs);
  if (have_opts) apply_init_arguments(c, options, msgs);
  if (!c.aggregation_file.empty()) read_rules_file(c, msgs);
  msgs.finish(c.log_level);
  return c;
}

std::string describe(const config &cfg) {
  std::string out;
  for (const auto &e : table()) {
    auto it = cfg.source.find(e.info.key);
    out += std::string(e.info.key) + " = " + e.get(cfg) + "  (" +
           (it == cfg.source.end() ? "default" : it->second) + ")\n";
  }
  return out;
}

const std::vector<key_info> &config_keys() {
  static const std::vector<key_info> &keys = *new std::vector<key_info>([] {
    std::vector<key_info> k;
    for (const auto &e : table()) k.push_back(e.info);
    return k;
  }());
  return keys;
}

}  // namespace dftrace::detail
