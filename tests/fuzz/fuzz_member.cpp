// fuzz_member.cpp: one gzip member and its DT field, as the planner and the workers read it.
// Two passes over each input:
// 1. the bytes as a member (the seeds are real DT members and whole traces): the DT field is
//    parsed and the member inflated with it; the result must respect the reader's limit;
// 2. the bytes after the first five as the text of a valid member (written by the library's
//    encoder) whose DT uncompressed length is then forged from the first four bytes (and,
//    when the fifth byte is odd, the gzip trailer's length too): the text must come back
//    exactly with one issue when only the DT field lies, and the member must be reported
//    damaged when the trailer lies too. Random mutation alone rarely keeps a member's CRC
//    intact, so this pass is what reaches the fast path with forged hints.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include <cstring>
#include <string>

#include "base/gzip_member.hpp"
#include "reader/trace_reader.hpp"

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

  if (size < 5) return 0;
  static member_encoder enc(codec_auto(), codec_default_level(codec_auto()));
  const char *text = reinterpret_cast<const char *>(data + 5);
  const size_t text_len = size - 5;
  std::vector<char> m;
  if (!enc.encode(text, text_len, scan_member_stats(text, text_len), m)) abort();
  dt_field real;
  if (!parse_dt_field(reinterpret_cast<const uint8_t *>(m.data()), m.size(), &real)) abort();
  if (real.uncompressed_len != text_len || real.compressed_len != m.size()) abort();
  uint32_t forged;
  std::memcpy(&forged, data, 4);
  const bool trailer_too = data[4] & 1;
  if (trailer_too) std::memcpy(m.data() + m.size() - 4, &forged, 4);
  dt_field f = real;
  f.uncompressed_len = forged;
  issues.clear();
  const bool ok = inflate_member(reinterpret_cast<const uint8_t *>(m.data()), m.size(), f, out,
                                 &len, issues, 0);
  const bool lies = forged != text_len;
  if (!lies || !trailer_too) {  // the deflate data and its trailer are intact
    if (!ok || len != text_len || std::memcmp(out.get(), text, len) != 0) abort();
    if (issues.size() != (lies ? 1u : 0u)) abort();
  } else if (ok) {
    abort();  // the trailer's length disagrees with the data: damage, reported
  }
  return 0;
}
