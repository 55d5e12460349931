// fuzz_line_parser.cpp: the one-line JSON scanner and the number readers built on it.
// Input: any bytes, cut into lines at '\n'; every line is parsed, and every value it finds is
// read as the tools read it. Checks what must hold for any input: views stay inside the line,
// parse_line agrees with the whole grammar alone, an aggregated record's calls read in one
// pass agree with their lookup by key, and a number canonical_number accepts is valid JSON.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/format.hpp"
#include "reader/aggregated.hpp"
#include "reader/line_parser.hpp"
#include "reader/trace_reader.hpp"

using namespace dftrace::detail;

namespace {

void check_inside(std::string_view line, std::string_view part) {
  if (part.empty()) return;
  if (part.data() < line.data() || part.data() + part.size() > line.data() + line.size()) abort();
}

void read_value(std::string_view line, const jvalue &v) {
  check_inside(line, v.text);
  uint64_t u;
  int64_t i;
  bool quoted;
  value_u64(v, &u, &quoted);
  value_i64(v, &i, &quoted);
  value_is_integer(v);
  std::string n;
  if (v.present() && canonical_number(v.text, &n) && !is_valid_json_value(n)) abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  parsed_line pl, whole;
  for_each_line(text, [&](std::string_view line) {
    const bool ok = parse_line(line, pl);
    // The straight path for common lines gives what the whole grammar gives.
    if (parse_line_general(line, whole) != ok || (ok && !same_parse(pl, whole))) abort();
    // So does each structural scan this CPU has (the vector builds of the line's masks).
    for (const line_scan s :
         {line_scan::portable, line_scan::sse2, line_scan::avx2, line_scan::avx512}) {
      if (!line_scan_supported(s)) continue;
      if (parse_line_with(line, whole, s) != ok || (ok && !same_parse(pl, whole))) abort();
    }
    if (!ok) {
      if (!pl.error || pl.error_at > line.size()) abort();
      return true;
    }
    for (const jvalue *v :
         {&pl.id, &pl.name, &pl.cat, &pl.pid, &pl.tid, &pl.ts, &pl.dur, &pl.ph, &pl.args, &pl.s})
      read_value(line, *v);
    if (pl.nargs < 0 || pl.nargs > parsed_line::k_max_args) abort();
    // An aggregated record's calls read in one pass equal those looked up key by key.
    uint64_t n1 = 0, d1 = 0, n2 = 0, d2 = 0;
    if (aggregated_calls(pl, time_unit::us, &n1, &d1) !=
            aggregated_calls_general(pl, time_unit::us, &n2, &d2) ||
        n1 != n2 || d1 != d2)
      abort();
    for (int k = 0; k < pl.nargs; ++k) {
      check_inside(line, pl.args_kv[k].key);
      read_value(line, pl.args_kv[k].value);
      is_hash_ref_key(pl.args_kv[k].key);
    }
    return true;
  });
  // The whole input as one number, too (canonical_number is fed quoted texts).
  std::string n;
  if (canonical_number(text, &n) && !is_valid_json_value(n)) abort();
  return 0;
}
