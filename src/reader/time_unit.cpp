// time_unit.cpp: the unit of a trace's times (time_unit.hpp).
#include "reader/time_unit.hpp"

#include <zlib.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>

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
constexpr size_t k_scan_step = 16u << 10;

std::string inflate_start(const uint8_t *p, size_t n) {
  std::string out;
  out.reserve(k_scan_bytes);  // untouched room: no copies as it grows
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return {};
  zs.next_in = const_cast<Bytef *>(p);
  zs.avail_in = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
  size_t lines = 0;
  while (out.size() < k_scan_bytes && lines < static_cast<size_t>(k_scan_lines)) {
    const size_t before = out.size();
    out.resize(std::min(before + k_scan_step, k_scan_bytes));
    zs.next_out = reinterpret_cast<Bytef *>(out.data() + before);
    zs.avail_out = static_cast<uInt>(out.size() - before);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    out.resize(out.size() - zs.avail_out);
    lines += static_cast<size_t>(std::count(out.begin() + before, out.end(), '\n'));
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0 || inflateReset(&zs) != Z_OK) break;  // the next member, if any
      continue;
    }
    if (rc != Z_OK) break;  // damage (or no progress): what came before it is still scanned
  }
  inflateEnd(&zs);
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
  std::string inflated;
  std::string_view text;
  if (first.kind == planned_part::plain) {
    text = std::string_view(reinterpret_cast<const char *>(p), std::min(n, k_scan_bytes));
  } else {
    inflated = inflate_start(p, n);
    text = inflated;
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
