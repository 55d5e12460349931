// cmd_cat.cpp: dftrace cat: the JSON lines of traces, filtered by category, name, pid and
// time window; members outside the window are skipped through their DT fields.
#include <cstdio>
#include <string>
#include <unordered_set>

#include "common.hpp"

namespace dftrace::tools {

namespace {

struct filter {
  std::unordered_set<std::string> cats, names, pids;
  bool has_from = false, has_to = false;
  uint64_t from = 0, to = 0;
  bool time() const { return has_from || has_to; }

  bool keep(const parsed_line &pl, time_unit unit) const {
    if (!cats.empty() && !cats.count(std::string(pl.cat.text))) return false;
    if (!names.empty() && !names.count(std::string(pl.name.text))) return false;
    if (!pids.empty() && !pids.count(std::string(pl.pid.text))) return false;
    if (time()) {
      uint64_t ns = 0;  // compared in whole microseconds, as --from and --to are given
      if (!pl.ts.present() || !detail::value_ns(pl.ts, unit, &ns)) return false;
      const uint64_t ts = ns / 1000;
      if (has_from && ts < from) return false;
      if (has_to && ts > to) return false;
    }
    return true;
  }
};

struct cat_result : detail::block_result {
  std::string out;
  uint64_t invalid = 0;
};

bool parse_time(const std::string &s, uint64_t *out) {
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

int cmd_cat(const args_t &a) {
  bool ok = true;
  const std::vector<std::string> files = input_files(a, "cat", &ok);
  if (files.empty()) return 2;
  filter flt;
  for (auto &c : a.get_all("--cat")) flt.cats.insert(c);
  for (auto &n : a.get_all("--name")) flt.names.insert(n);
  for (auto &p : a.get_all("--pid")) flt.pids.insert(p);
  if (a.has("--from")) {
    flt.has_from = parse_time(a.get("--from"), &flt.from);
    if (!flt.has_from) {
      error_line("cat: --from needs a timestamp in microseconds since the epoch");
      return 2;
    }
  }
  if (a.has("--to")) {
    flt.has_to = parse_time(a.get("--to"), &flt.to);
    if (!flt.has_to) {
      error_line("cat: --to needs a timestamp in microseconds since the epoch");
      return 2;
    }
  }
  const bool any_filter =
      !flt.cats.empty() || !flt.names.empty() || !flt.pids.empty() || flt.time();
  detail::read_options opt = tool_read_options();
  if (flt.time()) {
    opt.keep_part = [&flt](const detail::planned_part &p) {
      if (p.kind != detail::planned_part::member) return true;
      if (p.dt.ts_min == 0 && p.dt.ts_max == 0) return false;  // no line with a ts
      if (flt.has_from && p.dt.ts_max < flt.from) return false;
      if (flt.has_to && p.dt.ts_min > flt.to) return false;
      return true;
    };
  }
  time_unit unit = time_unit::us;  // of the file being read
  auto work = [&](detail::text_block &b) {
    auto r = std::make_unique<cat_result>();
    r->out.reserve(any_filter ? b.text.size() / 4 : b.text.size());
    parsed_line pl;
    const std::string_view text = b.whole_lines();
    detail::for_each_line(text, [&](std::string_view line) {
      const std::string_view t = trim(line);
      if (t.empty() || t == "[" || t == "]") return true;
      if (!detail::parse_line(line, pl)) {
        ++r->invalid;
        return true;
      }
      if (any_filter && !flt.keep(pl, unit)) return true;
      r->out.append(t.data(), t.size());
      r->out.push_back('\n');
      return true;
    });
    b.result = std::move(r);
  };
  for (const auto &path : files) {
    detail::trace_file f;
    if (!open_trace(path, &f, &ok)) continue;
    print_plan_issues(f, path);
    if (flt.time()) unit = detail::header_time_unit(f);
    uint64_t invalid = 0;
    detail::for_each_block(f, opt, work, [&](detail::text_block &b) {
      f.release(b.in_offset, b.in_bytes);  // the resident set stays flat
      auto *r = static_cast<cat_result *>(b.result.get());
      if (!r->out.empty() && fwrite(r->out.data(), 1, r->out.size(), stdout) != r->out.size()) {
        ok = false;
      }
      invalid += r->invalid;
      for (const auto &i : b.issues) {
        error_line(path + ": byte " + std::to_string(i.offset) + ": " + i.message);
        if (i.error) ok = false;
      }
    });
    if (invalid)
      error_line(path + ": skipped " + std::to_string(invalid) +
                 " lines that are not valid JSON (run dftrace validate for details)");
  }
  if (fflush(stdout) != 0) ok = false;
  return ok ? 0 : 1;
}

}  // namespace dftrace::tools
