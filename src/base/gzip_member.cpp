// gzip_member.cpp: deflate through ISA-L, libdeflate or zlib, framed as a gzip member with DT.
#include "base/gzip_member.hpp"

#include <zlib.h>

#include <cstring>

#ifdef DFTRACE_HAVE_ISAL
#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>
#endif
#ifdef DFTRACE_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

namespace dftrace::detail {

namespace {

void put_u16(uint8_t *p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint16_t get_u16(const uint8_t *p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t get_u32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

struct member_encoder::state {
  // Output scratch, grown on demand and never zero-filled (a vector::resize would memset the
  // whole bound on every member).
  std::unique_ptr<uint8_t[]> buf;
  size_t cap = 0;
  z_stream zs{};
  bool zs_ready = false;
#ifdef DFTRACE_HAVE_ISAL
  // Zero-filled at the encoder's first member, not here: isal_deflate_stateless_init leaves
  // fields the stateless call reads (valgrind), but the stream is 80 KiB, cleared and faulted
  // in for each encoder, the signal path's (which usually never compresses) included.
  isal_zstream isal;
  bool isal_cleared = false;
  // ISA-L's working memory for levels 1 to 3 (hundreds of KiB): not zero-filled here (ISA-L
  // initialises what it uses), so that an encoder costs no page until it compresses (the
  // signal path's, reserved in every process, usually never does).
  std::unique_ptr<uint8_t[]> isal_level_buf;
  uint32_t isal_level_bytes = 0;
#endif
#ifdef DFTRACE_HAVE_LIBDEFLATE
  libdeflate_compressor *ld = nullptr;
#endif
};

bool codec_available(codec c) {
  switch (c) {
    case codec::zlib: return true;
    case codec::isal:
#ifdef DFTRACE_HAVE_ISAL
      return true;
#else
      return false;
#endif
    case codec::libdeflate:
#ifdef DFTRACE_HAVE_LIBDEFLATE
      return true;
#else
      return false;
#endif
  }
  return false;
}

codec codec_auto() {
  if (codec_available(codec::isal)) return codec::isal;
  if (codec_available(codec::libdeflate)) return codec::libdeflate;
  return codec::zlib;
}

const char *codec_name(codec c) {
  switch (c) {
    case codec::zlib: return "zlib";
    case codec::isal: return "isal";
    case codec::libdeflate: return "libdeflate";
  }
  return "?";
}

bool codec_from_name(const std::string &name, codec *out) {
  for (codec c : {codec::zlib, codec::isal, codec::libdeflate}) {
    if (name == codec_name(c)) {
      *out = c;
      return true;
    }
  }
  return false;
}

int codec_min_level(codec c) { return c == codec::isal ? 0 : 1; }
int codec_max_level(codec c) {
  switch (c) {
    case codec::zlib: return 9;
    case codec::isal: return 3;
    case codec::libdeflate: return 12;
  }
  return 9;
}
int codec_default_level(codec c) {
  // Chosen by bench/compression_bench (bench/RESULTS.md): the fastest level whose output
  // stays under 20 bytes per typical event.
  switch (c) {
    case codec::zlib: return 1;
    case codec::isal: return 1;
    case codec::libdeflate: return 1;
  }
  return 1;
}

member_encoder::member_encoder(codec c, int level)
    : codec_(codec_available(c) ? c : codec::zlib), level_(level), state_(new state) {
  if (level_ < codec_min_level(codec_) || level_ > codec_max_level(codec_))
    level_ = codec_default_level(codec_);
  switch (codec_) {
    case codec::zlib:
      if (deflateInit2(&state_->zs, level_, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK)
        state_->zs_ready = true;
      break;
    case codec::isal:
#ifdef DFTRACE_HAVE_ISAL
    {
      static const uint32_t sizes[] = {ISAL_DEF_LVL0_DEFAULT, ISAL_DEF_LVL1_DEFAULT,
                                       ISAL_DEF_LVL2_DEFAULT, ISAL_DEF_LVL3_DEFAULT};
      state_->isal_level_bytes = sizes[level_];
      if (state_->isal_level_bytes) state_->isal_level_buf.reset(new uint8_t[sizes[level_]]);
    }
#endif
    break;
    case codec::libdeflate:
#ifdef DFTRACE_HAVE_LIBDEFLATE
      state_->ld = libdeflate_alloc_compressor(level_);
#endif
      break;
  }
}

member_encoder::~member_encoder() {
  if (state_->zs_ready) deflateEnd(&state_->zs);
#ifdef DFTRACE_HAVE_LIBDEFLATE
  if (state_->ld) libdeflate_free_compressor(state_->ld);
#endif
}

namespace {
// The room a member of len bytes of text needs: deflate's worst case is a little over the
// input (stored blocks add 5 bytes per 64 KiB), with the header and trailer.
size_t member_room(size_t len) { return k_member_header + len + len / 8 + 1024 + k_member_trailer; }

// The gzip CRC-32 of the text, by the fastest library built in.
uint32_t text_crc(const char *text, size_t len) {
#ifdef DFTRACE_HAVE_ISAL
  return crc32_gzip_refl(0, reinterpret_cast<const unsigned char *>(text), len);
#elif defined(DFTRACE_HAVE_LIBDEFLATE)
  return libdeflate_crc32(0, text, len);
#else
  return static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef *>(text), static_cast<uInt>(len)));
#endif
}

// The member's fixed header and its DT field (docs/format.md section 3): magic, deflate,
// FEXTRA, mtime 0, xfl 0, os 3 (Unix); then the member's and the text's lengths, lines and
// time range.
void put_member_header(uint8_t *base, size_t total, size_t len, const member_stats &stats) {
  base[0] = 0x1f;
  base[1] = 0x8b;
  base[2] = 8;
  base[3] = 0x04;
  put_u32(base + 4, 0);
  base[8] = 0;
  base[9] = 3;
  put_u16(base + 10, static_cast<uint16_t>(4 + k_dt_payload));
  base[12] = 'D';
  base[13] = 'T';
  put_u16(base + 14, static_cast<uint16_t>(k_dt_payload));
  uint8_t *dt = base + 16;
  dt[0] = k_dt_version;
  put_u32(dt + 1, static_cast<uint32_t>(total));
  put_u32(dt + 5, static_cast<uint32_t>(len));
  put_u32(dt + 9, stats.lines);
  put_u64(dt + 13, stats.ts_min);
  put_u64(dt + 21, stats.ts_max);
}
}  // namespace

void member_encoder::reserve(size_t text_bytes) {
  const size_t need = member_room(text_bytes);
  if (state_->cap < need) {
    state_->buf.reset(new uint8_t[need]);
    state_->cap = need;
  }
}

bool member_encoder::fits_in_place(size_t len) const { return state_->cap >= member_room(len); }

bool member_encoder::encode(const char *text, size_t len, const member_stats &stats,
                            std::vector<char> &out) {
  const char *m;
  size_t n;
  if (!encode_in_place(text, len, stats, &m, &n)) return false;
  out.insert(out.end(), m, m + n);
  return true;
}

bool member_encoder::encode_in_place(const char *text, size_t len, const member_stats &stats,
                                     const char **member, size_t *member_len) {
  if (len > 0xFFFFFFFFu - 1024) return false;  // the DT lengths are 32-bit
  const size_t bound = member_room(len) - k_member_header - k_member_trailer;
  reserve(len);
  uint8_t *base = state_->buf.get();
  uint8_t *body = base + k_member_header;
  size_t body_len = 0;
  bool ok = false;
  switch (codec_) {
    case codec::zlib: {
      if (!state_->zs_ready) break;
      z_stream &zs = state_->zs;
      deflateReset(&zs);
      zs.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(text));
      zs.avail_in = static_cast<uInt>(len);
      zs.next_out = body;
      zs.avail_out = static_cast<uInt>(bound);
      ok = deflate(&zs, Z_FINISH) == Z_STREAM_END;
      body_len = zs.total_out;
      break;
    }
    case codec::isal: {
#ifdef DFTRACE_HAVE_ISAL
      isal_zstream &zs = state_->isal;
      if (!state_->isal_cleared) {
        std::memset(static_cast<void *>(&zs), 0, sizeof zs);
        state_->isal_cleared = true;
      }
      isal_deflate_stateless_init(&zs);
      zs.level = static_cast<uint32_t>(level_);
      zs.level_buf = state_->isal_level_buf.get();
      zs.level_buf_size = state_->isal_level_bytes;
      zs.gzip_flag = IGZIP_DEFLATE;
      zs.end_of_stream = 1;
      zs.flush = NO_FLUSH;
      zs.next_in = reinterpret_cast<uint8_t *>(const_cast<char *>(text));
      zs.avail_in = static_cast<uint32_t>(len);
      zs.next_out = body;
      zs.avail_out = static_cast<uint32_t>(bound);
      ok = isal_deflate_stateless(&zs) == COMP_OK;
      body_len = zs.total_out;
#endif
      break;
    }
    case codec::libdeflate: {
#ifdef DFTRACE_HAVE_LIBDEFLATE
      if (!state_->ld) break;
      body_len = libdeflate_deflate_compress(state_->ld, text, len, body, bound);
      ok = body_len > 0 || len == 0;
      if (len == 0 && body_len == 0) {  // an empty final stored block
        body[0] = 0x03;
        body[1] = 0x00;
        body_len = 2;
      }
#endif
      break;
    }
  }
  if (!ok) return false;
  const size_t total = k_member_header + body_len + k_member_trailer;
  put_member_header(base, total, len, stats);
  uint8_t *trailer = body + body_len;
  put_u32(trailer, text_crc(text, len));
  put_u32(trailer + 4, static_cast<uint32_t>(len));
  *member = reinterpret_cast<const char *>(base);
  *member_len = total;
  return true;
}

bool parse_dt_field(const uint8_t *p, size_t n, dt_field *out) {
  if (n < 12 || p[0] != 0x1f || p[1] != 0x8b || p[2] != 8 || !(p[3] & 0x04)) return false;
  const size_t xlen = get_u16(p + 10);
  if (n < 12 + xlen) return false;
  size_t off = 12;
  const size_t end = 12 + xlen;
  while (off + 4 <= end) {
    const uint16_t sublen = get_u16(p + off + 2);
    if (off + 4 + sublen > end) return false;
    if (p[off] == 'D' && p[off + 1] == 'T' && sublen >= k_dt_payload) {
      const uint8_t *d = p + off + 4;
      out->version = d[0];
      out->compressed_len = get_u32(d + 1);
      out->uncompressed_len = get_u32(d + 5);
      out->lines = get_u32(d + 9);
      out->ts_min = get_u64(d + 13);
      out->ts_max = get_u64(d + 21);
      return true;
    }
    off += 4 + sublen;
  }
  return false;
}

member_stats scan_member_stats(const char *text, size_t len, uint64_t ts_per_us) {
  member_stats st;
  const char *p = text;
  const char *end = text + len;
  bool any = false;
  while (p < end) {
    const char *nl = static_cast<const char *>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    const char *line_end = nl ? nl : end;
    ++st.lines;
    // Our own lines carry "ts": once, at top level, before "args".
    const char *args = nullptr;
    for (const char *q = p; q + 7 <= line_end; ++q) {
      if (q[0] == '"' && q[1] == 'a' && std::memcmp(q, "\"args\":", 7) == 0) {
        args = q;
        break;
      }
    }
    const char *limit = args ? args : line_end;
    for (const char *q = p; q + 5 <= limit; ++q) {
      if (q[0] == '"' && q[1] == 't' && std::memcmp(q, "\"ts\":", 5) == 0) {
        uint64_t v = 0;
        const char *d = q + 5;
        while (d < limit && *d >= '0' && *d <= '9') v = v * 10 + static_cast<uint64_t>(*d++ - '0');
        st.add_ts(v / ts_per_us, any);
        break;
      }
    }
    if (!nl) break;
    p = nl + 1;
  }
  return st;
}

}  // namespace dftrace::detail
