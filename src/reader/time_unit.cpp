// time_unit.cpp: the unit of a trace's times (time_unit.hpp).
#include "reader/time_unit.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#ifdef DFTRACE_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

namespace dftrace::detail {

namespace {

constexpr size_t k_scan_bytes = 1u << 20;
constexpr int k_scan_lines = 512;

bool unit_named(const jvalue &v, time_unit *u) {
  if (v.type != jtype::string) return false;
  if (v.text == "ns" || v.text == "NS") {
    *u = time_unit::ns;
    return true;
  }
  if (v.text == "us" || v.text == "US") {
    *u = time_unit::us;
    return true;
  }
  return false;
}

// The text a gzip stream starts with (one member or several in a row), inflated a step at a
// time until it holds k_scan_lines whole lines or k_scan_bytes: the scan looks no further, and a
// DFTracer trace is one member of megabytes, so inflating a fixed size costs more than reading it.
// ISA-L inflates where it is built in (several times zlib's speed); the buffer is not
// zero-filled first and its lines are counted with memchr. Damage stops the scan: what came
// before it is still scanned, and the read that follows reports it.
constexpr size_t k_scan_step = 16u << 10;

size_t count_lines(const char *p, size_t n) {
  size_t lines = 0;
  for (const char *end = p + n; (p = static_cast<const char *>(std::memchr(p, '\n', end - p))); ++p)
    ++lines;
  return lines;
}

// One member after another, inflated into out (k_scan_bytes of room) by steps; *len the text.
#ifdef DFTRACE_HAVE_ISAL
void inflate_start_isal(const uint8_t *p, size_t n, char *out, size_t *len) {
  inflate_state st;
  isal_inflate_init(&st);
  st.crc_flag = ISAL_GZIP;
  st.next_in = const_cast<uint8_t *>(p);
  st.avail_in = static_cast<uint32_t>(std::min<size_t>(n, 1u << 30));
  size_t used = 0, lines = 0;
  while (used < k_scan_bytes && lines < static_cast<size_t>(k_scan_lines)) {
    st.next_out = reinterpret_cast<uint8_t *>(out + used);
    st.avail_out = static_cast<uint32_t>(std::min(k_scan_step, k_scan_bytes - used));
    const uint32_t room = st.avail_out;
    const int rc = isal_inflate(&st);
    const size_t got = room - st.avail_out;
    lines += count_lines(out + used, got);
    used += got;
    if (rc != ISAL_DECOMP_OK) break;  // damage: what came before it is still scanned
    if (st.block_state == ISAL_BLOCK_FINISH) {
      if (st.avail_in == 0) break;
      const uint8_t *next = st.next_in;  // the next member, if any
      const uint32_t left = st.avail_in;
      isal_inflate_init(&st);
      st.crc_flag = ISAL_GZIP;
      st.next_in = const_cast<uint8_t *>(next);
      st.avail_in = left;
      continue;
    }
    if (got == 0 && st.avail_out > 0) break;  // no progress: the input ends
  }
  *len = used;
}
#endif

void inflate_start_zlib(const uint8_t *p, size_t n, char *out, size_t *len) {
  *len = 0;
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return;
  zs.next_in = const_cast<Bytef *>(p);
  zs.avail_in = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
  size_t used = 0, lines = 0;
  while (used < k_scan_bytes && lines < static_cast<size_t>(k_scan_lines)) {
    zs.next_out = reinterpret_cast<Bytef *>(out + used);
    zs.avail_out = static_cast<uInt>(std::min(k_scan_step, k_scan_bytes - used));
    const size_t room = zs.avail_out;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    const size_t got = room - zs.avail_out;
    lines += count_lines(out + used, got);
    used += got;
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0 || inflateReset(&zs) != Z_OK) break;  // the next member, if any
      continue;
    }
    if (rc != Z_OK) break;  // damage (or no progress): what came before it is still scanned
  }
  inflateEnd(&zs);
  *len = used;
}

std::unique_ptr<char[]> inflate_start(const uint8_t *p, size_t n, size_t *len) {
  std::unique_ptr<char[]> out(new char[k_scan_bytes]);
#ifdef DFTRACE_HAVE_ISAL
  if (!std::getenv("DFTRACE_READER_ZLIB")) {
    inflate_start_isal(p, n, out.get(), len);
    return out;
  }
#endif
  inflate_start_zlib(p, n, out.get(), len);
  return out;
}

}  // namespace

bool declares_time_unit(const parsed_line &pl, time_unit *u) {
  if (pl.name.text == "PR") {
    const jvalue *n = pl.arg_value("name");
    const jvalue *v = pl.arg_value("value");
    return n && v && n->text == "time_metric" && unit_named(*v, u);
  }
  if (pl.name.text == "start" && pl.cat.text == "dftracer") {
    const jvalue *v = pl.arg_value("time_metric");
    return v && unit_named(*v, u);
  }
  return false;
}

time_unit header_time_unit(const trace_file &f, size_t *scanned_bytes) {
  if (scanned_bytes) *scanned_bytes = 0;
  if (f.parts().empty()) return time_unit::us;
  const planned_part &first = f.parts().front();
  const uint8_t *p = f.data() + first.offset;
  // Members in a row are inflated one after the other, up to the scan's limit.
  const size_t n = static_cast<size_t>(f.size() - std::min<uint64_t>(first.offset, f.size()));
  std::unique_ptr<char[]> inflated;
  std::string_view text;
  if (first.kind == planned_part::plain) {
    text = std::string_view(reinterpret_cast<const char *>(p), std::min(n, k_scan_bytes));
  } else {
    size_t len = 0;
    inflated = inflate_start(p, n, &len);
    text = std::string_view(inflated.get(), len);
  }
  if (scanned_bytes) *scanned_bytes = text.size();
  time_unit u = time_unit::us;
  bool found = false;
  int lines = 0;
  parsed_line pl;
  for_each_line(text, [&](std::string_view line) {
    if (++lines > k_scan_lines) return false;
    if (line.find("time_metric") == std::string_view::npos) return true;
    found = parse_line(line, pl) && declares_time_unit(pl, &u);
    return !found;
  });
  return u;
}

}  // namespace dftrace::detail
