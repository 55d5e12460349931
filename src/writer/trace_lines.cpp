// trace_lines.cpp: metadata lines and the start and end events (trace_lines.hpp).
#include "writer/trace_lines.hpp"

#include <string.h>
#include <cstring>

#include "base/format.hpp"

namespace dftrace::detail {

namespace {

// A metadata line written into memory sized for it beforehand (room()): a string's or the
// caller's (a file's FH line is written at its first open, on the application thread: no
// temporary strings, and none at all through meta_line_into).
class meta_writer {
 public:
  explicit meta_writer(char *at) : p_(at) {}
  meta_writer &lit(std::string_view t) {
    std::memcpy(p_, t.data(), t.size());
    p_ += t.size();
    return *this;
  }
  meta_writer &u64(uint64_t v) {
    p_ = write_u64(p_, v);
    return *this;
  }
  meta_writer &i64(int64_t v) {
    p_ = write_i64(p_, v);
    return *this;
  }
  meta_writer &quoted(std::string_view t) {
    *p_++ = '"';
    p_ = escape_json(p_, t.data(), t.size());
    *p_++ = '"';
    return *this;
  }
  // {"id":..,"name":<type>,"cat":"dftracer","pid":..,"tid":..,"ph":"M","args":{
  meta_writer &head(const line_format &f, uint64_t id, std::string_view type, int64_t tid) {
    return head(f.pid, id, type, tid);
  }
  meta_writer &head(int64_t pid, uint64_t id, std::string_view type, int64_t tid) {
    return lit("{\"id\":")
        .u64(id)
        .lit(",\"name\":")
        .quoted(type)
        .lit(",\"cat\":\"dftracer\",\"pid\":")
        .i64(pid)
        .lit(",\"tid\":")
        .i64(tid)
        .lit(",\"ph\":\"M\",\"args\":{");
  }
  char *end() const { return p_; }
  // Room for the head and what follows: the strings escaped (at most 6 bytes per byte, plus
  // 3 for a replaced invalid byte's U+FFFD: escaped_bound), numbers, punctuation.
  static size_t room(const line_format &f, std::string_view type, size_t rest) {
    return room(f.hhash_field, type, rest);
  }
  static size_t room(std::string_view hhash_field, std::string_view type, size_t rest) {
    return 128 + escaped_bound(type.size()) + hhash_field.size() + rest;
  }

 private:
  char *p_;
};

// A line of at most `room` bytes written by fill(meta_writer &) into a string.
template <typename Fill>
std::string line_string(size_t room, Fill fill) {
  std::string s(room, '\0');
  meta_writer w(s.data());
  fill(w);
  s.resize(static_cast<size_t>(w.end() - s.data()));
  return s;
}

// The body of a metadata line after its head.
void meta_body(meta_writer &w, std::string_view hhash_field, bool with_hhash, std::string_view name,
               std::string_view json_value) {
  if (with_hhash && !hhash_field.empty()) w.lit(hhash_field).lit(",");
  w.lit("\"name\":").quoted(name).lit(",\"value\":").lit(json_value).lit("}}\n");
}

}  // namespace

std::string hhash_member(uint64_t host_hash) { return "\"hhash\":" + std::to_string(host_hash); }

std::string meta_line(const line_format &f, uint64_t id, std::string_view type, int64_t tid,
                      bool with_hhash, std::string_view name, std::string_view json_value) {
  return meta_line(f.pid, f.hhash_field, id, type, tid, with_hhash, name, json_value);
}

std::string meta_line(int64_t pid, std::string_view hhash_field, uint64_t id, std::string_view type,
                      int64_t tid, bool with_hhash, std::string_view name,
                      std::string_view json_value) {
  return line_string(
      meta_writer::room(hhash_field, type, escaped_bound(name.size()) + json_value.size()),
      [&](meta_writer &w) {
        meta_body(w.head(pid, id, type, tid), hhash_field, with_hhash, name, json_value);
      });
}

size_t meta_line_into(char *buf, size_t cap, int64_t pid, std::string_view hhash_field, uint64_t id,
                      std::string_view type, int64_t tid, bool with_hhash, std::string_view name,
                      std::string_view json_value) {
  if (cap < meta_writer::room(hhash_field, type, escaped_bound(name.size()) + json_value.size()))
    return 0;
  meta_writer w(buf);
  meta_body(w.head(pid, id, type, tid), hhash_field, with_hhash, name, json_value);
  return static_cast<size_t>(w.end() - buf);
}

std::string name_line(const line_format &f, uint64_t id, std::string_view type, int64_t tid,
                      std::string_view name, std::string_view core_affinity) {
  return line_string(meta_writer::room(f, type, escaped_bound(name.size()) + core_affinity.size()),
                     [&](meta_writer &w) {
                       w.head(f, id, type, tid).lit("\"name\":").quoted(name);
                       if (!core_affinity.empty()) w.lit(",\"core_affinity\":").lit(core_affinity);
                       w.lit("}}\n");
                     });
}

std::string start_line(const line_format &f, const start_fields &st) {
  char ts[48];
  char *e = format_time(f, ts, st.mono_ns);
  std::string s = "{\"id\":" + std::to_string(st.id) +
                  ",\"name\":\"start\",\"cat\":\"dftracer\",\"pid\":" + std::to_string(f.pid) +
                  ",\"tid\":" + std::to_string(f.pid) + ",\"ts\":" + std::string(ts, e) +
                  ",\"dur\":0,\"ph\":\"X\",\"args\":{";
  if (!f.hhash_field.empty()) s += f.hhash_field + ",";
  s += "\"version\":" + json_quote(st.version) + ",\"date\":" + json_quote(st.date) +
       ",\"ppid\":" + std::to_string(st.ppid) + ",\"exec_hash\":" + std::to_string(st.exec_hash) +
       ",\"cmd_hash\":" + std::to_string(st.cmd_hash) +
       ",\"clock\":\"monotonic\",\"timer_source\":" + (st.tsc ? "\"tsc\"" : "\"monotonic\"") +
       ",\"clock_offset_ns\":" + std::to_string(f.epoch_offset_ns) +
       ",\"time_metric\":" + (f.ns_precision ? "\"ns\"" : "\"us\"");
  if (f.metadata) s += ",\"level\":1,\"p_idx\":-1";
  s += "}}\n";
  return s;
}

size_t end_line_into(const line_format &f, const end_fields &e, char *buf, size_t cap) {
  if (cap < 512 + f.hhash_field.size()) return 0;
  char *p = buf;
  auto lit = [&p](const char *s) {
    const size_t n = std::strlen(s);
    std::memcpy(p, s, n);
    p += n;
  };
  lit("{\"id\":");
  p = write_u64(p, e.id);
  lit(",\"name\":\"end\",\"cat\":\"dftracer\",\"pid\":");
  p = write_i64(p, f.pid);
  lit(",\"tid\":");
  p = write_i64(p, f.pid);
  lit(",\"ts\":");
  p = format_time(f, p, e.mono_ns);
  lit(",\"dur\":0,\"ph\":\"X\",\"args\":{");
  if (!f.hhash_field.empty()) {
    std::memcpy(p, f.hhash_field.data(), f.hhash_field.size());
    p += f.hhash_field.size();
    *p++ = ',';
  }
  lit("\"num_events\":");
  p = write_u64(p, e.events);
  lit(",\"dropped_events\":");
  p = write_u64(p, e.dropped);
  if (e.ring) {
    lit(",\"ring_discarded_events\":");
    p = write_u64(p, e.ring_discarded);
  }
  // The process ends by (or after) this signal: SIGTERM, SIGINT (KeyboardInterrupt), ...
  if (e.signal) {
    lit(",\"signal\":\"SIG");
    const char *abbrev = sigabbrev_np(e.signal);
    lit(abbrev ? abbrev : "UNKNOWN");
    *p++ = '"';
  }
  if (f.metadata) lit(",\"level\":1,\"p_idx\":-1");
  lit("}}\n]\n");
  return static_cast<size_t>(p - buf);
}

size_t trigger_line_into(const line_format &f, const trigger_fields &t, char *buf, size_t cap) {
  const std::string_view reason = t.reason.substr(0, 512);
  const std::string_view source = t.source.substr(0, 64), after = t.after.substr(0, 64);
  const std::string_view direct = t.direct.substr(0, 64);
  if (cap < 256 + f.hhash_field.size() +
                escaped_bound(reason.size() + source.size() + after.size() + direct.size()))
    return 0;
  meta_writer w(buf);
  w.lit(t.end ? "{\"name\":\"trigger_end\"" : "{\"name\":\"trigger\"");
  w.lit(",\"cat\":\"dftracer\",\"pid\":").i64(f.pid);
  w.lit(",\"tid\":").i64(f.pid).lit(",\"ph\":\"M\",\"args\":{");
  if (!f.hhash_field.empty()) w.lit(f.hhash_field).lit(",");
  w.lit("\"name\":").quoted(source).lit(",\"value\":").quoted(reason);
  char *p = w.lit(",\"time\":").end();
  p = format_time(f, p, t.mono_ns);
  meta_writer w2(p);
  p = w2.lit(",\"from\":").end();
  p = format_time(f, p, t.from_ns);
  if (t.to_ns) {
    meta_writer wt(p);
    p = wt.lit(",\"to\":").end();
    p = format_time(f, p, t.to_ns);
  }
  meta_writer w3(p);
  w3.lit(",\"after\":").quoted(after);
  if (!direct.empty()) w3.lit(",\"direct\":").quoted(direct);
  w3.lit("}}\n");
  return static_cast<size_t>(w3.end() - buf);
}

}  // namespace dftrace::detail
