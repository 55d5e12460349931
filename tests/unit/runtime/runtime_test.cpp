// runtime_test.cpp: the runtime (src/runtime) on its own: initialisation and finalisation, the
// header it hands the writer, relocation when the rank becomes known, hash definitions, and the
// end line's counts, read back through the project's reader. ctest runs each test in its own
// process (gtest_discover_tests), so each starts with a fresh runtime.
#include "runtime/runtime.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "reader/line_parser.hpp"
#include "reader/trace_reader.hpp"

using namespace dftrace::detail;

namespace {

struct temp_dir {
  std::string path;
  temp_dir() {
    const char *t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t && *t ? t : "/tmp") + "/dftrace-runtime-XXXXXX";
    path = mkdtemp(tmpl.data());
  }
  ~temp_dir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

dftrace_options options_writing(const std::string &file) {
  dftrace_options o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.enable = 1;
  o.compression = -1;
  o.level = -1;
  o.metadata = -1;
  o.install_signal_handlers = 0;
  o.bind_atexit = 0;
  o.output_file = file.c_str();
  return o;
}

struct line {
  std::string text;
  std::string name, cat, ph;
};

std::vector<line> read_trace(const std::string &path) {
  trace_file f;
  std::string why;
  std::vector<line> out;
  if (!f.open(path, &why)) {
    ADD_FAILURE() << path << ": " << why;
    return out;
  }
  read_options opt;
  opt.threads = 1;
  for_each_block(f, opt, nullptr, [&](text_block &b) {
    for_each_line(b.whole_lines(), [&](std::string_view l) {
      parsed_line pl;
      if (l == "[" || l == "]" || l.empty()) return true;
      EXPECT_TRUE(parse_line(l, pl)) << l;
      out.push_back({std::string(l), std::string(pl.name.text), std::string(pl.cat.text),
                     std::string(pl.ph.text)});
      return true;
    });
  });
  return out;
}

size_t count_named(const std::vector<line> &lines, const std::string &name) {
  size_t n = 0;
  for (const line &l : lines) n += l.name == name;
  return n;
}

bool exists(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

}  // namespace

TEST(Runtime, InitTwiceChangesNothingAndFinalizeWritesTheEnd) {
  temp_dir d;
  const std::string file = d.path + "/t.pfw.gz";
  runtime &rt = runtime::get();
  const dftrace_options o = options_writing(file);
  ASSERT_EQ(rt.init(&o), DFTRACE_OK);
  const std::string other = d.path + "/other.pfw.gz";
  const dftrace_options o2 = options_writing(other);
  EXPECT_EQ(rt.init(&o2), DFTRACE_OK);  // already initialised: changes nothing
  node *fwd = rt.nodes().find("compute.forward");
  ASSERT_NE(fwd, nullptr);
  for (int i = 0; i < 5; ++i) rt.end(rt.begin(fwd, DFTRACE_USE_NODE_STATE, nullptr, 0), nullptr, 0);
  ASSERT_EQ(rt.finalize(), DFTRACE_OK);
  EXPECT_FALSE(exists(other));
  const std::vector<line> lines = read_trace(file);
  ASSERT_FALSE(lines.empty());
  // The header the runtime hands the writer: host, command, process name, then the start event.
  EXPECT_EQ(lines[0].name, "HH");
  EXPECT_EQ(count_named(lines, "start"), 1u);
  EXPECT_EQ(count_named(lines, "forward"), 5u);
  EXPECT_EQ(lines.back().name, "end");
  EXPECT_NE(lines.back().text.find("\"num_events\":5"), std::string::npos) << lines.back().text;
}

TEST(Runtime, TheRankKnownBeforeTheFileIsOpenGoesIntoItsNameAndHeader) {
  temp_dir d;
  runtime &rt = runtime::get();
  dftrace_options o = options_writing("");
  o.output_file = nullptr;
  const std::string prefix = d.path + "/run";
  o.output_prefix = prefix.c_str();
  ASSERT_EQ(rt.init(&o), DFTRACE_OK);
  ASSERT_EQ(rt.set_rank(3, 4), DFTRACE_OK);
  node *fwd = rt.nodes().find("compute.forward");
  rt.end(rt.begin(fwd, DFTRACE_USE_NODE_STATE, nullptr, 0), nullptr, 0);
  const std::string path = rt.output_path();
  ASSERT_EQ(rt.finalize(), DFTRACE_OK);
  EXPECT_NE(path.find("-3-"), std::string::npos) << path;  // <prefix>-<exec>-<rank>-<pid>
  const std::vector<line> lines = read_trace(path);
  bool rank_in_header = false;
  for (size_t i = 0; i < lines.size() && lines[i].name != "start"; ++i)
    rank_in_header |= lines[i].name == "PR" && lines[i].text.find("\"rank\"") != std::string::npos;
  EXPECT_TRUE(rank_in_header);
}

TEST(Runtime, AHashIsDefinedOnceAndBeforeItIsUsed) {
  temp_dir d;
  const std::string file = d.path + "/h.pfw.gz";
  runtime &rt = runtime::get();
  const dftrace_options o = options_writing(file);
  ASSERT_EQ(rt.init(&o), DFTRACE_OK);
  const uint64_t a = rt.define_hash(DFTRACE_HASH_FILE, "/data/a");
  EXPECT_EQ(rt.define_hash(DFTRACE_HASH_FILE, "/data/a"), a);
  EXPECT_NE(rt.define_hash(DFTRACE_HASH_FILE, "/data/b"), a);
  EXPECT_EQ(rt.define_hash(99, "x"), 0u);  // an unknown kind defines nothing
  ASSERT_EQ(rt.finalize(), DFTRACE_OK);
  const std::vector<line> lines = read_trace(file);
  EXPECT_EQ(count_named(lines, "FH"), 2u);
}
