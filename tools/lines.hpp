// lines.hpp: what the commands read from a trace's lines: the typed fields every command needs,
// exact microsecond text, the records of a block, time-unit lines and hash references.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "reader/line_parser.hpp"
#include "reader/time_unit.hpp"
#include "reader/trace_reader.hpp"

namespace dftrace::tools {

using detail::jtype;
using detail::jvalue;
using detail::parsed_line;
using detail::time_unit;

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

}  // namespace dftrace::tools
