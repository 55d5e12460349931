// fuzz_member.cpp: one gzip member and its DT field, as the planner and the workers read it.
// Input: the bytes of a member (the seeds are real DT members and whole traces). The DT field
// is parsed and the member inflated with it; the result must respect the reader's limit.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "reader/trace_reader.hpp"
#include "writer/gzip_member.hpp"

using namespace dftrace::detail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const bool limited = [] {
    set_max_text_bytes(16u << 20);  // a bomb is cut here, well under libFuzzer's memory limit
    return true;
  }();
  (void)limited;
  dt_field dt;
  const bool has_dt = parse_dt_field(data, size, &dt);
  if (!has_dt) dt = dt_field{};
  // The member as the planner would bound it: the DT compressed length when it fits.
  size_t n = size;
  if (has_dt && dt.compressed_len <= size) n = dt.compressed_len;
  std::unique_ptr<char[]> out;
  size_t len = 0;
  std::vector<read_issue> issues;
  inflate_member(data, n, dt, out, &len, issues, 0);
  if (len > max_text_bytes()) abort();
  if (len && !out) abort();
  // Touch every byte handed out (ASan checks the bounds).
  volatile char sink = 0;
  for (size_t i = 0; i < len; ++i) sink = sink ^ out[i];
  for (const auto &i : issues)
    if (i.message.empty()) abort();
  return 0;
}
