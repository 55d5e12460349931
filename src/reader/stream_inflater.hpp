// stream_inflater.hpp: one gzip stream inflated step by step (ISA-L or zlib), for the readers
// that go through a stream a step at a time (block_reader.cpp, time_unit.cpp).
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#ifdef DFTRACE_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

namespace dftrace::detail {

// One gzip stream, inflated step by step: ISA-L's inflate when present (about twice as
// fast as zlib's), zlib otherwise.
class stream_inflater {
 public:
  enum result { progress, member_end, stalled, failed };

  stream_inflater() {
#ifdef DFTRACE_HAVE_ISAL
    if (!std::getenv("DFTRACE_READER_ZLIB")) {
      use_isal_ = true;
      reset();
      return;
    }
#endif
    zlib_ok_ = inflateInit2(&zs_, 15 + 16) == Z_OK;
  }
  ~stream_inflater() {
    if (zlib_ok_) inflateEnd(&zs_);
  }
  stream_inflater(const stream_inflater &) = delete;
  stream_inflater &operator=(const stream_inflater &) = delete;
  bool ok() const { return use_isal_ || zlib_ok_; }

  // Begins a new gzip member.
  void reset() {
#ifdef DFTRACE_HAVE_ISAL
    if (use_isal_) {
      isal_inflate_init(&st_);
      st_.crc_flag = ISAL_GZIP;
      return;
    }
#endif
    inflateReset(&zs_);
  }

  // Inflates from in[0..n_in) into out[0..n_out); says how much it took and gave.
  result run(const uint8_t *in, size_t n_in, char *out, size_t n_out, size_t *consumed,
             size_t *produced, std::string *why) {
    const uint32_t ni = static_cast<uint32_t>(std::min<size_t>(n_in, 1u << 30));
    const uint32_t no = static_cast<uint32_t>(std::min<size_t>(n_out, 1u << 30));
#ifdef DFTRACE_HAVE_ISAL
    if (use_isal_) {
      st_.next_in = const_cast<uint8_t *>(in);
      st_.avail_in = ni;
      st_.next_out = reinterpret_cast<uint8_t *>(out);
      st_.avail_out = no;
      const int r = isal_inflate(&st_);
      *consumed = ni - st_.avail_in;
      *produced = no - st_.avail_out;
      if (r < 0) {
        *why = r == ISAL_INCORRECT_CHECKSUM ? "wrong checksum" : "invalid deflate data";
        return failed;
      }
      if (st_.block_state == ISAL_BLOCK_FINISH) return member_end;
      return (*consumed || *produced) ? progress : stalled;
    }
#endif
    zs_.next_in = const_cast<Bytef *>(in);
    zs_.avail_in = ni;
    zs_.next_out = reinterpret_cast<Bytef *>(out);
    zs_.avail_out = no;
    const int r = inflate(&zs_, Z_NO_FLUSH);
    *consumed = ni - zs_.avail_in;
    *produced = no - zs_.avail_out;
    if (r == Z_STREAM_END) return member_end;
    if (r == Z_OK) return progress;
    if (r == Z_BUF_ERROR) return (*consumed || *produced) ? progress : stalled;
    *why = zs_.msg ? zs_.msg : "zlib error";
    return failed;
  }

 private:
  bool use_isal_ = false;
  bool zlib_ok_ = false;
  z_stream zs_{};
#ifdef DFTRACE_HAVE_ISAL
  inflate_state st_{};
#endif
};

}  // namespace dftrace::detail
