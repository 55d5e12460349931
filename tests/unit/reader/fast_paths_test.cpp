// fast_paths_test.cpp: the reader's fast paths against its general ones on every trace line in
// tests/data (DFTracer 1.x, 2.0.2, the 2.x sample, dftrace's own seeds, the hostile files) and
// on hostile variants of their aggregated records: the line scanner's straight path against
// the whole grammar, and the one-pass reading of an aggregated record's calls against the
// lookup of each argument by key.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "reader/aggregated.hpp"
#include "reader/line_parser.hpp"
#include "reader/trace_reader.hpp"

using namespace dftrace::detail;

namespace {

// Every non-empty line of every trace under tests/data, damaged files included (what can be
// read of them): the files are the input here, not what is checked.
std::vector<std::string> all_trace_lines(size_t *files) {
  std::vector<std::string> paths;
  for (const auto &e : std::filesystem::recursive_directory_iterator(
           std::string(DFTRACE_SOURCE_DIR) + "/tests/data")) {
    const std::string p = e.path().string();
    const auto ends = [&p](std::string_view s) {
      return p.size() >= s.size() && p.compare(p.size() - s.size(), s.size(), s) == 0;
    };
    if (e.is_regular_file() && (ends(".pfw") || ends(".pfw.gz"))) paths.push_back(p);
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> lines;
  for (const auto &p : paths) {
    trace_file f;
    std::string why;
    if (!f.open(p, &why)) continue;
    read_options opt;
    opt.threads = 1;
    for_each_block(f, opt, nullptr, [&](text_block &b) {
      for_each_line(b.whole_lines(), [&](std::string_view l) {
        if (!l.empty()) lines.emplace_back(l);
        return true;
      });
    });
  }
  *files = paths.size();
  return lines;
}

// The lines an aggregated record's reading is given a variant of: the args object rewritten.
std::vector<std::string> hostile_variants(const std::string &line) {
  std::vector<std::string> out;
  const size_t a = line.find("\"args\":{");
  if (a == std::string::npos) return out;
  const size_t open = a + 8, close = line.rfind('}', line.size() - 2);
  if (close == std::string::npos || close < open) return out;
  const std::string head = line.substr(0, open), body = line.substr(open, close - open),
                    tail = line.substr(close);
  std::vector<std::string> members;  // args' members (scalars: a comma outside a string splits)
  for (size_t i = 0, s = 0, q = 0; i <= body.size(); ++i) {
    if (i < body.size() && body[i] == '"' && (i == 0 || body[i - 1] != '\\')) q ^= 1;
    if (i == body.size() || (body[i] == ',' && !q)) {
      if (i > s) members.push_back(body.substr(s, i - s));
      s = i + 1;
    }
  }
  const auto join = [&](const std::vector<std::string> &m) {
    std::string b;
    for (size_t i = 0; i < m.size(); ++i) b += (i ? "," : "") + m[i];
    return head + b + tail;
  };
  const auto replace_all = [](std::string s, const std::string &from, const std::string &to) {
    for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size())
      s.replace(p, from.size(), to);
    return s;
  };
  std::vector<std::string> r = members;
  std::reverse(r.begin(), r.end());
  out.push_back(join(r));  // keys reordered
  if (!members.empty()) {
    std::vector<std::string> d = members;
    d.push_back(members.front());  // a key twice: the first counts
    out.push_back(join(d));
    std::vector<std::string> d2 = members;
    d2.insert(d2.begin(), members.back());
    out.push_back(join(d2));
  }
  for (const char *k :
       {"dur_sum", "count", "count_sum", "dft_cnt", "dur", "offset", "offset_sum", "ret_sum"}) {
    for (const char *v : {"3", "0"}) {  // the key twice, another value first or last
      std::vector<std::string> m = members;
      m.push_back("\"" + std::string(k) + "\":" + v);
      out.push_back(join(m));
      m.pop_back();
      m.insert(m.begin(), "\"" + std::string(k) + "\":" + v);
      out.push_back(join(m));
    }
    std::vector<std::string> m;  // the key missing
    for (const auto &x : members)
      if (x.rfind("\"" + std::string(k) + "\":", 0) != 0) m.push_back(x);
    out.push_back(join(m));
  }
  out.push_back(replace_all(line, "\"dur_sum\"", "\"dur\\u005fsum\""));  // an escaped key
  out.push_back(replace_all(line, "\"count\":", "\"co\\u0075nt\":"));
  out.push_back(replace_all(line, "_sum\":", "_sum\":\""));  // invalid JSON: both refuse it
  for (const char *big : {"0", "-1", "9223372036854775807", "9223372036854775808",
                          "18446744073709551616", "\"2\"", "1.5", "1e3", "true", "null"}) {
    out.push_back(replace_all(line, "\"count\":4096", std::string("\"count\":") + big));
    out.push_back(replace_all(line, "\"dur_sum\":", std::string("\"dur_sum\":") + big + ",\"x\":"));
  }
  std::vector<std::string> e = members;  // an empty key and its "_sum", first
  e.insert(e.begin(), {"\"\":7", "\"_sum\":14"});
  out.push_back(join(e));
  out.push_back(replace_all(line, "/p/gpfs1", "/p/\\u00e9gpfs1"));   // an escape elsewhere
  out.push_back(replace_all(line, "/p/gpfs1", "/p/\xc3\xa9gpfs1"));  // non-ASCII: parse_common
  return out;
}

}  // namespace

TEST(FastPaths, StraightLineScanAgreesWithTheWholeGrammarOnEveryTrace) {
  size_t files = 0, straight = 0;
  const std::vector<std::string> lines = all_trace_lines(&files);
  EXPECT_GE(files, 30u);
  for (const auto &l : lines) {
    parsed_line fast, whole;
    const bool ok = parse_line(l, fast);
    ASSERT_EQ(ok, parse_line_general(l, whole)) << l;
    if (ok) {
      ASSERT_TRUE(same_parse(fast, whole)) << l;
    }
    parsed_line s;
    straight += parse_line_with(l, s, line_scan_in_use(), false);
  }
  // most lines take the straight path: the comparison above is of it
  EXPECT_GT(straight, lines.size() * 9 / 10);
}

TEST(FastPaths, AggregatedCallsInOnePassAgreeWithLookupByKey) {
  size_t files = 0, one_pass = 0, compared = 0, folded = 0;
  std::vector<std::string> lines = all_trace_lines(&files);
  const size_t real = lines.size();
  for (size_t i = 0; i < real; ++i)
    if (lines[i].find("_sum\"") != std::string::npos ||
        lines[i].find("dft_cnt") != std::string::npos)
      for (auto &v : hostile_variants(lines[i])) lines.push_back(std::move(v));
  ASSERT_GT(lines.size(), real);
  for (const auto &l : lines) {
    parsed_line pl;
    if (!parse_line(l, pl)) continue;
    for (const time_unit unit : {time_unit::us, time_unit::ns}) {
      uint64_t n1 = 7, d1 = 7, n2 = 7, d2 = 7;
      const bool a = aggregated_calls(pl, unit, &n1, &d1);
      const bool b = aggregated_calls_general(pl, unit, &n2, &d2);
      ASSERT_EQ(a, b) << l;
      ASSERT_EQ(n1, n2) << l;
      ASSERT_EQ(d1, d2) << l;
      folded += a;
    }
    ++compared;
    one_pass += pl.no_escapes;
  }
  EXPECT_GT(compared, 5000u);
  EXPECT_GT(folded, 2000u);  // DFTracer 2.0.2's counter records and dftrace's "A" records
  EXPECT_GT(one_pass, compared / 2);
  EXPECT_LT(one_pass, compared);  // and lines with escapes, read by key
}
