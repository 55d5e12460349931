// config_test.cpp: the layers (defaults < YAML < environment < init) and every bad input.
#include "config/config.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "config_fixture.hpp"
#include "dftrace/dftrace.h"

using namespace dftrace::detail;

namespace {

// What dftrace_options_init() does (that lives in the shared library, not in the core).
dftrace_options_t options_unset() {
  dftrace_options_t o{};
  o.struct_size = sizeof o;
  o.enable = o.compression = o.level = o.metadata = o.install_signal_handlers = o.bind_atexit = -1;
  return o;
}

class Config : public ConfigFixture {
 protected:
  Config() : ConfigFixture("cfg") {}
  std::string yaml(const std::string &text) {
    std::string p = dir_ + "/c" + std::to_string(n_++) + ".yaml";
    std::ofstream(p) << text;
    return p;
  }
  // Loads with the given file, returns the config and what was printed on stderr.
  config load(const std::string &file, std::string *err, const dftrace_options_t *opts = nullptr) {
    if (!file.empty()) setenv("DFTRACE_CONFIG", file.c_str(), 1);
    testing::internal::CaptureStderr();
    config c = load_config(opts);
    *err = testing::internal::GetCapturedStderr();
    unsetenv("DFTRACE_CONFIG");
    return c;
  }
  static int lines(const std::string &s) {
    return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
  }
  // Loading `file` says exactly one line, which contains `words`; returns what was loaded.
  config expect_one_line(const std::string &file, const std::string &words) {
    std::string err;
    config c = load(file, &err);
    EXPECT_EQ(lines(err), 1) << err;
    EXPECT_NE(err.find(words), std::string::npos) << err;
    return c;
  }
  int n_ = 0;
};

}  // namespace

TEST_F(Config, Defaults) {
  std::string err;
  config c = load("", &err);
  EXPECT_EQ(err, "");
  EXPECT_FALSE(c.enable);
  EXPECT_EQ(c.output_prefix, "./trace");
  EXPECT_TRUE(c.compression);
  EXPECT_EQ(c.member_bytes, 1u << 20);
  EXPECT_DOUBLE_EQ(c.flush_interval, 2.0);
  EXPECT_TRUE(c.metadata);
  EXPECT_FALSE(c.on_full_drop);
  EXPECT_EQ(c.source.at("enable"), "default");
}

TEST_F(Config, LayersLaterWins) {
  std::string err;
  const std::string f =
      yaml("enable: true\noutput:\n  prefix: /from/yaml\n  member_bytes: 2MiB\nmetadata: off\n");
  setenv("DFTRACE_LOG_FILE", "/from/env", 1);
  config c = load(f, &err);
  EXPECT_EQ(err, "");
  EXPECT_TRUE(c.enable);
  EXPECT_EQ(c.output_prefix, "/from/env");
  EXPECT_EQ(c.source.at("output.prefix"), "env DFTRACE_LOG_FILE");
  EXPECT_EQ(c.member_bytes, 2u << 20);
  EXPECT_EQ(c.source.at("output.member_bytes"), "yaml " + f);
  EXPECT_FALSE(c.metadata);
  dftrace_options_t o = options_unset();
  o.output_prefix = "/from/init";
  o.enable = 0;
  c = load(f, &err, &o);
  EXPECT_EQ(c.output_prefix, "/from/init");
  EXPECT_FALSE(c.enable);
  EXPECT_EQ(c.source.at("output.prefix"), "init");
  unsetenv("DFTRACE_LOG_FILE");
}

TEST_F(Config, DftracerNamesAreReadWhenOursAreUnset) {
  std::string err;
  setenv("DFTRACER_ENABLE", "1", 1);
  setenv("DFTRACER_LOG_FILE", "/dft/prefix", 1);
  setenv("DFTRACER_INC_METADATA", "0", 1);
  setenv("DFTRACER_TRACE_COMPRESSION", "0", 1);
  setenv("DFTRACER_DISABLE_TIDS", "1", 1);
  setenv("DFTRACER_WRITE_BUFFER_SIZE", "131072", 1);
  setenv("DFTRACER_LOG_LEVEL", "ERROR", 1);
  config c = load("", &err);
  EXPECT_EQ(err, "");
  EXPECT_TRUE(c.enable);
  EXPECT_EQ(c.output_prefix, "/dft/prefix");
  EXPECT_FALSE(c.metadata);
  EXPECT_FALSE(c.compression);
  EXPECT_FALSE(c.tids);  // DISABLE_TIDS=1 means tids off
  EXPECT_EQ(c.buffer_bytes, 131072u);
  EXPECT_EQ(c.log_level, 0);
  setenv("DFTRACE_ENABLE", "off", 1);  // ours wins when set, in both directions
  c = load("", &err);
  EXPECT_FALSE(c.enable);
  for (const char *v :
       {"DFTRACE_ENABLE", "DFTRACER_ENABLE", "DFTRACER_LOG_FILE", "DFTRACER_INC_METADATA",
        "DFTRACER_TRACE_COMPRESSION", "DFTRACER_DISABLE_TIDS", "DFTRACER_WRITE_BUFFER_SIZE",
        "DFTRACER_LOG_LEVEL"})
    unsetenv(v);
}

TEST_F(Config, BooleansInEveryForm) {
  for (const char *t : {"1", "true", "TRUE", "yes", "On", " on "}) {
    bool b = false;
    EXPECT_TRUE(parse_bool(t, &b)) << t;
    EXPECT_TRUE(b) << t;
  }
  for (const char *f : {"0", "false", "No", "OFF"}) {
    bool b = true;
    EXPECT_TRUE(parse_bool(f, &b)) << f;
    EXPECT_FALSE(b) << f;
  }
  bool b;
  EXPECT_FALSE(parse_bool("maybe", &b));
  EXPECT_FALSE(parse_bool("", &b));
}

// One meaning for the units, shared with the dftrace tools (docs/configuration.md, "Values"):
// binary for K/KiB and the like, decimal (SI) for kB/MB/GB.
TEST_F(Config, SizeUnits) {
  const struct {
    const char *text;
    size_t bytes;
  } cases[] = {{"1k", 1024},
               {"1K", 1024},
               {"1KiB", 1024},
               {"1kib", 1024},
               {"1kB", 1000},
               {"1KB", 1000},
               {"1m", 1u << 20},
               {"1MiB", 1u << 20},
               {"1MB", 1000000},
               {"1g", size_t{1} << 30},
               {"1GiB", size_t{1} << 30},
               {"1GB", 1000000000},
               {" 2 b ", 2},
               {"0.5KiB", 512},
               {"150k", 153600},
               {"150kB", 150000},
               {"0", 0}};
  for (const auto &c : cases) {
    size_t n = 7;
    EXPECT_TRUE(parse_size(c.text, &n)) << c.text;
    EXPECT_EQ(n, c.bytes) << c.text;
  }
  for (const char *bad : {"", "k", ".", "+1", "1e3", "0x10", "1 KiBs", "1 kk", "2000000GB"}) {
    size_t n = 7;
    EXPECT_FALSE(parse_size(bad, &n)) << bad;
    EXPECT_EQ(n, 7u) << bad;
  }
}

TEST_F(Config, SizesAndDurations) {
  size_t n;
  EXPECT_TRUE(parse_size("1048576", &n));
  EXPECT_EQ(n, 1048576u);
  EXPECT_TRUE(parse_size("64KiB", &n));
  EXPECT_EQ(n, 65536u);
  EXPECT_TRUE(parse_size("1.5 MiB", &n));
  EXPECT_EQ(n, 1572864u);
  EXPECT_FALSE(parse_size("-1", &n));
  EXPECT_FALSE(parse_size("12 bananas", &n));
  double d;
  EXPECT_TRUE(parse_duration("500ms", &d));
  EXPECT_DOUBLE_EQ(d, 0.5);
  EXPECT_TRUE(parse_duration("3", &d));
  EXPECT_DOUBLE_EQ(d, 3.0);
  EXPECT_FALSE(parse_duration("soon", &d));
}

TEST_F(Config, YamlThatDoesNotParseIsReportedOnceAndIgnored) {
  std::string err;
  const std::string f = yaml("enable: [true\noutput: {prefix: x\n");
  config c = load(f, &err);
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find(f), std::string::npos);
  EXPECT_NE(err.find("not valid YAML"), std::string::npos);
  EXPECT_FALSE(c.enable);
  EXPECT_EQ(c.output_prefix, "./trace");
}

TEST_F(Config, MissingFileIsReported) {
  config c = expect_one_line(dir_ + "/nope.yaml", "can not be read");
  EXPECT_EQ(c.output_prefix, "./trace");
}

TEST_F(Config, TopLevelNotAMapping) { expect_one_line(yaml("- a\n- b\n"), "not a mapping"); }

TEST_F(Config, UnknownKeyIsNamedWithASuggestion) {
  std::string err;
  const std::string f = yaml("enable: true\noutput:\n  prefx: /x\n");
  config c = load(f, &err);
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find("unknown key 'output.prefx'"), std::string::npos) << err;
  EXPECT_NE(err.find("did you mean 'output.prefix'"), std::string::npos) << err;
  EXPECT_NE(err.find(f), std::string::npos);
  EXPECT_TRUE(c.enable);  // the rest of the file still applies
  EXPECT_EQ(c.output_prefix, "./trace");
}

TEST_F(Config, WrongTypeKeepsTheEarlierValueAndNamesKeyAndValue) {
  std::string err;
  const std::string f = yaml(
      "enable: sometimes\noutput:\n  member_bytes: lots\n  level: high\n  on_full: explode\n"
      "timer:\n  precision: fs\n  source: sundial\nlog_level: loud\n");
  config c = load(f, &err);
  EXPECT_EQ(lines(err), 7) << err;
  for (const char *k : {"'enable': value 'sometimes'", "'output.member_bytes': value 'lots'",
                        "'output.level': value 'high'", "'output.on_full': value 'explode'",
                        "'timer.precision': value 'fs'", "'timer.source': value 'sundial'",
                        "'log_level': value 'loud'"})
    EXPECT_NE(err.find(k), std::string::npos) << k << "\n" << err;
  EXPECT_FALSE(c.enable);
  EXPECT_EQ(c.member_bytes, 1u << 20);
  EXPECT_EQ(c.level, -1);
  EXPECT_EQ(c.timer_source, "auto");
}

TEST_F(Config, WrongTypeInEnvironmentToo) {
  std::string err;
  setenv("DFTRACE_OUTPUT_MEMBER_BYTES", "12", 1);  // below the minimum
  config c = load("", &err);
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find("DFTRACE_OUTPUT_MEMBER_BYTES"), std::string::npos);
  EXPECT_EQ(c.member_bytes, 1u << 20);
  unsetenv("DFTRACE_OUTPUT_MEMBER_BYTES");
}

TEST_F(Config, NonScalarValue) {
  expect_one_line(yaml("output:\n  prefix: [a, b]\n"), "not a single value");
}

TEST_F(Config, CategoriesFromYamlMapListAndEnvironment) {
  std::string err;
  config c = load(yaml("categories:\n  comm: false\n  comm.all_reduce: true\n"), &err);
  EXPECT_EQ(err, "");
  ASSERT_EQ(c.categories.size(), 2u);
  EXPECT_EQ(c.categories[0], (std::pair<std::string, bool>{"comm", false}));
  EXPECT_EQ(c.categories[1], (std::pair<std::string, bool>{"comm.all_reduce", true}));
  c = load(yaml("categories: [\"-compute\", \"+compute.forward\"]\n"), &err);
  ASSERT_EQ(c.categories.size(), 2u);
  EXPECT_FALSE(c.categories[0].second);
  setenv("DFTRACE_CATEGORIES", "-comm,+comm.all_reduce, data.item:off", 1);
  c = load("", &err);
  EXPECT_EQ(err, "");
  ASSERT_EQ(c.categories.size(), 3u);
  EXPECT_EQ(c.categories[2], (std::pair<std::string, bool>{"data.item", false}));
  setenv("DFTRACE_CATEGORIES", "comm:perhaps", 1);
  c = load("", &err);
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_TRUE(c.categories.empty());
  unsetenv("DFTRACE_CATEGORIES");
  c = load(yaml("categories:\n  comm: maybe\n"), &err);
  EXPECT_EQ(lines(err), 1) << err;
}

TEST_F(Config, BudgetInEventsPerSecondOrBytesPerHour) {
  std::string err;
  config c = load(yaml("output:\n  budget: 200MB/h\n"), &err);
  EXPECT_EQ(err, "");
  EXPECT_EQ(c.budget_bytes, 200000000u);
  EXPECT_EQ(c.budget, 0u);
  c = load(yaml("output.budget: 1.5 GiB / h\n"), &err);
  EXPECT_EQ(c.budget_bytes, 1610612736u);
  for (const char *events : {"1000", "1000/s", " 1000 / S"}) {
    setenv("DFTRACE_OUTPUT_BUDGET", events, 1);
    c = load(yaml("output.budget: 200MB/h\n"), &err);  // the environment wins
    EXPECT_EQ(err, "") << events;
    EXPECT_EQ(c.budget, 1000u) << events;
    EXPECT_EQ(c.budget_bytes, 0u) << events;
  }
  for (const char *bad : {"5MB/s", "-3", "10/min", "lots/h", "1e3"}) {
    setenv("DFTRACE_OUTPUT_BUDGET", bad, 1);
    c = load("", &err);
    EXPECT_EQ(lines(err), 1) << bad << ": " << err;
    EXPECT_NE(err.find("bytes per hour"), std::string::npos) << err;
    EXPECT_EQ(c.budget + c.budget_bytes, 0u) << bad;  // the default, no budget
  }
  unsetenv("DFTRACE_OUTPUT_BUDGET");
}

TEST_F(Config, SampleRulesFromYamlMapListAndEnvironment) {
  std::string err;
  config c = load(yaml("output:\n  sample: {POSIX.read: 100, ai.compute: 10}\n"), &err);
  EXPECT_EQ(err, "");
  ASSERT_EQ(c.sample.size(), 2u);
  EXPECT_EQ(c.sample[0], (std::pair<std::string, uint64_t>{"POSIX.read", 100}));
  EXPECT_EQ(c.sample[1], (std::pair<std::string, uint64_t>{"compute", 10}));  // "ai." dropped
  c = load(yaml("output.sample: [\"comm=3\", \"ai: 7\"]\n"), &err);
  EXPECT_EQ(err, "");
  ASSERT_EQ(c.sample.size(), 2u);
  EXPECT_EQ(c.sample[1], (std::pair<std::string, uint64_t>{"ai", 7}));
  setenv("DFTRACE_OUTPUT_SAMPLE", "compute.forward=2", 1);  // added to the file's
  c = load(yaml("output:\n  sample:\n    comm: 5\n"), &err);
  ASSERT_EQ(c.sample.size(), 2u);
  EXPECT_EQ(c.sample[1].first, "compute.forward");
  for (const char *bad : {"compute", "compute=0", "compute=-2", "=3"}) {
    setenv("DFTRACE_OUTPUT_SAMPLE", bad, 1);
    c = load("", &err);
    EXPECT_EQ(lines(err), 1) << bad << ": " << err;
    EXPECT_TRUE(c.sample.empty()) << bad;
  }
  unsetenv("DFTRACE_OUTPUT_SAMPLE");
  c = load(yaml("output:\n  sample: {comm: [1]}\n"), &err);
  EXPECT_EQ(lines(err), 1) << err;
}

TEST_F(Config, DescribeNamesEveryKeyAndItsSource) {
  std::string err;
  setenv("DFTRACE_ENABLE", "1", 1);
  config c = load("", &err);
  const std::string d = describe(c);
  for (const auto &k : config_keys())
    EXPECT_NE(d.find(std::string(k.key) + " = "), std::string::npos) << k.key;
  EXPECT_NE(d.find("enable = true  (env DFTRACE_ENABLE)"), std::string::npos) << d;
  unsetenv("DFTRACE_ENABLE");
}

TEST_F(Config, ShippedYamlDocumentsEveryKeyWithItsDefault) {
  // conf/dftrace.yaml is the documentation: loading it must give exactly the defaults, with
  // no unknown key, and every key of the table must appear in it: set, or commented out
  // ("# key: value") where its default depends on the mode.
  const std::string path = std::string(DFTRACE_SOURCE_DIR) + "/conf/dftrace.yaml";
  std::string err;
  config c = load(path, &err);
  EXPECT_EQ(err, "");
  config d;
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const auto &k : config_keys()) {
    const std::string key = k.key;
    if (key == "config") continue;
    if (key == "output.queue_bytes") {
      const auto it = c.source.find(key);
      EXPECT_TRUE(it == c.source.end() || it->second == "default")
          << key << " is set in conf/dftrace.yaml";
      EXPECT_NE(text.find("  # queue_bytes: "), std::string::npos) << key;
      continue;
    }
    EXPECT_EQ(c.source.at(key), "yaml " + path) << key << " is not in conf/dftrace.yaml";
  }
  for (const auto &k : config_keys()) {
    EXPECT_NE(text.find(k.env), std::string::npos) << k.env << " undocumented";
    if (k.dftracer_env) {
      EXPECT_NE(text.find(k.dftracer_env), std::string::npos) << k.dftracer_env;
    }
  }
  EXPECT_EQ(c.output_prefix, d.output_prefix);
  EXPECT_EQ(c.member_bytes, d.member_bytes);
  EXPECT_EQ(c.enable, d.enable);
}

// A copy of conf/dftrace.yaml changes nothing in either mode: every key, as `dftrace config`
// shows it (the sizes the writer uses), is what it is with no file. A queue_bytes written in
// it would count as set and keep ring mode's queue at the file mode's 16 MiB.
TEST_F(Config, ShippedYamlKeepsTheDefaultsOfEitherMode) {
  const std::string path = std::string(DFTRACE_SOURCE_DIR) + "/conf/dftrace.yaml";
  for (const char *mode : {"file", "ring"}) {
    setenv("DFTRACE_OUTPUT_MODE", mode, 1);
    std::string err;
    const config with_file = load(path, &err);
    EXPECT_EQ(err, "");
    const config without = load("", &err);
    unsetenv("DFTRACE_OUTPUT_MODE");
    EXPECT_EQ(with_file.ring, std::string(mode) == "ring");
    for (const auto &k : config_keys()) {
      if (std::string(k.key) == "config") continue;
      std::string a, b;
      ASSERT_TRUE(config_value(with_file, k.key, &a)) << k.key;
      ASSERT_TRUE(config_value(without, k.key, &b)) << k.key;
      EXPECT_EQ(a, b) << mode << " mode: " << k.key;
    }
    EXPECT_EQ(effective_writer_sizes(with_file).queue_bytes,
              effective_writer_sizes(without).queue_bytes)
        << mode;
  }
  setenv("DFTRACE_OUTPUT_MODE", "ring", 1);
  std::string err;
  const config ring = load(path, &err);
  unsetenv("DFTRACE_OUTPUT_MODE");
  EXPECT_EQ(effective_writer_sizes(ring).queue_bytes, size_t{4} << 20);
}

// Every size, count and duration has a range (a 4 GiB buffer_bytes or member_bytes must not
// wrap in the 32-bit chunk size); a value outside it gets one line and the default.
TEST_F(Config, SizesCountsAndDurationsOutsideTheirRangeKeepTheDefault) {
  const config def;
  struct bad {
    const char *env, *value;
  };
  const bad cases[] = {
      {"DFTRACE_OUTPUT_BUFFER_BYTES", "4GiB"},       {"DFTRACE_OUTPUT_MEMBER_BYTES", "4GiB"},
      {"DFTRACE_OUTPUT_BUFFER_BYTES", "4294967296"}, {"DFTRACE_OUTPUT_MEMBER_BYTES", "1024"},
      {"DFTRACE_OUTPUT_QUEUE_BYTES", "100GiB"},      {"DFTRACE_OUTPUT_QUEUE_BYTES", "1KiB"},
      {"DFTRACE_OUTPUT_COMPRESS_THREADS", "0"},      {"DFTRACE_OUTPUT_COMPRESS_THREADS", "65"},
      {"DFTRACE_OUTPUT_FLUSH_INTERVAL", "0"},        {"DFTRACE_OUTPUT_FLUSH_INTERVAL", "2days"},
      {"DFTRACE_OUTPUT_FLUSH_INTERVAL", "100000"},   {"DFTRACE_OUTPUT_LEVEL", "13"},
  };
  for (const bad &b : cases) {
    setenv(b.env, b.value, 1);
    std::string err;
    const config c = load("", &err);
    unsetenv(b.env);
    EXPECT_EQ(lines(err), 1) << b.env << "=" << b.value << ": " << err;
    EXPECT_NE(err.find(b.env), std::string::npos) << err;
    EXPECT_EQ(c.buffer_bytes, def.buffer_bytes);
    EXPECT_EQ(c.member_bytes, def.member_bytes);
    EXPECT_EQ(c.queue_bytes, def.queue_bytes);
    EXPECT_EQ(c.compress_threads, def.compress_threads);
    EXPECT_EQ(c.flush_interval, def.flush_interval);
    EXPECT_EQ(c.level, def.level);
  }
  // The ends of each range are accepted.
  setenv("DFTRACE_OUTPUT_BUFFER_BYTES", "64MiB", 1);
  setenv("DFTRACE_OUTPUT_MEMBER_BYTES", "256MiB", 1);
  std::string err;
  const config c = load("", &err);
  unsetenv("DFTRACE_OUTPUT_BUFFER_BYTES");
  unsetenv("DFTRACE_OUTPUT_MEMBER_BYTES");
  EXPECT_EQ(err, "");
  EXPECT_EQ(c.buffer_bytes, size_t{64} << 20);
  EXPECT_EQ(c.member_bytes, size_t{256} << 20);
}

TEST_F(Config, ConfigNamingADirectoryIsOneLineAndUnusable) {
  const config c = expect_one_line(dir_, "directory");
  EXPECT_TRUE(c.config_unusable);
}

// A file of 200,000 unknown keys printed 200,000 lines and stalled the first region for 10 s:
// the messages are capped, the first few shown and then one line with the count of the rest.
TEST_F(Config, ManyMistakesAreCappedWithACount) {
  std::string text = "enable: true\n";
  for (int i = 0; i < 200000; ++i) text += "no_such_key_" + std::to_string(i) + ": 1\n";
  std::string err;
  const config c = load(yaml(text), &err);
  EXPECT_TRUE(c.enable);  // the one good key still applies
  EXPECT_LE(lines(err), 11) << err.substr(0, 2000);
  EXPECT_NE(err.find("unknown key 'no_such_key_0'"), std::string::npos) << err.substr(0, 2000);
  EXPECT_NE(err.find("199990 more configuration messages not shown"), std::string::npos)
      << err.substr(0, 2000);
  // The environment's mistakes count towards the same cap.
  setenv("DFTRACE_OUTPUT_LEVEL", "fast", 1);
  load(yaml(text), &err);
  unsetenv("DFTRACE_OUTPUT_LEVEL");
  EXPECT_NE(err.find("199991 more configuration messages"), std::string::npos)
      << err.substr(0, 2000);
  // Under the cap, nothing extra.
  load(yaml("a1: 1\na2: 2\n"), &err);
  EXPECT_EQ(lines(err), 2) << err;
}

TEST_F(Config, KeySetTwiceInOneFileSaysWhichWins) {
  std::string err;
  const std::string f = yaml("output:\n  prefix: /first\nmetadata: true\noutput.prefix: /second\n");
  config c = load(f, &err);
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find("key 'output.prefix' is set twice (lines 2 and 4); the later one, line 4, "
                     "wins"),
            std::string::npos)
      << err;
  EXPECT_EQ(c.output_prefix, "/second");
  // The same spelling twice (YAML allows it, yaml-cpp keeps both).
  c = load(yaml("enable: false\nenable: true\n"), &err);
  EXPECT_NE(err.find("key 'enable' is set twice (lines 1 and 2)"), std::string::npos) << err;
  EXPECT_TRUE(c.enable);
  // Rules keys add up, so two of them are no conflict.
  c = load(yaml("categories: [-comm]\ncategories: [-io]\n"), &err);
  EXPECT_EQ(err, "");
  EXPECT_EQ(c.categories.size(), 2u);
}

TEST_F(Config, DftraceAndDftracerNamesDisagreeingSaysWhichWins) {
  std::string err;
  setenv("DFTRACE_LOG_FILE", "/ours", 1);
  setenv("DFTRACER_LOG_FILE", "/theirs", 1);
  config c = load("", &err);
  EXPECT_EQ(c.output_prefix, "/ours");
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find("DFTRACE_LOG_FILE=/ours and DFTRACER_LOG_FILE=/theirs both set key "
                     "'output.prefix'; DFTRACE_LOG_FILE wins"),
            std::string::npos)
      << err;
  // Agreeing, in each name's own terms (DISABLE_IO=1 is io.enable=false): nothing to say.
  setenv("DFTRACER_LOG_FILE", "/ours", 1);
  setenv("DFTRACE_IO_ENABLE", "false", 1);
  setenv("DFTRACER_DISABLE_IO", "1", 1);
  c = load("", &err);
  EXPECT_EQ(err, "");
  EXPECT_FALSE(c.io);
  for (const char *v :
       {"DFTRACE_LOG_FILE", "DFTRACER_LOG_FILE", "DFTRACE_IO_ENABLE", "DFTRACER_DISABLE_IO"})
    unsetenv(v);
}

TEST_F(Config, LayerOverridingAnotherIsSaidAtInfoLevel) {
  std::string err;
  const std::string f = yaml("log_level: info\noutput:\n  prefix: /from/yaml\n");
  setenv("DFTRACE_LOG_FILE", "/from/env", 1);
  config c = load(f, &err);
  EXPECT_EQ(c.output_prefix, "/from/env");
  EXPECT_NE(err.find("dftrace: info: key 'output.prefix': env DFTRACE_LOG_FILE ('/from/env') "
                     "wins over yaml " +
                     f + " ('/from/yaml')"),
            std::string::npos)
      << err;
  // At the default level (warn) it is not said.
  c = load(yaml("output:\n  prefix: /from/yaml\n"), &err);
  EXPECT_EQ(err, "");
  unsetenv("DFTRACE_LOG_FILE");
}

TEST_F(Config, RingDirectTakesAutoBesideTheBooleans) {
  using mode = config::ring_direct_mode;
  std::string err;
  EXPECT_EQ(load("", &err).ring_direct, mode::automatic);  // the default
  const std::pair<const char *, mode> values[] = {
      {"auto", mode::automatic}, {"AUTO", mode::automatic}, {"true", mode::on}, {"1", mode::on},
      {"yes", mode::on},         {"false", mode::off},      {"0", mode::off},   {"off", mode::off}};
  for (const auto &v : values) {
    EXPECT_EQ(load(yaml(std::string("ring:\n  direct: ") + v.first + "\n"), &err).ring_direct,
              v.second)
        << v.first;
    EXPECT_EQ(err, "") << v.first;
    setenv("DFTRACE_RING_DIRECT", v.first, 1);
    EXPECT_EQ(load("", &err).ring_direct, v.second) << v.first;
    unsetenv("DFTRACE_RING_DIRECT");
  }
  const config c = expect_one_line(yaml("ring:\n  direct: maybe\n"), "or 'auto'");
  EXPECT_EQ(c.ring_direct, mode::automatic);
}
