// cmd_convert.cpp: dftrace convert --to perfetto: one Chrome JSON array (the format the
// Perfetto UI and chrome://tracing import), gzip in a single member when asked.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <set>
#include <string>

#include "args.hpp"
#include "base/format.hpp"
#include "commands.hpp"
#include "convert.hpp"
#include "inputs.hpp"
#include "lines.hpp"
#include "output/output_file.hpp"
#include "progress.hpp"
#include "reader/aggregated.hpp"

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

// One event for the viewer, its time kept apart: the output is sorted by time and written
// relative to the trace's first event once every file is read.
struct entry {
  uint64_t ts_ns;               // absolute: epoch nanoseconds
  uint64_t dur_ns;              // 0 for events without a duration
  uint64_t seq = 0;             // position in the input (files in order)
  uint32_t level = UINT32_MAX;  // args.level when written (1: top), else unknown
  bool aggregated = false;      // a region made of an aggregated record (aggregated_region)
  uint64_t interval_ns = 0;     // an aggregated record's ts: its interval's start
  std::string track;            // an aggregated record's pid and tid
  std::string head;             // {"name":..,"cat":..,"ph":..,"pid":..,"tid":..
  std::string tail;             // [,"dur":..][,"id":..][,"s":..][,"args":{..}]}
                                // aggregated: the args after interval_ts, then }}
};

// The order of the output: by time, at equal times the longer first, and at equal times and
// durations the outer first (lower level), so that a parent comes before the children that
// start and end with it. Without a level, the later in the input first: a region is written
// when it ends, after the children that end with it; with equal levels (siblings), input order.
bool output_order(const entry &x, const entry &y) {
  if (x.ts_ns != y.ts_ns) return x.ts_ns < y.ts_ns;
  if (x.dur_ns != y.dur_ns) return x.dur_ns > y.dur_ns;
  if (x.level != y.level) return x.level < y.level;
  return x.level == UINT32_MAX ? x.seq > y.seq : x.seq < y.seq;
}

// A ts or dur of a file in unit as integer nanoseconds; false when it is negative or not a
// number. Microseconds may also come as other JSON forms ("1e5"), read through a double.
bool time_ns(const jvalue &v, time_unit unit, uint64_t *ns) {
  if (detail::value_ns(v, unit, ns)) return true;
  if (unit != time_unit::us) return false;
  const std::string us(v.text);
  char *end = nullptr;
  const double d = std::strtod(us.c_str(), &end);
  if (!end || *end || !(d >= 0) || d > 1.8e16) return false;
  *ns = static_cast<uint64_t>(d * 1000.0 + 0.5);
  return true;
}

// Integers a double can not hold exactly (beyond 2^53: hashes, clock offsets) are written as
// strings for the viewer, whose JSON numbers are doubles.
bool beyond_double(const jvalue &v) {
  if (v.type != jtype::number) return false;
  std::string_view t = v.text;
  if (!t.empty() && t[0] == '-') t.remove_prefix(1);
  if (t.size() < 16 || t.find_first_not_of("0123456789") != std::string_view::npos) return false;
  return t.size() > 16 || t > "9007199254740992";
}

// The keys of dftrace's and DFTracer's bookkeeping, which make every event unique to a viewer
// (left out unless --keep-args).
bool bookkeeping(std::string_view key) {
  return key == "level" || key == "p_idx" || key == "hhash";
}

bool g_keep_args = false;

// "key":value,... (no braces) with big integers as strings and (unless kept) no bookkeeping
// keys; each pair is written after a ',', or after `first` for the first one.
std::string args_body(const parsed_line &pl, const char *first) {
  std::string a;
  for (int i = 0; i < pl.nargs; ++i) {
    const auto &kv = pl.args_kv[i];
    if (!g_keep_args && bookkeeping(kv.key)) continue;
    a += a.empty() ? first : ",";
    a += '"';
    a.append(kv.key);
    a += "\":";
    const bool quote = beyond_double(kv.value);
    if (quote) a += '"';
    if (kv.value.type == jtype::string) {
      a += '"';
      a.append(kv.value.text);
      a += '"';
    } else {
      a.append(kv.value.text);
    }
    if (quote) a += '"';
  }
  return a;
}

// ,"args":{...} with big integers as strings and (unless kept) no bookkeeping keys.
void put_args(std::string &o, const parsed_line &pl) {
  if (pl.args.type != jtype::object) return;
  if (pl.args_overflow) {  // too many to rebuild: as they are
    o += ",\"args\":";
    o.append(pl.args.text);
    return;
  }
  const std::string a = args_body(pl, "{");
  if (a.empty()) return;
  o += ",\"args\":";
  o += a;
  o += "}";
}

// The time an aggregated record's calls took together: dur_sum, or for a record of equal calls
// (DFTracer 2.x writes one call's or one value's figure plain) dft_cnt times dur; 0 without
// either. False when the figure is no duration.
bool aggregated_ns(const parsed_line &pl, time_unit unit, uint64_t *ns) {
  *ns = 0;
  if (const jvalue *sum = pl.arg_value("dur_sum")) return time_ns(*sum, unit, ns);
  const jvalue *each = pl.arg_value("dur");
  if (!each) return true;
  uint64_t n = 1;
  if (const jvalue *c = pl.arg_value("dft_cnt"))
    if (!detail::value_u64(*c, &n)) return false;
  return time_ns(*each, unit, ns) && !__builtin_mul_overflow(*ns, n, ns);
}

// An aggregated record as a region that viewers draw (Chrome DevTools and speedscope show no
// counters as regions): as long as its calls took together (aggregated_ns; 1 ns for 0),
// starting at its interval (placed after the previous aggregated region of the thread in the
// consumer), with the record's figures as args after the interval's start (interval_ts, written
// by the consumer). False when its duration is no number (the line is skipped and counted).
bool aggregated_region(const parsed_line &pl, time_unit unit, entry &e) {
  if (!aggregated_ns(pl, unit, &e.dur_ns)) return false;
  if (e.dur_ns == 0) e.dur_ns = 1;
  e.aggregated = true;
  e.interval_ns = e.ts_ns;
  std::string pid, tid;
  bool number;
  if (!value_json(pl.pid, &pid, &number)) pid = "0";
  if (!value_json(pl.tid, &tid, &number)) tid = "0";
  e.track = pid + "," + tid;
  put_head(e.head, pl, &pl.cat, "X");
  const std::string_view args = pl.args.text;  // an object: {...}
  if (pl.args_overflow && args.size() > 2)     // too many to rebuild: as they are
    e.tail.assign(",").append(args.substr(1)).append("}");
  else
    e.tail = args_body(pl, ",") + "}}";
  return true;
}

// Aggregated regions of a thread one after the other from their interval's start, so that the
// records of one interval (one per name) do not stack into each other.
void place_aggregated(std::vector<entry> &entries) {
  std::vector<entry *> agg;
  for (entry &e : entries)
    if (e.aggregated) agg.push_back(&e);
  std::sort(agg.begin(), agg.end(), [](const entry *x, const entry *y) {
    if (x->track != y->track) return x->track < y->track;
    return x->ts_ns != y->ts_ns ? x->ts_ns < y->ts_ns : x->seq < y->seq;
  });
  const std::string *track = nullptr;
  uint64_t free_ns = 0;
  for (entry *e : agg) {
    if (!track || *track != e->track) free_ns = 0;
    track = &e->track;
    e->ts_ns = std::max(e->ts_ns, free_ns);
    free_ns = e->ts_ns + e->dur_ns +
              1;  // a 1 ns gap: viewers order an end and a begin at one time either way
  }
}

struct convert_result : detail::block_result {
  std::string out;  // metadata lines (process and thread names), written first
  std::vector<entry> entries;
  std::set<std::pair<std::string, std::string>> named_threads, threads;  // (pid, tid)
  uint64_t events = 0, skipped = 0;
  std::set<std::string> named_pids;
  std::map<std::string, std::string> pid_label;  // from PR rank / exec
  std::set<std::string> pids;
};

// A metadata line: process and thread names as they are, a process's rank and exec kept for
// the name of a process without one; other metadata (hash definitions, properties) has no
// Chrome meaning.
void convert_metadata(convert_result &r, const parsed_line &pl) {
  const bool proc = pl.name.text == "process_name";
  if (proc || pl.name.text == "thread_name") {
    const jvalue *n = pl.arg_value("name");
    if (!n || n->type != jtype::string) return;
    const std::string pid = put_head(r.out, pl, nullptr, "M");
    r.out += ",\"args\":{\"name\":\"";
    r.out.append(n->text);
    r.out += "\"}},\n";
    if (proc) r.named_pids.insert(pid);
    std::string tid;
    bool number;
    if (!proc && value_json(pl.tid, &tid, &number)) r.named_threads.insert({pid, tid});
    return;
  }
  if (pl.name.text != "PR") return;
  const jvalue *n = pl.arg_value("name");
  const jvalue *v = pl.arg_value("value");
  if (!n || !v || (n->text != "rank" && n->text != "exec")) return;
  std::string pid;
  bool number;
  if (!value_json(pl.pid, &pid, &number)) pid = "0";
  std::string &label = r.pid_label[pid];
  if (n->text == "rank")
    label = "rank " + std::string(v->text) + (label.empty() ? "" : " " + label);
  else
    label += (label.empty() ? "" : " ") + std::string(v->text);
}

// ts (and dur of a complete event) must be numbers: false for an event without (it is skipped
// and counted, never written with a made-up 0). Its level too (parents first at equal times).
bool event_times(const parsed_line &pl, char ph, time_unit unit, entry *e) {
  std::string ts, dur;
  bool ts_num = false, dur_num = false;
  if (!value_json(pl.ts, &ts, &ts_num) || !ts_num ||
      (ph == 'X' && pl.dur.present() && (!value_json(pl.dur, &dur, &dur_num) || !dur_num)))
    return false;
  if (!time_ns(pl.ts, unit, &e->ts_ns)) return false;
  e->dur_ns = 0;
  if (ph == 'X' && dur_num && !time_ns(pl.dur, unit, &e->dur_ns)) return false;
  uint64_t level = 0;
  if (const jvalue *lv = pl.arg_value("level"))
    if (detail::value_u64(*lv, &level) && level < UINT32_MAX)
      e->level = static_cast<uint32_t>(level);
  return true;
}

// An event's head and tail (all but its ts); returns its pid. DFTracer 2.x's integer phases
// become letters. The process's start and end events (dur 0) are marks, not regions: instants
// of the process, so that a viewer does not open a thread that holds nothing else.
std::string event_text(const parsed_line &pl, char ph, entry &e) {
  const bool mark =
      ph == 'X' && pl.cat.text == "dftracer" && (pl.name.text == "start" || pl.name.text == "end");
  const char letter = mark ? 'i' : ph;
  const std::string pid =
      put_head(e.head, pl, &pl.cat,
               pl.ph.type == jtype::string && !mark ? pl.ph.text : std::string_view(&letter, 1));
  std::string &tail = e.tail;
  if (mark) {
    tail += ",\"s\":\"p\"";
    e.dur_ns = 0;
  } else if (ph == 'X') {
    // A region shorter than the trace's unit was written with dur 0. Viewers turn such a
    // region into an end before its own begin (speedscope, chrome://tracing) or drop it: it
    // gets 1 ns, which keeps it visible and inside its parent.
    if (e.dur_ns == 0) e.dur_ns = 1;
    tail += ",\"dur\":";
    tail += us_text(e.dur_ns);
  }
  if (ph != 'C' && pl.id.present()) {  // counters with an id become one track per sample
    tail += ",\"id\":";
    if (pl.id.type == jtype::string) tail += "\"";
    tail.append(pl.id.text);
    if (pl.id.type == jtype::string) tail += "\"";
  }
  if (pl.s.type == jtype::string) {
    tail += ",\"s\":\"";
    tail.append(pl.s.text);
    tail += "\"";
  }
  if (ph == 'C' && pl.args.type == jtype::object) {  // a counter's series: as they are
    tail += ",\"args\":";
    tail.append(pl.args.text);
  } else {
    put_args(tail, pl);
  }
  tail += "}";
  return pid;
}

// The worker: a block's metadata as output text, its events as entries to sort.
void convert_block(detail::text_block &b, time_unit unit) {
  auto r = std::make_unique<convert_result>();
  parsed_line pl;
  for_each_record(b.whole_lines(), pl, &r->skipped, [&](std::string_view, char ph) {
    // DFTracer 2.0.2's aggregated calls are counter lines: aggregated records like "A" ones.
    if (ph == 'C' && detail::is_counter_aggregate(pl)) ph = 'A';
    if (ph == 'M') {
      convert_metadata(*r, pl);
      return true;
    }
    entry e;
    if (!event_times(pl, ph, unit, &e) || (ph == 'A' && !aggregated_region(pl, unit, e))) {
      ++r->skipped;
      return true;
    }
    std::string pid, tid;
    bool number;
    if (ph == 'A') {
      if (!value_json(pl.pid, &pid, &number)) pid = "0";
    } else {
      pid = event_text(pl, ph, e);
    }
    if (value_json(pl.tid, &tid, &number)) {
      r->threads.insert({pid, tid});
      if (ph == 'A') r->pids.insert(pid);
    }
    if (ph != 'A') r->pids.insert(pid);
    r->entries.push_back(std::move(e));
    ++r->events;
    return true;
  });
  b.result = std::move(r);
}

// The whole output at path (created, or truncated), through the tools' output file.
bool write_file(const std::string &path, const char *p, size_t n, std::string *why) {
  detail::output_file f;
  if (!f.create(path, why)) return false;
  const bool ok = f.write(p, n);
  if (!ok) *why = f.failure();
  f.close();
  return ok;
}

// One conversion to Chrome JSON: what the blocks of every input gave, in file order.
struct chrome_job {
  bool ok = true;
  std::string out = "{\"traceEvents\":[\n";
  std::vector<entry> entries;
  uint64_t events = 0, skipped = 0;
  std::set<std::string> named, pids;
  std::set<std::pair<std::string, std::string>> named_threads, threads;
  std::map<std::string, std::string> labels;

  void read(const std::string &path, const detail::read_options &opt) {
    detail::trace_file f;
    if (!open_trace(path, &f, &ok)) return;
    progress bar("convert", f.size());
    const time_unit unit = detail::header_time_unit(f);
    auto work = [unit](detail::text_block &b) { convert_block(b, unit); };
    detail::for_each_block(f, opt, work, [&](detail::text_block &b) {
      auto *r = static_cast<convert_result *>(b.result.get());
      out += r->out;
      for (entry &e : r->entries) {
        e.seq = entries.size();
        entries.push_back(std::move(e));
      }
      events += r->events;
      skipped += r->skipped;
      named.insert(r->named_pids.begin(), r->named_pids.end());
      pids.insert(r->pids.begin(), r->pids.end());
      named_threads.insert(r->named_threads.begin(), r->named_threads.end());
      threads.insert(r->threads.begin(), r->threads.end());
      for (auto &kv : r->pid_label) labels[kv.first] = kv.second;
      for (const auto &i : b.issues) {
        error_line(path + ": byte " + std::to_string(i.offset) + ": " + i.message);
        if (i.error) ok = false;
      }
      bar.add(b.in_bytes);
    });
  }

  // Processes without a process_name get one from their rank or exec, and threads without a
  // thread_name one from their id, so that the UI shows more than numbers.
  void name_the_unnamed() {
    for (const auto &p : pids) {
      if (named.count(p)) continue;
      if (p.empty() || p[0] == '"') continue;  // a pid that is no number has no made-up name
      auto it = labels.find(p);
      const std::string label = it != labels.end() ? it->second : "pid " + p;
      out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + p +
             ",\"tid\":0,\"args\":{\"name\":" + detail::json_quote(label) + "}},\n";
    }
    for (const auto &t : threads) {
      if (named_threads.count(t) || t.first.empty() || t.first[0] == '"' || t.second.empty() ||
          t.second[0] == '"')
        continue;
      const std::string label =
          t.first == t.second ? "main thread " + t.second : "thread " + t.second;
      out += "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + t.first + ",\"tid\":" + t.second +
             ",\"args\":{\"name\":" + detail::json_quote(label) + "}},\n";
    }
  }

  // Times relative to the first event (exact in a viewer's doubles, to the ns); at equal times
  // the longer event first, so that a parent comes before the children that start with it.
  void write_events() {
    uint64_t origin = UINT64_MAX;
    for (const entry &e : entries) origin = std::min(origin, e.ts_ns);
    place_aggregated(entries);
    std::sort(entries.begin(), entries.end(), output_order);
    for (const entry &e : entries) {
      out += e.head;
      out += ",\"ts\":";
      out += us_text(e.ts_ns - origin);
      if (e.aggregated) {
        out += ",\"dur\":";
        out += us_text(e.dur_ns);
        out += ",\"args\":{\"interval_ts\":";
        out += us_text(e.interval_ns - origin);
      }
      out += e.tail;
      out += ",\n";
    }
    if (out.size() > 2 && out.compare(out.size() - 2, 2, ",\n") == 0)
      out.resize(out.size() - 2);  // the last ",\n"
    out += "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"ts_origin_us\":\"" +
           (entries.empty() ? std::string("0") : us_text(origin)) +
           "\",\"source\":\"dftrace convert\"}}\n";
  }
};

// The document at out_path: as it is, or as one gzip member (some viewers read only the first
// member of a gzip file). False after one line.
bool write_document(const std::string &out_path, const std::string &out) {
  std::string why;
  const bool gz = out_path.size() >= 3 && out_path.compare(out_path.size() - 3, 3, ".gz") == 0;
  if (!gz) {
    if (write_file(out_path, out.data(), out.size(), &why)) return true;
    error_line(why);
    return false;
  }
  if (out.size() > 0xFFFFFF00u) {
    error_line("convert: output over 4 GiB; write it uncompressed (-o OUT.json)");
    return false;
  }
  detail::member_encoder enc(detail::codec_auto(),
                             detail::codec_default_level(detail::codec_auto()));
  std::vector<char> z;
  if (!enc.encode(out.data(), out.size(), detail::scan_member_stats(out.data(), out.size()), z)) {
    error_line("convert: compression failed");
    return false;
  }
  if (write_file(out_path, z.data(), z.size(), &why)) return true;
  error_line(why);
  return false;
}

}  // namespace

int cmd_convert(const args_t &a) {
  const std::string to = a.get("--to", "perfetto");
  // dftracer-v2, the name before DFTracer 2.0.2's own form was known, stays for the typed form.
  if (to == "dftracer-2-typed" || to == "dftracer-v2") return convert_dialect(a, dialect::v2_typed);
  if (to == "dftracer-2.0.2") return convert_dialect(a, dialect::v2_0_2);
  if (to == "dftracer" || to == "dftrace") return convert_dialect(a, dialect::dftrace);
  if (to != "perfetto" && to != "chrome") {
    error_line(
        "convert: --to must be perfetto (Chrome JSON), dftracer-2.0.2, dftracer-2-typed "
        "(alias dftracer-v2) or dftracer");
    return 2;
  }
  const std::string out_path = a.output("convert", "OUT.json[.gz]");
  if (out_path.empty()) return 2;
  chrome_job j;
  const std::vector<std::string> files = input_files(a, "convert", &j.ok);
  if (files.empty()) return 2;
  g_keep_args = a.has("--keep-args");
  const detail::read_options opt = tool_read_options();
  for (const auto &path : files) j.read(path, opt);
  j.name_the_unnamed();
  j.write_events();
  if (!write_document(out_path, j.out)) return 1;
  if (j.skipped)
    error_line("convert: skipped " + std::to_string(j.skipped) +
               " lines that are not valid events (run dftrace validate for details)");
  fprintf(stderr, "converted %llu events -> %s\n", static_cast<unsigned long long>(j.events),
          out_path.c_str());
  return j.ok ? 0 : 1;
}

}  // namespace dftrace::tools
