// config_table.cpp: the key table: every key with its names, its default, its parser and its
// printer (docs/configuration.md lists them).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <sstream>

#include "base/gpu_kinds.hpp"
#include "config/config.hpp"
#include "config/config_table.hpp"

namespace dftrace::detail::keys {

namespace {

const char *const k_level_names[] = {"error", "warn", "info", "debug"};

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

// A key that takes one of two words (case-insensitive); `field` is true for `on`. The message
// names the two words in the order given (`on` first when on_first).
entry two_word_key(key_info info, const char *off, const char *on, bool config::*field,
                   bool on_first = false) {
  const std::string why_not =
      std::string("is not '") + (on_first ? on : off) + "' or '" + (on_first ? off : on) + "'";
  return {info, false,
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

// A key that takes one word of a list (case-insensitive), kept in lower case; the default is one.
entry word_key(key_info info, std::vector<std::string> words, std::string config::*field) {
  std::string why_not = "is not ";
  for (size_t i = 0; i < words.size(); ++i)
    why_not += (i == 0 ? "'" : i + 1 == words.size() ? " or '" : ", '") + words[i] + "'";
  return {info, false,
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

// A whole number in [min_value, max_value]; `why_not` says what it is not.
entry int_key(const char *key, const char *env, const char *def, long min_value, long max_value,
              const char *why_not, int config::*field) {
  return {{key, env, nullptr, def},
          false,
          [=](config &c, const std::string &s, std::string &why) {
            char *end = nullptr;
            const std::string t = trim(s);
            const long n = std::strtol(t.c_str(), &end, 10);
            if (t.empty() || *end || n < min_value || n > max_value) {
              why = why_not;
              return false;
            }
            c.*field = static_cast<int>(n);
            return true;
          },
          [field](const config &c) { return std::to_string(c.*field); }};
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
        const bool per_second = per == "s" && parse_count(amount, &n);
        if (!per_second && !(per == "h" && parse_size(amount, &bytes))) {
          why = "is not events per second (1000, 1000/s) or bytes per hour (200MB/h)";
          return false;
        }
        c.budget = n;  // the one not given stays 0
        c.budget_bytes = bytes;
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

// ring.direct: a boolean, or auto (the trace's file system decides: docs/flight-recorder.md).
entry ring_direct_key() {
  return {{"ring.direct", "DFTRACE_RING_DIRECT", nullptr, "auto"},
          false,
          [](config &c, const std::string &v, std::string &why) {
            bool on = false;
            if (lower(trim(v)) == "auto") {
              c.ring_direct = config::ring_direct_mode::automatic;
            } else if (parse_bool(v, &on)) {
              c.ring_direct = on ? config::ring_direct_mode::on : config::ring_direct_mode::off;
            } else {
              why = "is not a boolean (1/0, true/false, yes/no, on/off) or 'auto'";
              return false;
            }
            return true;
          },
          [](const config &c) {
            return std::string(c.ring_direct == config::ring_direct_mode::automatic ? "auto"
                               : c.ring_direct == config::ring_direct_mode::on      ? "true"
                                                                                    : "false");
          }};
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

// The keys of the process and its output file.
void add_output_keys(std::vector<entry> &v) {
  v.push_back(bool_key("enable", "DFTRACE_ENABLE", "DFTRACER_ENABLE", "false", &config::enable));
  v.push_back(
      string_key("config", "DFTRACE_CONFIG", "DFTRACER_CONFIGURATION", "", &config::config_file));
  v.push_back(word_key({"init", "DFTRACE_INIT", "DFTRACER_INIT", "function"},
                       {"function", "preload"}, &config::init_mode));
  // An empty prefix means the default (a file name needs one).
  v.push_back({{"output.prefix", "DFTRACE_LOG_FILE", "DFTRACER_LOG_FILE", "./trace"},
               false,
               [](config &c, const std::string &s, std::string &) {
                 c.output_prefix = s.empty() ? find_entry("output.prefix")->info.default_text : s;
                 return true;
               },
               [](const config &c) { return c.output_prefix; }});
  v.push_back(string_key("output.file", "DFTRACE_OUTPUT_FILE", nullptr, "", &config::output_file));
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
  v.push_back(word_key({"output.compressor", "DFTRACE_OUTPUT_COMPRESSOR", nullptr, "auto"},
                       {"auto", "isal", "libdeflate", "zlib"}, &config::compressor));
  v.push_back(int_key("output.level", "DFTRACE_OUTPUT_LEVEL", "-1", -1, 12,
                      "is not a deflate level (-1 for the default, 0 to 12)", &config::level));
  v.push_back(size_key("output.member_bytes", "DFTRACE_OUTPUT_MEMBER_BYTES", nullptr, "1048576",
                       &config::member_bytes, 4096, size_t{256} << 20));
  v.push_back(duration_key("output.flush_interval", "DFTRACE_OUTPUT_FLUSH_INTERVAL", "2s",
                           &config::flush_interval));
  v.push_back(size_key("output.buffer_bytes", "DFTRACE_OUTPUT_BUFFER_BYTES",
                       "DFTRACER_WRITE_BUFFER_SIZE", "65536", &config::buffer_bytes, 4096,
                       size_t{64} << 20));
  v.push_back(size_key("output.queue_bytes", "DFTRACE_OUTPUT_QUEUE_BYTES", nullptr, "16777216",
                       &config::queue_bytes, 65536, size_t{64} << 30));
  v.push_back(int_key("output.compress_threads", "DFTRACE_OUTPUT_COMPRESS_THREADS", "2", 1, 64,
                      "is not a thread count (1 to 64)", &config::compress_threads));
  v.push_back(two_word_key({"output.on_full", "DFTRACE_OUTPUT_ON_FULL", nullptr, "block"}, "block",
                           "drop", &config::on_full_drop));
  // What the trace records of the command line (docs/format.md, "What a trace records about
  // the process"), and the names whose values it hides.
  v.push_back(word_key({"output.cmdline", "DFTRACE_OUTPUT_CMDLINE", nullptr, "full"},
                       {"full", "exec", "none"}, &config::cmdline));
  v.push_back(string_key("output.redact", "DFTRACE_OUTPUT_REDACT", nullptr,
                         "password,passwd,token,secret,api-key", &config::redact));
}

// The keys of what an event holds and which events are kept.
void add_event_keys(std::vector<entry> &v) {
  v.push_back(
      bool_key("metadata", "DFTRACE_METADATA", "DFTRACER_INC_METADATA", "true", &config::metadata));
  v.push_back(two_word_key({"timer.precision", "DFTRACE_TIMER_PRECISION", nullptr, "us"}, "us",
                           "ns", &config::ns_precision));
  v.push_back(word_key({"timer.source", "DFTRACE_TIMER_SOURCE", nullptr, "auto"},
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
}

// Aggregation (docs/configuration.md, "Aggregation"): DFTracer 2.x's names work too; the budget
// and the sampling.
void add_aggregation_keys(std::vector<entry> &v) {
  v.push_back(bool_key("aggregation.enable", "DFTRACE_AGGREGATION", "DFTRACER_ENABLE_AGGREGATION",
                       "false", &config::aggregation));
  v.push_back(two_word_key(
      {"aggregation.type", "DFTRACE_AGGREGATION_TYPE", "DFTRACER_AGGREGATION_TYPE", "full"},
      "selective", "full", &config::aggregation_full, true));
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
}

// The flight recorder and its triggers (docs/flight-recorder.md).
void add_ring_keys(std::vector<entry> &v) {
  v.push_back(two_word_key({"output.mode", "DFTRACE_OUTPUT_MODE", nullptr, "file"}, "file", "ring",
                           &config::ring));
  v.push_back(duration_key("ring.seconds", "DFTRACE_RING_SECONDS", "30s", &config::ring_seconds));
  v.push_back(size_key("ring.bytes", "DFTRACE_RING_BYTES", nullptr, "67108864", &config::ring_bytes,
                       65536, size_t{64} << 30));
  v.push_back(ring_after_key());
  v.push_back(ring_direct_key());
  v.push_back(step_factor_key());
  v.push_back(count_key("trigger.step_ns", "DFTRACE_TRIGGER_STEP_NS", "0", "nanoseconds",
                        &config::trigger_step_ns));
  v.push_back(trigger_signal_key());
  v.push_back(
      duration_key("trigger.min_gap", "DFTRACE_TRIGGER_MIN_GAP", "10s", &config::trigger_min_gap));
  v.push_back(bool_key("attach.enable", "DFTRACE_ATTACH", nullptr, "false", &config::attach));
  v.push_back(string_key("attach.dir", "DFTRACE_ATTACH_DIR", nullptr, "", &config::attach_dir));
  v.push_back({{"telemetry.interval", "DFTRACE_TELEMETRY_INTERVAL", nullptr, "off"},
               false,
               [](config &c, const std::string &s, std::string &why) {
                 const std::string m = lower(trim(s));
                 double d = 0;
                 if (m != "off" && m != "0" && (!parse_duration(m, &d) || d < 0.01 || d > 86400)) {
                   why = "is not 'off' or a duration from 10ms to 1 day (100ms, 1s)";
                   return false;
                 }
                 c.telemetry_interval = d;
                 return true;
               },
               [](const config &c) {
                 return c.telemetry_interval > 0 ? to_text(c.telemetry_interval) + "s" : "off";
               }});
}

// The keys of the process's set-up: NVTX, signals, exit, affinity, the log, thread ids.
void add_process_keys(std::vector<entry> &v) {
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
}

// I/O tracing (src/plugins/io) and GPU tracing (src/plugins/gpu).
void add_io_gpu_keys(std::vector<entry> &v) {
  v.push_back(
      string_key("io.data_dir", "DFTRACE_IO_DATA_DIR", "DFTRACER_DATA_DIR", "", &config::data_dir));
  // What a process reads without meaning to (its configuration, devices, libraries, Python's
  // own modules); /usr/workspace-like data file systems under /usr stay traced.
  v.push_back(string_key("io.exclude", "DFTRACE_IO_EXCLUDE", nullptr,
                         "/proc:/sys:/dev:/etc:/run:/lib:/lib64:/usr/lib:/usr/lib64:/usr/libexec:"
                         "/usr/share:/usr/include:/usr/local/lib:/usr/local/share:*.so:*.so.*:"
                         "*.py:*.pyc:*/__pycache__/*:*/site-packages/*:*/dist-packages/*",
                         &config::io_exclude));
  v.push_back(two_word_key({"io.init", "DFTRACE_IO_INIT", "DFTRACER_INIT", "function"}, "preload",
                           "function", &config::io_function, true));
  v.push_back(
      bool_key("io.enable", "DFTRACE_IO_ENABLE", "DFTRACER_DISABLE_IO", "true", &config::io, true));
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
}

}  // namespace

const std::vector<entry> &table() {
  static const std::vector<entry> &t = *new std::vector<entry>([] {
    std::vector<entry> v;
    add_output_keys(v);
    add_event_keys(v);
    add_aggregation_keys(v);
    add_ring_keys(v);
    add_process_keys(v);
    add_io_gpu_keys(v);
    return v;
  }());
  return t;
}

const entry *find_entry(const std::string &key) {
  for (const auto &e : table())
    if (key == e.info.key) return &e;
  return nullptr;
}

}  // namespace dftrace::detail::keys
