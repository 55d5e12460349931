// trace_lines.cpp: metadata lines and the start and end events (trace_lines.hpp).
#include "writer/trace_lines.hpp"

#include <string.h>
#include <cstring>

#include "base/format.hpp"

namespace dftrace::detail {

namespace {

// {"id":..,"name":<type>,"cat":"dftracer","pid":..,"tid":..,"ph":"M","args":{
std::string meta_head(const line_format &f, uint64_t id, std::string_view type, int64_t tid) {
  std::string s = "{\"id\":" + std::to_string(id) + ",\"name\":" + json_quote(type) +
                  ",\"cat\":\"dftracer\",\"pid\":" + std::to_string(f.pid) +
                  ",\"tid\":" + std::to_string(tid) + ",\"ph\":\"M\",\"args\":{";
  return s;
}

}  // namespace

std::string hhash_member(uint64_t host_hash) { return "\"hhash\":" + std::to_string(host_hash); }

std::string meta_line(const line_format &f, uint64_t id, std::string_view type, int64_t tid,
                      bool with_hhash, std::string_view name, std::string_view json_value) {
  std::string s = meta_head(f, id, type, tid);
  if (with_hhash && !f.hhash_field.empty()) s += f.hhash_field + ",";
  s += "\"name\":" + json_quote(name) + ",\"value\":";
  s += json_value;
  s += "}}\n";
  return s;
}

std::string name_line(const line_format &f, uint64_t id, std::string_view type, int64_t tid,
                      std::string_view name, std::string_view core_affinity) {
  std::string s = meta_head(f, id, type, tid) + "\"name\":" + json_quote(name);
  if (!core_affinity.empty()) {
    s += ",\"core_affinity\":";
    s += core_affinity;
  }
  s += "}}\n";
  return s;
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

}  // namespace dftrace::detail
