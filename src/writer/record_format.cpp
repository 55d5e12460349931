// record_format.cpp: one binary record -> one JSON line, on the writer thread.
#include <cstring>

#include "core/format.hpp"
#include "writer/record.hpp"

namespace dftrace::detail {

namespace {

template <size_t N>
inline char *put(char *p, const char (&lit)[N]) {
  std::memcpy(p, lit, N - 1);
  return p + N - 1;
}
inline char *put(char *p, std::string_view s) {
  std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

inline char *put_time(const line_format &f, char *p, uint64_t mono) {
  if (!f.ns_precision) return write_u64(p, (mono + f.epoch_offset_ns) / 1000);
  return write_us_fraction(p, mono + f.epoch_offset_ns);
}

// True if some key of `own` may also be a key of `frag` (a substring probe; the exact check
// follows when it says yes).
bool shares_a_key(std::string_view frag, std::string_view own) {
  bool found = false;
  for_each_entry(own, [&](std::string_view key, size_t b, size_t) {
    if (!found) found = frag.find(own.substr(b, key.size() + 3)) != std::string_view::npos;
  });
  return found;
}

// The node's arguments, then the per-use ones, which replace node arguments of the same key.
char *put_args(char *p, bool comma, std::string_view node_args, std::string_view own) {
  if (!node_args.empty()) {
    if (own.empty() || !shares_a_key(node_args, own)) {
      if (comma) *p++ = ',';
      p = put(p, node_args);
      comma = true;
    } else {
      for_each_entry(node_args, [&](std::string_view key, size_t b, size_t e) {
        bool replaced = false;
        for_each_entry(own, [&](std::string_view k2, size_t, size_t) { replaced |= k2 == key; });
        if (replaced) return;
        if (comma) *p++ = ',';
        p = put(p, node_args.substr(b, e - b));
        comma = true;
      });
    }
  }
  if (!own.empty()) {
    if (comma) *p++ = ',';
    p = put(p, own);
  }
  return p;
}

}  // namespace

char *format_record(const line_format &f, const rec &r, char *p, uint64_t *ts_us) {
  const std::string_view node_args(r.node_args(), r.node_args_len);
  const std::string_view own(r.own(), r.own_len);
  *ts_us = (r.start_ns + f.epoch_offset_ns) / 1000;
  if (r.type == rec_type::counter) {  // no id: Perfetto would make one track per sample
    *p++ = '{';
    p = put(p, std::string_view(*r.name_cat).substr(1));
    p = put(p, ",\"pid\":");
    p = write_i64(p, f.pid);
    p = put(p, ",\"tid\":");
    p = write_i64(p, r.tid);
    p = put(p, ",\"ts\":");
    p = put_time(f, p, r.start_ns);
    p = put(p, ",\"ph\":\"C\",\"args\":{");
    p = put(p, own);
    return put(p, "}}\n");
  }
  p = put(p, "{\"id\":");
  p = write_u64(p, r.id);
  p = put(p, *r.name_cat);
  p = put(p, ",\"pid\":");
  p = write_i64(p, f.pid);
  p = put(p, ",\"tid\":");
  p = write_i64(p, r.tid);
  p = put(p, ",\"ts\":");
  p = put_time(f, p, r.start_ns);
  if (r.type == rec_type::complete) {
    p = put(p, ",\"dur\":");
    if (!f.ns_precision) {
      p = write_u64(p, (r.end_ns + f.epoch_offset_ns) / 1000 - *ts_us);
    } else {
      p = write_us_fraction(p, r.end_ns - r.start_ns);
    }
    p = put(p, ",\"ph\":\"X\",\"args\":{");
  } else {
    p = put(p, ",\"ph\":\"i\",\"s\":\"t\",\"args\":{");
  }
  p = put(p, f.hhash_field);
  p = put_args(p, !f.hhash_field.empty(), node_args, own);
  if (r.count) {
    if (!f.hhash_field.empty() || !node_args.empty() || !own.empty()) *p++ = ',';
    p = put(p, "\"count\":");
    p = write_u64(p, r.count);
  }
  if (f.metadata) {
    p = put(p, ",\"level\":");
    p = write_u64(p, r.level);
    p = put(p, ",\"p_idx\":");
    p = write_i64(p, r.parent_id);
  }
  return put(p, "}}\n");
}

}  // namespace dftrace::detail
