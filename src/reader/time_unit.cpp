// time_unit.cpp: the unit of a trace's times (time_unit.hpp).
#include "reader/time_unit.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "reader/stream_inflater.hpp"

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

// One member after another, inflated into a buffer of k_scan_bytes by steps; *len the text.
std::unique_ptr<char[]> inflate_start(const uint8_t *p, size_t n, size_t *len) {
  std::unique_ptr<char[]> out(new char[k_scan_bytes]);
  *len = 0;
  stream_inflater inf;
  if (!inf.ok()) return out;
  size_t pos = 0, used = 0, lines = 0;
  std::string why;
  while (used < k_scan_bytes && lines < static_cast<size_t>(k_scan_lines)) {
    size_t consumed = 0, got = 0;
    const stream_inflater::result r =
        inf.run(p + pos, n - pos, out.get() + used, std::min(k_scan_step, k_scan_bytes - used),
                &consumed, &got, &why);
    pos += consumed;
    lines += count_lines(out.get() + used, got);
    used += got;
    if (r == stream_inflater::member_end) {
      if (pos >= n) break;
      inf.reset();  // the next member, if any
      continue;
    }
    // damage (or no progress: the input ends): what came before it is still scanned
    if (r != stream_inflater::progress) break;
  }
  *len = used;
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
