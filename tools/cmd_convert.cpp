// cmd_convert.cpp: dftrace convert --to perfetto: one Chrome JSON array (the format the
// Perfetto UI and chrome://tracing import), gzip in a single member when asked.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>

#include "base/format.hpp"
#include "common.hpp"

namespace dftrace::tools {

namespace {

// A value as Chrome JSON wants it: a bare number. Older DFTracer quoted numbers (Perfetto
// drops those); a quoted decimal ("0677792", "+5", "1e5") becomes the same number in valid
// JSON, anything else stays a string ("0x10" is not guessed at). Returns false for a missing
// value or one that is neither a number nor a string.
bool value_json(const jvalue &v, std::string *out, bool *is_number) {
  *is_number = false;
  if (v.type == jtype::number) {  // the parser checked the JSON grammar
    out->assign(v.text);
    *is_number = true;
    return true;
  }
  if (v.type != jtype::string) return false;
  if (detail::canonical_number(v.text, out)) {
    *is_number = true;
    return true;
  }
  out->assign("\"");
  out->append(v.text);  // still escaped: a valid JSON string
  out->push_back('"');
  return true;
}

// ,"key":<value>; a missing value becomes 0 (pid and tid of metadata from older writers).
void put_id(std::string &out, const char *key, const jvalue &v, std::string *written = nullptr) {
  std::string text;
  bool number;
  if (!value_json(v, &text, &number)) text = "0";
  out += ",\"";
  out += key;
  out += "\":";
  out += text;
  if (written) *written = std::move(text);
}

// An event's opening for the viewer: {"name":..[,"cat":..],"ph":..,"pid":..,"tid":..; returns
// the pid as written. `cat`: the line's category, or null for metadata (which has none there).
std::string put_head(std::string &o, const parsed_line &pl, const jvalue *cat,
                     std::string_view ph) {
  o += "{\"name\":\"";
  o.append(pl.name.text);
  if (cat) {
    o += "\",\"cat\":\"";
    if (cat->type == jtype::string) o.append(cat->text);
  }
  o += "\",\"ph\":\"";
  o.append(ph);
  o += "\"";
  std::string pid;
  put_id(o, "pid", pl.pid, &pid);
  put_id(o, "tid", pl.tid);
  return pid;
}

struct convert_result : detail::block_result {
  std::string out;
  uint64_t events = 0, skipped = 0;
  std::set<std::string> named_pids;
  std::map<std::string, std::string> pid_label;  // from PR rank / exec
  std::set<std::string> pids;
};

void convert_block(detail::text_block &b) {
  auto r = std::make_unique<convert_result>();
  parsed_line pl;
  const std::string_view text = b.whole_lines();
  detail::for_each_line(text, [&](std::string_view line) {
    const std::string_view t = trim(line);
    if (t.empty() || t == "[" || t == "]") return true;
    if (!detail::parse_line(line, pl) || pl.ph.type != jtype::string || pl.ph.text.empty() ||
        pl.name.type != jtype::string) {
      ++r->skipped;
      return true;
    }
    const char ph = pl.ph.text[0];
    std::string &o = r->out;
    if (ph == 'M') {
      const bool proc = pl.name.text == "process_name";
      if (proc || pl.name.text == "thread_name") {
        const jvalue *n = pl.arg_value("name");
        if (!n || n->type != jtype::string) return true;
        const std::string pid = put_head(o, pl, nullptr, "M");
        o += ",\"args\":{\"name\":\"";
        o.append(n->text);
        o += "\"}},\n";
        if (proc) r->named_pids.insert(pid);
      } else if (pl.name.text == "PR") {
        const jvalue *n = pl.arg_value("name");
        const jvalue *v = pl.arg_value("value");
        if (n && v && (n->text == "rank" || n->text == "exec")) {
          std::string pid;
          bool number;
          if (!value_json(pl.pid, &pid, &number)) pid = "0";
          std::string &label = r->pid_label[pid];
          if (n->text == "rank")
            label = "rank " + std::string(v->text) + (label.empty() ? "" : " " + label);
          else
            label += (label.empty() ? "" : " ") + std::string(v->text);
        }
      }
      return true;  // other metadata (hash definitions, properties) has no Chrome meaning
    }
    // ts (and dur of a complete event) must be numbers: an event without is skipped and
    // counted, never written with a made-up 0.
    std::string ts, dur;
    bool ts_num = false, dur_num = false;
    if (!value_json(pl.ts, &ts, &ts_num) || !ts_num ||
        (ph == 'X' && pl.dur.present() && (!value_json(pl.dur, &dur, &dur_num) || !dur_num))) {
      ++r->skipped;
      return true;
    }
    const std::string pid = put_head(o, pl, &pl.cat, pl.ph.text);
    o += ",\"ts\":";
    o += ts;
    if (ph == 'X') {
      o += ",\"dur\":";
      o += dur_num ? dur : std::string("0");  // a complete event written without dur
    }
    if (ph != 'C' && pl.id.present()) {  // counters with an id become one track per sample
      o += ",\"id\":";
      if (pl.id.type == jtype::string) o += "\"";
      o.append(pl.id.text);
      if (pl.id.type == jtype::string) o += "\"";
    }
    if (pl.s.type == jtype::string) {
      o += ",\"s\":\"";
      o.append(pl.s.text);
      o += "\"";
    }
    if (pl.args.type == jtype::object) {
      o += ",\"args\":";
      o.append(pl.args.text);
    }
    o += "},\n";
    ++r->events;
    r->pids.insert(pid);
    return true;
  });
  b.result = std::move(r);
}

bool write_file(const std::string &path, const char *p, size_t n, std::string *why) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *why = std::strerror(errno);
    return false;
  }
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      *why = std::strerror(errno);
      ::close(fd);
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  if (::close(fd) != 0) {
    *why = std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace

int cmd_convert(const args_t &a) {
  const std::string to = a.get("--to", "perfetto");
  if (to != "perfetto" && to != "chrome") {
    error_line("convert: --to must be perfetto (Chrome JSON)");
    return 2;
  }
  const std::string out_path = a.output("convert", "OUT.json[.gz]");
  if (out_path.empty()) return 2;
  bool ok = true;
  const std::vector<std::string> files = input_files(a, "convert", &ok);
  if (files.empty()) return 2;
  std::string out = "[\n";
  uint64_t events = 0, skipped = 0;
  std::set<std::string> named, pids;
  std::map<std::string, std::string> labels;
  const detail::read_options opt = tool_read_options();
  for (const auto &path : files) {
    detail::trace_file f;
    if (!open_trace(path, &f, &ok)) continue;
    progress bar("convert", f.size());
    detail::for_each_block(f, opt, convert_block, [&](detail::text_block &b) {
      auto *r = static_cast<convert_result *>(b.result.get());
      out += r->out;
      events += r->events;
      skipped += r->skipped;
      named.insert(r->named_pids.begin(), r->named_pids.end());
      pids.insert(r->pids.begin(), r->pids.end());
      for (auto &kv : r->pid_label) labels[kv.first] = kv.second;
      for (const auto &i : b.issues) {
        error_line(path + ": byte " + std::to_string(i.offset) + ": " + i.message);
        if (i.error) ok = false;
      }
      bar.add(b.in_bytes);
    });
  }
  // Processes without a process_name get one from their rank or exec, so that the UI shows
  // more than a number.
  for (const auto &p : pids) {
    if (named.count(p)) continue;
    if (p.empty() || p[0] == '"') continue;  // a pid that is no number has no made-up name
    auto it = labels.find(p);
    const std::string label = it != labels.end() ? it->second : "pid " + p;
    out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + p +
           ",\"tid\":0,\"args\":{\"name\":" + detail::json_quote(label) + "}},\n";
  }
  if (out.size() > 2) out.resize(out.size() - 2);  // the last ",\n"
  out += "\n]\n";
  std::string why;
  const bool gz = out_path.size() >= 3 && out_path.compare(out_path.size() - 3, 3, ".gz") == 0;
  if (gz) {
    // One gzip member: some viewers read only the first member of a gzip file.
    detail::member_encoder enc(detail::codec_auto(),
                               detail::codec_default_level(detail::codec_auto()));
    std::vector<char> z;
    if (out.size() > 0xFFFFFF00u) {
      error_line("convert: output over 4 GiB; write it uncompressed (-o OUT.json)");
      return 1;
    }
    if (!enc.encode(out.data(), out.size(), detail::scan_member_stats(out.data(), out.size()), z)) {
      error_line("convert: compression failed");
      return 1;
    }
    if (!write_file(out_path, z.data(), z.size(), &why)) {
      error_line(out_path + ": " + why);
      return 1;
    }
  } else if (!write_file(out_path, out.data(), out.size(), &why)) {
    error_line(out_path + ": " + why);
    return 1;
  }
  if (skipped)
    error_line("convert: skipped " + std::to_string(skipped) +
               " lines that are not valid events (run dftrace validate for details)");
  fprintf(stderr, "converted %llu events -> %s\n", static_cast<unsigned long long>(events),
          out_path.c_str());
  return ok ? 0 : 1;
}

}  // namespace dftrace::tools
