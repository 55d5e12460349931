// trace_lines.hpp: the trace's lines that are not events of the application (docs/format.md):
// metadata ("ph":"M") lines and the start and end events. Their one home: the runtime composes
// the file's header from them and the writer writes the end line, so no other file builds JSON.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "writer/record.hpp"

namespace dftrace::detail {

// "hhash":H, the member every line of a process carries when metadata is on.
std::string hhash_member(uint64_t host_hash);

// A metadata line: {"id":..,"name":<type>,"cat":"dftracer","pid":..,"tid":..,"ph":"M",
// "args":{["hhash":..,]"name":<name>,"value":<json_value>}} and '\n'. `json_value` is JSON text.
std::string meta_line(const line_format &f, uint64_t id, std::string_view type, int64_t tid,
                      bool with_hhash, std::string_view name, std::string_view json_value);
// The same from the two fields of the format it reads (the pid and `"hhash":H` or nothing): what
// the runtime writes at each file's first open, without building a line_format.
std::string meta_line(int64_t pid, std::string_view hhash_field, uint64_t id, std::string_view type,
                      int64_t tid, bool with_hhash, std::string_view name,
                      std::string_view json_value);

// The same line written into buf[cap] (no allocation): its length, or 0 when cap may be too
// small for it (then meta_line makes it).
size_t meta_line_into(char *buf, size_t cap, int64_t pid, std::string_view hhash_field, uint64_t id,
                      std::string_view type, int64_t tid, bool with_hhash, std::string_view name,
                      std::string_view json_value);

// A naming line (type "thread_name" or "process_name"): args {"name":<name>} and, when given,
// "core_affinity":<cpus> (a JSON array of the CPUs the thread is bound to).
std::string name_line(const line_format &f, uint64_t id, std::string_view type, int64_t tid,
                      std::string_view name, std::string_view core_affinity = {});

// What the start event says about the process.
struct start_fields {
  uint64_t id = 0;
  uint64_t mono_ns = 0;      // CLOCK_MONOTONIC ns of the start
  std::string_view version;  // dftrace's version
  std::string_view date;     // local time, as DFTracer writes it
  int64_t ppid = 0;
  uint64_t exec_hash = 0, cmd_hash = 0;
  bool tsc = false;  // the tick source is the TSC
};
std::string start_line(const line_format &f, const start_fields &s);

// What the end event says: written last, after the final counts are known.
struct end_fields {
  uint64_t id = 0;
  uint64_t mono_ns = 0;
  uint64_t events = 0, dropped = 0;
  int signal = 0;  // the fatal signal the process ends by, or 0
  // The flight recorder (output.mode: ring): the events its ring let go without a trigger
  // (written as ring_discarded_events only when `ring`).
  bool ring = false;
  uint64_t ring_discarded = 0;
};
// The end line and the closing "]\n" into buf; 0 when cap is too small. No allocation: the
// fatal-signal path writes it.
size_t end_line_into(const line_format &f, const end_fields &e, char *buf, size_t cap);

// What a flight recorder's trigger line says (docs/flight-recorder.md): where it came from
// (`slow_step`, `api`, `signal`, `crash`), why (a short text), when (CLOCK_MONOTONIC ns), and
// the window it writes: from from_ns, then full detail for `after` (text such as "2s" or
// "3 steps").
struct trigger_fields {
  std::string_view source, reason, after;
  uint64_t mono_ns = 0, from_ns = 0;
  uint64_t to_ns = 0;  // the window's end, when known (an attach window): "to":T
  // How the dump before it was written, with ring.direct ("on", "auto: on, xfs"): "direct":D.
  std::string_view direct;
  // The line that closes a window (`trigger_end`): its full detail ended at mono_ns; from_ns
  // is the time of the trigger that opened it.
  bool end = false;
};
// {"name":"trigger","cat":"dftracer","pid":..,"tid":..,"ph":"M","args":{["hhash":..,]
// "name":<source>,"value":<reason>,"time":T,"from":F[,"to":E],"after":<after>}} and '\n', into
// buf[cap] (no allocation: the fatal-signal path writes one); 0 when cap is too small. The reason
// is cut to 512 bytes. With t.end, the same line named "trigger_end".
size_t trigger_line_into(const line_format &f, const trigger_fields &t, char *buf, size_t cap);

}  // namespace dftrace::detail
