// time_unit_test.cpp: a trace's declared time unit, and ts/dur values read as nanoseconds.
#include "reader/time_unit.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/gzip_member.hpp"

using namespace dftrace::detail;

namespace {

jvalue num(const char *t) { return jvalue{jtype::number, t}; }

std::string temp_path(const char *name) {
  return ::testing::TempDir() + "/time_unit_test_" + std::to_string(getpid()) + "_" + name;
}

// Opens text as a trace: gzip members of `per` lines each (per 0: a plain file).
time_unit unit_of(const std::string &text, const char *name, size_t per,
                  size_t *scanned = nullptr) {
  std::vector<char> bytes;
  if (per == 0) {
    bytes.assign(text.begin(), text.end());
  } else {
    member_encoder enc(codec::zlib, 1);
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = pos;
      for (size_t k = 0; k < per && end < text.size(); ++k) end = text.find('\n', end) + 1;
      std::vector<char> m;
      const std::string part = text.substr(pos, end - pos);
      EXPECT_TRUE(
          enc.encode(part.data(), part.size(), scan_member_stats(part.data(), part.size()), m));
      bytes.insert(bytes.end(), m.begin(), m.end());
      pos = end;
    }
  }
  const std::string path = temp_path(name);
  FILE *f = fopen(path.c_str(), "wb");
  fwrite(bytes.data(), 1, bytes.size(), f);
  fclose(f);
  trace_file tf;
  std::string why;
  EXPECT_TRUE(tf.open(path, &why)) << why;
  const time_unit u = header_time_unit(tf, scanned);
  unlink(path.c_str());
  return u;
}

const char *k_pr_ns =
    "{\"id\":4,\"name\":\"PR\",\"cat\":\"dftracer\",\"pid\":1,\"tid\":1,\"ph\":\"M\","
    "\"args\":{\"name\":\"time_metric\",\"value\":\"ns\"}}\n";
const char *k_event =
    "{\"id\":9,\"name\":\"x\",\"cat\":\"c\",\"pid\":1,\"tid\":1,\"ts\":1795262848109106250,"
    "\"dur\":7,\"ph\":\"X\",\"args\":{}}\n";

}  // namespace

TEST(TimeUnit, ValuesAsNanoseconds) {
  uint64_t ns = 0;
  ASSERT_TRUE(value_ns(num("1795262848109106"), time_unit::us, &ns));
  EXPECT_EQ(ns, 1795262848109106000ull);
  ASSERT_TRUE(value_ns(num("1795262848109106.25"), time_unit::us, &ns));
  EXPECT_EQ(ns, 1795262848109106250ull);
  ASSERT_TRUE(value_ns(num("0.0071"), time_unit::us, &ns));  // digits past the ns dropped
  EXPECT_EQ(ns, 7u);
  ASSERT_TRUE(value_ns(num("1795262848109106250"), time_unit::ns, &ns));
  EXPECT_EQ(ns, 1795262848109106250ull);
  ASSERT_TRUE(value_ns(jvalue{jtype::string, "12"}, time_unit::us, &ns));  // older DFTracer
  EXPECT_EQ(ns, 12000u);
  EXPECT_FALSE(value_ns(num("18446744073709552"), time_unit::us, &ns));  // x 1000 > 2^64
  EXPECT_FALSE(value_ns(num("18446744073709551616"), time_unit::ns, &ns));
  EXPECT_FALSE(value_ns(num("-5"), time_unit::us, &ns));
  EXPECT_FALSE(value_ns(num("1e5"), time_unit::us, &ns));
  EXPECT_FALSE(value_ns(jvalue{jtype::object, "{}"}, time_unit::us, &ns));
}

TEST(TimeUnit, DeclaredByThePrLineOrTheStartEvent) {
  EXPECT_EQ(unit_of(std::string("[\n") + k_pr_ns + k_event, "pr", 1), time_unit::ns);
  EXPECT_EQ(unit_of(std::string("[\n") + k_pr_ns + k_event, "plain", 0), time_unit::ns);
  const std::string start =
      "{\"id\":8,\"name\":\"start\",\"cat\":\"dftracer\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":0,"
      "\"ph\":\"X\",\"args\":{\"time_metric\":\"NS\"}}\n";
  EXPECT_EQ(unit_of(start + k_event, "start", 0), time_unit::ns);
  // No declaration (DFTracer, older dftrace): microseconds.
  EXPECT_EQ(unit_of(std::string("[\n") + k_event, "none", 1), time_unit::us);
  // A declaration past the first 512 lines is not looked for.
  std::string late = "[\n";
  for (int i = 0; i < 600; ++i) late += k_event;
  EXPECT_EQ(unit_of(late + k_pr_ns, "late", 0), time_unit::us);
  // A PR line naming another property, or an unknown unit, declares nothing.
  EXPECT_EQ(
      unit_of(
          "{\"name\":\"PR\",\"ph\":\"M\",\"args\":{\"name\":\"time_metric\",\"value\":\"ms\"}}\n",
          "unknown", 0),
      time_unit::us);
  // Several members: the declaration is in the first.
  EXPECT_EQ(unit_of(std::string(k_pr_ns) + k_event + k_event, "members", 2), time_unit::ns);
  // Members of one line each: the scan inflates one after the other up to the declaration.
  EXPECT_EQ(unit_of(std::string("[\n") + k_event + k_event + k_pr_ns, "later_member", 1),
            time_unit::ns);
}

TEST(TimeUnit, OneLargeMemberIsInflatedOnlyAsFarAsTheScanLooks) {
  // DFTracer 1.x writes one gzip member per file: the scan of its first 512 lines must not
  // inflate the first MiB of it (that doubled the cost of reading small traces).
  std::string text = "[\n";
  for (int i = 0; i < 12000; ++i) text += k_event;
  ASSERT_GT(text.size(), size_t{1} << 20);
  size_t scanned = 0;
  EXPECT_EQ(unit_of(text, "one_member", 1u << 30, &scanned), time_unit::us);
  const size_t line = std::strlen(k_event);
  EXPECT_GE(scanned, 512 * line);                // the lines the scan looks at
  EXPECT_LE(scanned, 512 * line + (64u << 10));  // and at most one step of inflate more
  // A declaration within those lines is still found.
  EXPECT_EQ(unit_of(std::string("[\n") + k_pr_ns + text, "one_member_ns", 1u << 30), time_unit::ns);
}
