// common.hpp: what every subcommand of the dftrace command shares: arguments, error lines,
// input expansion, the progress bar, loading whole traces, and the parallel member writer.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/gzip_member.hpp"
#include "config/config.hpp"
#include "reader/line_parser.hpp"
#include "reader/time_unit.hpp"
#include "reader/trace_reader.hpp"

namespace dftrace::tools {

using detail::jtype;
using detail::jvalue;
using detail::parsed_line;
using detail::time_unit;

// The arguments after the subcommand, with the helpers each command uses to read them.
struct args_t {
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> options;  // "--name" -> value ("" = flag)
  bool has(std::string_view name) const;
  std::string get(std::string_view name, const std::string &def = "") const;
  std::vector<std::string> get_all(std::string_view name) const;  // repeated or comma lists
  // -o / --output; when absent, one "CMD: -o WHAT is required" line and "".
  std::string output(const char *cmd, const char *what) const;
};

// Parses argv; options listed in with_value take the next argument (or --opt=value).
// Returns false (after printing one line) on an unknown option.
bool parse_args(int argc, char **argv, int first, const std::vector<std::string> &with_value,
                const std::vector<std::string> &flags, args_t *out);

// One "dftrace: ..." line on stderr.
void error_line(const std::string &msg);

// Expands directories into the trace files they hold (*.pfw, *.pfw.gz, sorted by name).
std::vector<std::string> expand_inputs(const std::vector<std::string> &in, bool *ok);
// The command's positional inputs, expanded; when there are none, one "CMD: no input files"
// line and an empty list (the command then exits with status 2).
std::vector<std::string> input_files(const args_t &a, const char *cmd, bool *ok);

// Opens a trace; on failure one "PATH: reason" line, *ok = false, and false.
bool open_trace(const std::string &path, detail::trace_file *f, bool *ok);
// One "PATH: byte N: ..." line per damage found while planning the file; returns how many.
size_t print_plan_issues(const detail::trace_file &f, const std::string &path);

// A size of at least one byte, read by the library's parser (config/config.hpp: K, KiB and
// the like count in 1024s, kB, MB, GB in 1000s): 64MiB, 1G, 500k, 1048576.
bool parse_size(const std::string &s, uint64_t *out);
// A count of at least 1, digits only.
bool parse_count(const std::string &s, uint64_t *out);

// Threads to use: DFTRACE_TOOL_THREADS, else the hardware concurrency (at least 1).
int tool_threads();
// Reading options for a command: tool_threads() workers, the reader's defaults otherwise.
detail::read_options tool_read_options();

// A progress bar on stderr, shown only when stderr is a terminal and the run is long.
class progress {
 public:
  progress(const char *what, uint64_t total);
  ~progress();
  void add(uint64_t n);
  void done();

 private:
  void draw(bool final);
  const char *what_;
  uint64_t total_;
  uint64_t seen_ = 0;
  bool enabled_;
  bool shown_ = false;
  double start_;
  double last_ = 0;
  double delay_ = 0.5;
};

double now_seconds();

// The typed view of the fields every command needs, from a parsed line of a file whose times
// are in unit (detail::header_time_unit).
struct event_fields {
  bool ok = false;  // valid JSON object
  bool has_ts = false;
  uint64_t ts = 0;   // nanoseconds since the epoch
  uint64_t dur = 0;  // nanoseconds
  bool has_dur = false;
  char ph = 0;  // first character of ph ('X', 'M', 'C', 'i', ...), 0 if missing
};
event_fields fields_of(const parsed_line &pl, time_unit unit);

// Nanoseconds as microseconds for output, exact: an integer when whole, else with the digits of
// the fraction that matter ("1795262848109106", "12.25", "0.001").
std::string us_text(uint64_t ns);

// s without surrounding blanks (spaces, tabs, carriage returns).
std::string_view trim(std::string_view s);

// Calls fn(line, ph) for each line of text that is a JSON object with a phase and a string
// name (parsed into pl); blank lines and the brackets are passed over, other lines counted
// in *skipped.
template <typename Fn>
void for_each_record(std::string_view text, parsed_line &pl, uint64_t *skipped, Fn &&fn) {
  detail::for_each_line(text, [&](std::string_view line) {
    const std::string_view t = trim(line);
    if (t.empty() || t == "[" || t == "]") return true;
    const char ph = detail::parse_line(line, pl) ? detail::phase(pl) : 0;
    if (!ph || pl.name.type != jtype::string) {
      ++*skipped;
      return true;
    }
    return fn(line, ph);
  });
}

// True for a metadata line that declares the trace's time unit (a PR time_metric line); merge
// and split write these first.
bool declares_unit(std::string_view line);

// Hash-reference values (hhash, fhash, *_hash) in a line's args.
void hash_refs(const parsed_line &pl, std::vector<std::string_view> *out);

// ---- writing: whole lines into self-describing gzip members, compressed on worker threads

class trace_writer {
 public:
  // path ending in .gz: DT members (member_bytes of text each); otherwise plain text.
  trace_writer(const std::string &path, int threads, size_t member_bytes = 1u << 20);
  ~trace_writer();
  bool ok() const { return ok_; }
  const std::string &error() const { return error_; }
  // Appends one line (without '\n'); ts_ns (epoch nanoseconds) is used for the member's DT
  // range (epoch microseconds) when has_ts.
  void line(std::string_view text, bool has_ts, uint64_t ts_ns);
  // The same in two steps, for callers that build the line in place: append its text to
  // open_line(), then call close_line().
  std::string &open_line() { return cur_->text; }
  void close_line(bool has_ts, uint64_t ts_ns);
  // Flushes and closes; returns false (error() says why) if anything failed.
  bool finish();

 private:
  struct job {
    std::string text;
    detail::member_stats stats;
    bool any_ts = false;
    std::vector<char> out;
    bool claimed = false;  // a compressor thread took it
    bool done = false;
    bool failed = false;
  };
  void submit();
  void compress_loop();
  void write_ready(bool all);

  std::string path_;
  int fd_ = -1;
  bool gz_ = true;
  bool ok_ = true;
  std::string error_;
  size_t member_bytes_;
  std::unique_ptr<job> cur_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<job>> queue_;  // in file order
  bool stop_ = false;
  std::vector<std::thread> pool_;
  size_t max_in_flight_;
};

// ---- where the rest of dftrace is (locate.cpp)

bool is_file(const std::string &p);  // readable
// The first path matching one of `patterns` (globs relative to this executable's directory) in
// which `probe` (appended) exists: where the rest of dftrace is, installed or in the build tree.
std::string beside_self(std::initializer_list<const char *> patterns, const char *probe);
// The directory holding the Python package `dftrace`: DFTRACE_PYTHON_DIR, else as installed
// (../lib/python3*/dist-packages) or as built (../bindings/python); "" when not found.
std::string python_dir();
// The interpreter for dftrace's Python parts and for `dftrace run/watch script.py`:
// DFTRACE_PYTHON, else Debian's /usr/bin/python3 (it has torch, pandas, matplotlib), else the
// first python3 on PATH.
std::string python_interpreter();

// The dialects convert writes besides Perfetto's: dftrace's own (DFTracer 1.x's lines), what
// DFTracer 2.0.2 writes (string ph, 16-hex hashes, aggregated records as counters) and the form
// DFTracer's newer documentation describes (integer ph, a type key, no brackets).
enum class dialect { dftrace, v2_0_2, v2_typed };
// convert --to dftracer | dftracer-2.0.2 | dftracer-2-typed (convert_dialect.cpp; cmd_convert
// hands over to it).
int convert_dialect(const args_t &a, dialect to);

// Subcommands.
int cmd_cat(const args_t &a);
int cmd_stat(const args_t &a);
int cmd_analyze(const args_t &a);  // cmd_analyze.cpp, on src/analysis
int cmd_diff(const args_t &a);     // cmd_diff.cpp, on src/analysis
int cmd_validate(const args_t &a);
int cmd_merge(const args_t &a);
int cmd_split(const args_t &a);
int cmd_convert(const args_t &a);
int cmd_config(const args_t &a);
int cmd_trigger(const args_t &a);       // the flight recorder's trigger in running processes
int cmd_run(int argc, char **argv);     // takes the command line itself (the command after --)
int cmd_report(int argc, char **argv);  // runs the Python report (dftrace.report)
int cmd_watch(int argc, char **argv);   // runs the Python dashboard (dftrace.watch)

}  // namespace dftrace::tools
