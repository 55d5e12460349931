// convert_dialect.cpp: dftrace convert --to dftracer-2.0.2 | dftracer-2-typed | dftracer: a
// trace rewritten line by line in one of DFTracer 2.x's dialects, or back into dftrace's
// (DFTracer 1.x's) (tools/README.md).
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "args.hpp"
#include "base/format.hpp"
#include "convert.hpp"
#include "inputs.hpp"
#include "lines.hpp"
#include "output/member_stream.hpp"
#include "reader/aggregated.hpp"
#include "reader/json_string.hpp"

namespace dftrace::tools {

namespace {

// DFTracer 2.x's "type": the instrumentation layer, from the category (docs/format.md
// section 4). dftrace's own annotations (the AI tree, C, C++, Python and Fortran alike) are
// C_APP: the trace does not say which face made them.
int layer_of(std::string_view cat) {
  if (cat == "dftracer") return 1;
  if (cat == "POSIX" || cat == "STDIO") return 3;
  if (cat == "H5" || cat == "HDF5") return 5;
  if (cat == "CPP_APP") return 9;
  if (cat == "MPI" || cat == "MPIIO") return 10;
  if (cat == "sys" || cat == "net" || cat == "io") return 7;
  return 2;
}

bool is_hex16(std::string_view s) {
  if (s.size() != 16) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

void put_value(std::string &o, const jvalue &v) {
  if (v.type == jtype::string) {
    o += '"';
    o.append(v.text);
    o += '"';
  } else {
    o.append(v.text);
  }
}

// `head` and the value as written, or 0 when the line has none.
void put_field(std::string &o, const char *head, const jvalue &v) {
  o += head;
  if (v.present())
    put_value(o, v);
  else
    o += '0';
}

// A hash value in the target dialect: v2 writes 16 hexadecimal characters in a string, v1 a
// bare decimal integer. Anything else is kept as written.
void put_hash(std::string &o, const jvalue &v, bool to_v2) {
  uint64_t x = 0;
  if (to_v2 && v.type == jtype::number && detail::value_u64(v, &x) && detail::value_is_integer(v)) {
    char b[24];
    snprintf(b, sizeof b, "\"%016" PRIx64 "\"", x);
    o += b;
    return;
  }
  if (!to_v2 && v.type == jtype::string && is_hex16(v.text)) {
    o += std::to_string(std::stoull(std::string(v.text), nullptr, 16));
    return;
  }
  put_value(o, v);
}

// The line's args with hashes in the target dialect; HH/SH/FH values are hashes too.
void put_args(std::string &o, const parsed_line &pl, bool to_v2, bool definition,
              std::string_view extra, std::string_view drop = {}, std::string_view rename = {},
              std::string_view renamed = {}) {
  o += ",\"args\":";
  if (pl.args_overflow || pl.args.type != jtype::object) {
    if (pl.args.present())
      o.append(pl.args.text);  // too many to rewrite: as written
    else
      o += "{}";
    return;
  }
  o += '{';
  bool first = true;
  for (int k = 0; k < pl.nargs; ++k) {
    const auto &kv = pl.args_kv[k];
    if (!drop.empty() && kv.key == drop) continue;
    if (!first) o += ',';
    first = false;
    o += '"';
    o.append(!rename.empty() && kv.key == rename ? renamed : kv.key);
    o += "\":";
    if (detail::is_hash_ref_key(kv.key) || (definition && kv.key == "value")) {
      put_hash(o, kv.value, to_v2);
    } else {
      put_value(o, kv.value);
    }
  }
  if (!extra.empty()) {
    if (!first) o += ',';
    o.append(extra);
  }
  o += '}';
}

struct dialect_result : detail::block_result {
  std::string out;                                // lines, each ending in '\n'
  std::vector<std::pair<size_t, uint64_t>> ends;  // end offset of each line with a ts, its ts
  uint64_t lines = 0, skipped = 0;
};

// The fields before "ph": the id (where the dialect keeps one), name, cat, type (typed), pid,
// tid, ts and dur (complete events).
void put_fields(std::string &o, const parsed_line &pl, char ph, bool typed, bool complete) {
  o += '{';
  if (pl.id.present() && (complete || (!typed && ph != 'C' && ph != 'A'))) {
    o += "\"id\":";
    put_value(o, pl.id);
    o += ',';
  }
  o += "\"name\":\"";
  o.append(pl.name.text);
  o += "\",\"cat\":";
  if (pl.cat.present())
    put_value(o, pl.cat);
  else
    o += "\"dftracer\"";
  if (typed) {
    o += ",\"type\":";
    o += std::to_string(layer_of(pl.cat.text));
  }
  put_field(o, ",\"pid\":", pl.pid);
  put_field(o, ",\"tid\":", pl.tid);
  if (ph != 'M' && pl.ts.present()) {
    o += ",\"ts\":";
    put_value(o, pl.ts);
  }
  if (complete) put_field(o, ",\"dur\":", pl.dur);
}

// "ph" as the dialect writes it: typed, an integer (1 complete, instants too: v2 has no
// instant; 2 counter, 3 aggregated, 4 metadata); else the phase letter, and any other phase (a
// quote, a backslash, a control character, however the input spelled it) quoted and escaped
// anew, so that the line stays valid JSON.
void put_phase(std::string &o, const parsed_line &pl, char ph, bool typed, bool complete,
               bool a_as_c) {
  o += ",\"ph\":";
  if (typed) {
    o += complete ? "1" : ph == 'C' ? "2" : ph == 'A' ? "3" : ph == 'M' ? "4" : "0";
    return;
  }
  if (a_as_c)
    o += "\"C\"";
  else if ((ph >= 'A' && ph <= 'Z') || (ph >= 'a' && ph <= 'z'))
    (o += '"', o += ph) += '"';
  else
    o += detail::json_quote(std::string_view(&ph, 1));
  if ((ph == 'i' || ph == 'I') && pl.s.present()) {
    o += ",\"s\":";
    put_value(o, pl.s);
  }
}

void rewrite_block(detail::text_block &b, dialect to, time_unit unit) {
  const bool to_v2 = to != dialect::dftrace;   // hashes as 16 hexadecimal characters
  const bool typed = to == dialect::v2_typed;  // integer ph and a type key
  auto r = std::make_unique<dialect_result>();
  parsed_line pl;
  for_each_record(b.whole_lines(), pl, &r->skipped, [&](std::string_view, char ph) {
    std::string &o = r->out;
    // DFTracer 2.0.2's aggregated counters are aggregated records ("A", 3) in the other
    // dialects, with the calls they fold as dft_cnt.
    std::string extra;
    if (ph == 'C' && to != dialect::v2_0_2 && detail::is_counter_aggregate(pl)) {
      uint64_t calls = 0, dur = 0;
      ph = 'A';
      if (!pl.arg_value("dft_cnt") && detail::aggregated_calls(pl, unit, &calls, &dur))
        extra = "\"dft_cnt\":" + std::to_string(calls);
    }
    const bool meta = ph == 'M';
    const bool complete = ph == 'X' || (typed && (ph == 'i' || ph == 'I'));
    put_fields(o, pl, ph, typed, complete);
    uint64_t ts_ns = 0;
    const bool has_ts = !meta && pl.ts.present() && detail::value_ns(pl.ts, unit, &ts_ns);
    // DFTracer 2.0.2 writes its aggregated records as counters that hold dur_min/_max/_sum and
    // `count`, the calls: an "A" record's dft_cnt is renamed so, unless a call's own argument
    // is named count (then dft_cnt stays, which dftrace's readers prefer).
    const bool a_as_c = to == dialect::v2_0_2 && ph == 'A';
    std::string_view rename;
    if (a_as_c && !pl.arg_value("count") && !pl.arg_value("count_sum")) rename = "dft_cnt";
    if (a_as_c && !pl.arg_value("dur_sum")) {  // one plain dur for all: 2.0.2 needs the sum
      uint64_t calls = 0, sum = 0;
      if (detail::aggregated_calls(pl, unit, &calls, &sum))
        extra = "\"dur_sum\":" + (unit == time_unit::ns ? std::to_string(sum) : us_text(sum));
    }
    put_phase(o, pl, ph, typed, complete, a_as_c);
    // v2's end event says the unit of its times in cfg.time_metric.
    if (typed && ph == 'X' && detail::text_equals(pl.name, "end") &&
        detail::text_equals(pl.cat, "dftracer") && !pl.arg_value("cfg"))
      extra = std::string("\"cfg\":{\"time_metric\":\"") + (unit == time_unit::ns ? "NS" : "US") +
              "\"}";
    const bool definition =
        meta && (detail::text_equals(pl.name, "HH") || detail::text_equals(pl.name, "SH") ||
                 detail::text_equals(pl.name, "FH"));
    // Back in dftrace's dialect, an end event's cfg that holds only time_metric (what the way
    // to v2 adds) is dropped: dftrace declares its unit with the PR time_metric line.
    std::string_view drop;
    if (!to_v2 && ph == 'X' && detail::text_equals(pl.name, "end")) {
      const jvalue *cfg = pl.arg_value("cfg");
      if (cfg && cfg->type == jtype::object &&
          (cfg->text == "{\"time_metric\":\"US\"}" || cfg->text == "{\"time_metric\":\"NS\"}"))
        drop = "cfg";
    }
    put_args(o, pl, to_v2, definition, extra, drop, rename, "count");
    o += "}\n";
    ++r->lines;
    if (has_ts) r->ends.emplace_back(o.size(), ts_ns);
    return true;
  });
  b.result = std::move(r);
}

}  // namespace

int convert_dialect(const args_t &a, dialect to) {
  const bool brackets = to != dialect::v2_typed;  // the newer form is bare JSON lines
  const std::string out_path = a.output("convert", "OUT.pfw[.gz]");
  if (out_path.empty()) return 2;
  bool ok = true;
  const std::vector<std::string> files = input_files(a, "convert", &ok);
  if (files.empty()) return 2;
  detail::member_stream w(out_path, tool_threads());
  if (!w.ok()) {
    error_line(w.error());
    return 1;
  }
  time_unit first_unit = time_unit::us;
  uint64_t lines = 0, skipped = 0;
  if (brackets) w.line("[", false, 0);
  for (size_t k = 0; k < files.size(); ++k) {
    detail::trace_file f;
    if (!open_trace(files[k], &f, &ok)) continue;
    print_plan_issues(f, files[k]);
    const time_unit unit = detail::header_time_unit(f);
    if (k == 0) first_unit = unit;
    if (unit != first_unit) {
      error_line("convert: " + files[0] + " and " + files[k] +
                 " have different time units; convert traces of one unit together");
      return 2;
    }
    auto work = [to, unit](detail::text_block &b) { rewrite_block(b, to, unit); };
    detail::for_each_block(f, tool_read_options(), work, [&](detail::text_block &b) {
      auto *r = static_cast<dialect_result *>(b.result.get());
      size_t start = 0, e = 0;
      // Line by line into the writer (members end on whole lines; DT ranges from the ts).
      while (start < r->out.size()) {
        const size_t nl = r->out.find('\n', start);
        const std::string_view text(r->out.data() + start, nl - start);
        const bool has_ts = e < r->ends.size() && r->ends[e].first == nl + 1;
        w.line(text, has_ts, has_ts ? r->ends[e].second : 0);
        if (has_ts) ++e;
        start = nl + 1;
      }
      lines += r->lines;
      skipped += r->skipped;
      for (const auto &i : b.issues) {
        error_line(files[k] + ": byte " + std::to_string(i.offset) + ": " + i.message);
        if (i.error) ok = false;
      }
    });
  }
  if (brackets) w.line("]", false, 0);
  if (!w.finish()) {
    error_line(w.error());
    return 1;
  }
  if (skipped)
    error_line("convert: skipped " + std::to_string(skipped) +
               " lines that are not valid events (run dftrace validate for details)");
  fprintf(stderr, "converted %llu lines -> %s (%s)\n", static_cast<unsigned long long>(lines),
          out_path.c_str(),
          to == dialect::v2_typed ? "DFTracer 2.x, typed: integer ph and type"
          : to == dialect::v2_0_2 ? "DFTracer 2.0.2"
                                  : "dftrace / DFTracer 1.x");
  return ok ? 0 : 1;
}

}  // namespace dftrace::tools
