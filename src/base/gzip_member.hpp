// gzip_member.hpp: one self-describing gzip member (RFC 1952 with the DT extra field) per call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dftrace::detail {

// Layout of the DT subfield (docs/format.md section 3), all little-endian.
inline constexpr uint8_t k_dt_version = 1;
inline constexpr size_t k_dt_payload = 1 + 4 + 4 + 4 + 8 + 8;         // 29
inline constexpr size_t k_member_header = 10 + 2 + 4 + k_dt_payload;  // 45
inline constexpr size_t k_member_trailer = 8;

// What the DT field says about a member's text.
struct member_stats {
  uint32_t lines = 0;
  uint64_t ts_min = 0;  // 0/0 when no line has a ts
  uint64_t ts_max = 0;

  // Widens [ts_min, ts_max] to hold [lo, hi]. `seen` says whether the range holds a ts yet
  // (0/0 is a real range too) and is set. The one place the range is folded.
  void add_ts(uint64_t lo, uint64_t hi, bool &seen) {
    if (!seen || lo < ts_min) ts_min = lo;
    if (!seen || hi > ts_max) ts_max = hi;
    seen = true;
  }
  void add_ts(uint64_t ts, bool &seen) { add_ts(ts, ts, seen); }
};

// Parsed DT field of a member header, for readers.
struct dt_field {
  uint8_t version = 0;
  uint32_t compressed_len = 0;
  uint32_t uncompressed_len = 0;
  uint32_t lines = 0;
  uint64_t ts_min = 0;
  uint64_t ts_max = 0;
};

enum class codec { zlib = 0, isal = 1, libdeflate = 2 };

// The codecs this build can use, and the one "auto" picks (the fastest available).
bool codec_available(codec c);
codec codec_auto();
const char *codec_name(codec c);
bool codec_from_name(const std::string &name, codec *out);  // "zlib", "isal", "libdeflate"
// Levels each codec accepts, and its default (chosen by bench/compression_bench).
int codec_min_level(codec c);
int codec_max_level(codec c);
int codec_default_level(codec c);

// Compresses whole lines into gzip members. Holds its compressor state, so one encoder is
// used by one thread at a time. Allocation happens only when the output grows.
class member_encoder {
 public:
  member_encoder(codec c, int level);
  ~member_encoder();
  member_encoder(const member_encoder &) = delete;
  member_encoder &operator=(const member_encoder &) = delete;

  // Appends one member holding text[0..len) to out. Returns false if compression failed
  // (out is left as it was).
  bool encode(const char *text, size_t len, const member_stats &stats, std::vector<char> &out);
  // The same into the encoder's own buffer (valid until the next call): no allocation once
  // reserve() covered the size. For the fatal-signal path.
  bool encode_in_place(const char *text, size_t len, const member_stats &stats, const char **member,
                       size_t *member_len);
  // Makes room so that members of up to text_bytes of text need no allocation.
  void reserve(size_t text_bytes);
  // True if a member of len bytes of text is encoded in place without allocating.
  bool fits_in_place(size_t len) const;

 private:
  struct state;
  codec codec_;
  int level_;
  std::unique_ptr<state> state_;
};

// Reads the DT field from a member header at p (n bytes available). Returns false when the
// header is not a gzip header with a DT subfield.
bool parse_dt_field(const uint8_t *p, size_t n, dt_field *out);

// Scans text for lines and their "ts" values (slow path: used when a block's statistics
// are not known from the producer). ts_per_us: 1000 when the text's times are nanoseconds
// (the DT field holds microseconds either way).
member_stats scan_member_stats(const char *text, size_t len, uint64_t ts_per_us = 1);

}  // namespace dftrace::detail
