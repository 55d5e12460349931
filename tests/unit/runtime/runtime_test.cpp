// runtime_test.cpp: the runtime (src/runtime) on its own: initialisation and finalisation, the
// header it hands the writer, relocation when the rank becomes known, hash definitions, and the
// end line's counts, read back through the project's reader. ctest runs each test in its own
// process (gtest_discover_tests), so each starts with a fresh runtime.
#include "runtime/runtime.hpp"
#include "runtime/schedule.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>
#include <cstdio>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "trace_support.hpp"

using namespace dftrace::detail;

namespace {

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

using dftrace::test::name_of;
using dftrace::test::read_lines;
using dftrace::test::temp_dir;

size_t count_named(const std::vector<std::string> &lines, const std::string &name) {
  size_t n = 0;
  for (const std::string &l : lines) n += name_of(l) == name;
  return n;
}

// Initialises the runtime writing `file` and returns it.
runtime &started(const std::string &file) {
  runtime &rt = runtime::get();
  const dftrace_options o = options_writing(file);
  EXPECT_EQ(rt.init(&o), DFTRACE_OK);
  return rt;
}

bool exists(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

}  // namespace

TEST(Runtime, InitTwiceChangesNothingAndFinalizeWritesTheEnd) {
  temp_dir d;
  const std::string file = d.path + "/t.pfw.gz";
  runtime &rt = started(file);
  const std::string other = d.path + "/other.pfw.gz";
  const dftrace_options o2 = options_writing(other);
  EXPECT_EQ(rt.init(&o2), DFTRACE_OK);  // already initialised: changes nothing
  node *fwd = rt.nodes().find("compute.forward");
  ASSERT_NE(fwd, nullptr);
  for (int i = 0; i < 5; ++i) rt.end(rt.begin(fwd, DFTRACE_USE_NODE_STATE, nullptr, 0), nullptr, 0);
  ASSERT_EQ(rt.finalize(), DFTRACE_OK);
  EXPECT_FALSE(exists(other));
  const std::vector<std::string> lines = read_lines(file);
  ASSERT_GE(lines.size(), 3u);
  // The header the runtime hands the writer: host, command, process name, then the start event.
  EXPECT_EQ(lines[0], "[");
  EXPECT_EQ(name_of(lines[1]), "HH");
  EXPECT_EQ(count_named(lines, "start"), 1u);
  EXPECT_EQ(count_named(lines, "forward"), 5u);
  const std::string &end = lines[lines.size() - 2];
  EXPECT_EQ(name_of(end), "end");
  EXPECT_NE(end.find("\"num_events\":5"), std::string::npos) << end;
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
  const std::vector<std::string> lines = read_lines(path);
  bool rank_in_header = false;
  for (size_t i = 0; i < lines.size() && name_of(lines[i]) != "start"; ++i)
    rank_in_header |= name_of(lines[i]) == "PR" && lines[i].find("\"rank\"") != std::string::npos;
  EXPECT_TRUE(rank_in_header);
}

TEST(Runtime, AHashIsDefinedOnceAndBeforeItIsUsed) {
  temp_dir d;
  const std::string file = d.path + "/h.pfw.gz";
  runtime &rt = started(file);
  const uint64_t a = rt.define_hash(DFTRACE_HASH_FILE, "/data/a");
  EXPECT_EQ(rt.define_hash(DFTRACE_HASH_FILE, "/data/a"), a);
  EXPECT_NE(rt.define_hash(DFTRACE_HASH_FILE, "/data/b"), a);
  EXPECT_EQ(rt.define_hash(99, "x"), 0u);  // an unknown kind defines nothing
  ASSERT_EQ(rt.finalize(), DFTRACE_OK);
  const std::vector<std::string> lines = read_lines(file);
  EXPECT_EQ(count_named(lines, "FH"), 2u);
}

// A definition's line is written into a stack buffer, or, for a name too long for it, into a
// string made for it: both names arrive whole, escaped, in their FH lines.
TEST(Runtime, ShortAndLongNamesAreDefinedWhole) {
  temp_dir d;
  const std::string file = d.path + "/n.pfw.gz";
  runtime &rt = started(file);
  const std::string shortname = "/data/\"quoted\"";
  std::string longname = "/data/";
  for (int i = 0; i < 400; ++i) longname += "dir\\" + std::to_string(i) + "/";  // ~3 KB, escaped x2
  const uint64_t hs = rt.define_hash(DFTRACE_HASH_FILE, shortname);
  const uint64_t hl = rt.define_hash(DFTRACE_HASH_FILE, longname);
  ASSERT_EQ(rt.finalize(), DFTRACE_OK);
  // the name as its line holds it (escaped), and the value of each FH line
  std::map<std::string, std::string> named;
  for (const std::string &l : read_lines(file)) {
    parsed_line pl;
    if (name_of(l) != "FH" || !parse_line(l, pl)) continue;
    named[std::string(pl.arg_value("name")->text)] = std::string(pl.arg_value("value")->text);
  }
  const auto escaped = [](const std::string &s) {
    const std::string q = json_quote(s);
    return q.substr(1, q.size() - 2);
  };
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[escaped(shortname)], std::to_string(hs));
  EXPECT_EQ(named[escaped(longname)], std::to_string(hl));
}

TEST(Runtime, APreparedLayoutWritesTheSameArgumentsAsTheirList) {
  temp_dir d;
  const std::string file = d.path + "/l.pfw.gz";
  runtime &rt = started(file);
  node *rd = rt.nodes().find("data.item");
  const dftrace_arg_t keys[] = {{"fhash", DFTRACE_ARG_UINT, {.u = 0}},
                                {"offset", DFTRACE_ARG_INT, {.i = 0}},
                                {"a_key_longer_than_sixteen_bytes", DFTRACE_ARG_DOUBLE, {.d = 0}}};
  const prepared_args *l = runtime::make_layout(keys, 3);
  ASSERT_NE(l, nullptr);
  // Only numbers, with keys; up to 64.
  const dftrace_arg_t text[] = {{"mode", DFTRACE_ARG_STRING, {.s = "r"}}};
  EXPECT_EQ(runtime::make_layout(text, 1), nullptr);
  const dftrace_arg_t no_key[] = {{"", DFTRACE_ARG_INT, {.i = 1}}};
  EXPECT_EQ(runtime::make_layout(no_key, 1), nullptr);
  EXPECT_EQ(runtime::make_layout(keys, 0), nullptr);
  uint64_t values[3];
  const uint64_t big = 18446744073709551557ull;
  const int64_t neg = -42;
  const double half = 0.5;
  std::memcpy(&values[0], &big, 8);
  std::memcpy(&values[1], &neg, 8);
  std::memcpy(&values[2], &half, 8);
  rt.end_layout(rt.begin(rd, DFTRACE_USE_NODE_STATE, nullptr, 0), *l, values);
  const dftrace_arg_t same[] = {
      {"fhash", DFTRACE_ARG_UINT, {.u = big}},
      {"offset", DFTRACE_ARG_INT, {.i = neg}},
      {"a_key_longer_than_sixteen_bytes", DFTRACE_ARG_DOUBLE, {.d = half}}};
  rt.end(rt.begin(rd, DFTRACE_USE_NODE_STATE, nullptr, 0), same, 3);
  ASSERT_EQ(rt.finalize(), DFTRACE_OK);
  std::vector<std::string> args;
  for (const std::string &line : read_lines(file))
    if (name_of(line) == "item") args.push_back(line.substr(line.find("\"args\"")));
  ASSERT_EQ(args.size(), 2u);
  EXPECT_NE(args[0].find("\"fhash\":18446744073709551557,\"offset\":-42,"
                         "\"a_key_longer_than_sixteen_bytes\":0.5"),
            std::string::npos)
      << args[0];
  // the ids differ; everything from the arguments on is the same
  EXPECT_EQ(args[0].substr(args[0].find("fhash")), args[1].substr(args[1].find("fhash")));
}

// Leaf events (dftrace_leaf_begin/_end: the I/O interposers' path) push nothing on the stack:
// each is recorded at its end, nested in the innermost open region, with a layout's values,
// a list of arguments of any type, or none; the node's arguments are kept unless a per-use one
// has their key.
TEST(Runtime, LeafEventsNestInTheOpenRegionWithTheirArguments) {
  temp_dir d;
  const std::string file = d.path + "/leaf.pfw.gz";
  runtime &rt = started(file);
  node *rd = rt.nodes().find("data.item");
  node *fwd = rt.nodes().find("compute.forward");
  rt.nodes().update(rd, "epoch", "3");
  rt.nodes().update(rd, "offset", "7");
  const dftrace_arg_t keys[] = {{"fhash", DFTRACE_ARG_UINT, {.u = 0}},
                                {"offset", DFTRACE_ARG_INT, {.i = 0}}};
  const prepared_args *l = runtime::make_layout(keys, 2);
  ASSERT_NE(l, nullptr);
  const uint64_t values[] = {11, 4096};
  rt.leaf_end(rd, rt.leaf_begin(rd), l, values);  // outside any region
  const uint64_t outer = rt.begin(fwd, DFTRACE_USE_NODE_STATE, nullptr, 0);
  const uint64_t inner = rt.begin(fwd, DFTRACE_USE_NODE_STATE, nullptr, 0);
  rt.leaf_end(rd, rt.leaf_begin(rd), l, values);
  const dftrace_arg_t mixed[] = {{"mode", DFTRACE_ARG_STRING, {.s = "r+"}},
                                 {"ret", DFTRACE_ARG_INT, {.i = -1}}};
  rt.leaf_end(rd, rt.leaf_begin(rd), mixed, 2);
  rt.end(inner, nullptr, 0);
  rt.leaf_end(rd, rt.leaf_begin(rd), static_cast<const prepared_args *>(nullptr), nullptr);
  rt.end(outer, nullptr, 0);
  ASSERT_EQ(rt.finalize(), DFTRACE_OK);
  std::vector<std::string> leaves;
  for (const std::string &line : read_lines(file))
    if (name_of(line) == "item") leaves.push_back(line.substr(line.find("\"args\"")));
  ASSERT_EQ(leaves.size(), 4u);
  EXPECT_NE(leaves[0].find("\"epoch\":3,\"fhash\":11,\"offset\":4096,\"level\":1,\"p_idx\":-1}"),
            std::string::npos)
      << leaves[0];
  const std::string in_inner = ",\"level\":3,\"p_idx\":" + std::to_string(inner) + "}";
  EXPECT_NE(leaves[1].find("\"epoch\":3,\"fhash\":11,\"offset\":4096" + in_inner),
            std::string::npos)
      << leaves[1];
  EXPECT_NE(leaves[2].find("\"epoch\":3,\"offset\":7,\"mode\":\"r+\",\"ret\":-1" + in_inner),
            std::string::npos)
      << leaves[2];
  EXPECT_NE(leaves[3].find(
                "\"epoch\":3,\"offset\":7,\"level\":2,\"p_idx\":" + std::to_string(outer) + "}"),
            std::string::npos)
      << leaves[3];
}

// A leaf that was not begun (0) or whose node is off records nothing; one begun before the
// runtime was finalised is dropped at its end.
TEST(Runtime, LeafEventsNotBegunOrOutlivingTheirWriterAreDropped) {
  temp_dir d;
  const std::string file = d.path + "/drop.pfw.gz";
  runtime &rt = started(file);
  node *rd = rt.nodes().find("data.item");
  rt.nodes().set_enabled(rd, false);
  EXPECT_EQ(rt.leaf_begin(rd), 0u);
  rt.nodes().set_enabled(rd, true);
  const uint64_t begun = rt.leaf_begin(rd);
  EXPECT_NE(begun, 0u);
  ASSERT_EQ(rt.finalize(), DFTRACE_OK);
  rt.leaf_end(rd, begun, static_cast<const prepared_args *>(nullptr), nullptr);
  EXPECT_EQ(count_named(read_lines(file), "item"), 0u);
}

TEST(Schedule, PhasesAndWindowsAsTorchProfiler) {
  using dftrace::detail::schedule;
  using dftrace::detail::step_phase;
  const schedule s{2, 1, 1, 3, 2};  // skip 2; cycles of wait 1, warmup 1, active 3; twice
  const step_phase want[] = {step_phase::skip,   step_phase::skip,   step_phase::wait,
                             step_phase::warmup, step_phase::active, step_phase::active,
                             step_phase::active, step_phase::wait,   step_phase::warmup,
                             step_phase::active, step_phase::active, step_phase::active,
                             step_phase::done,   step_phase::done};
  for (uint64_t i = 0; i < sizeof want / sizeof want[0]; ++i) {
    EXPECT_EQ(s.phase(i), want[i]) << i;
    EXPECT_EQ(s.records(i), want[i] == step_phase::active) << i;
    EXPECT_EQ(s.window_ends_after(i), i == 6 || i == 11) << i;
  }
  EXPECT_EQ(s.window(4), 0u);
  EXPECT_EQ(s.window(9), 1u);
  const schedule off{};  // no schedule: every step recorded, no window
  EXPECT_EQ(off.phase(5), step_phase::none);
  EXPECT_TRUE(off.records(5));
  EXPECT_FALSE(off.window_ends_after(5));
  const schedule forever{0, 0, 0, 2, 0};  // repeat 0: no end
  EXPECT_TRUE(forever.records(1000001));
  EXPECT_TRUE(forever.window_ends_after(1000001));
}

// The table of defined hashes (every open of a traced file asks it): texts that differ only in
// their last bytes (file names in one directory), every length from empty to past one word and
// to long paths, each found with its own value after the table has grown many times; a text
// added twice keeps its first value; a text never added is not found; clear forgets all.
TEST(DefinedHashes, FindsEveryTextItWasGiven) {
  defined_hashes t;
  std::vector<std::string> texts = {""};
  for (int len = 1; len <= 20; ++len) texts.push_back(std::string(static_cast<size_t>(len), 'a'));
  for (int i = 0; i < 20000; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "/tmp/dlio/data/s%05d.npy", i);
    texts.push_back(name);
  }
  texts.push_back(std::string(5000, '/') + "long");
  for (size_t i = 0; i < texts.size(); ++i) t.add(texts[i], i * 7 + 1);
  for (size_t i = 0; i < texts.size(); ++i) {
    const uint64_t *v = t.find(texts[i]);
    ASSERT_NE(v, nullptr) << texts[i];
    EXPECT_EQ(*v, i * 7 + 1) << texts[i];
  }
  t.add(texts[5], 999);
  EXPECT_EQ(*t.find(texts[5]), 5u * 7 + 1);
  EXPECT_EQ(t.find("/tmp/dlio/data/s20000.npy"), nullptr);
  EXPECT_EQ(t.find("aaaaaaaaaaaaaaaaaaaaa"), nullptr);  // 21 bytes: never added
  EXPECT_EQ(t.find(std::string_view("aaaa\0", 5)), nullptr);
  t.clear();
  EXPECT_EQ(t.find(texts[7]), nullptr);
  t.add(texts[7], 3);
  EXPECT_EQ(*t.find(texts[7]), 3u);
}

// A forked child's file (new_file): the parent's texts are known by their hash but defined in
// the child's file only once added there again.
TEST(DefinedHashes, AForkedChildsFileDefinesNothingYetButKnowsTheParentsTexts) {
  defined_hashes t;
  t.add("/data/a", 11);
  t.add("/data/b", 22);
  t.new_file();
  EXPECT_EQ(t.find("/data/a"), nullptr);
  std::string_view text;
  bool defined = true;
  ASSERT_TRUE(t.text_of(22, &text, &defined));
  EXPECT_EQ(text, "/data/b");
  EXPECT_FALSE(defined);
  EXPECT_FALSE(t.text_of(33, &text, &defined));
  t.add("/data/b", 22);
  ASSERT_NE(t.find("/data/b"), nullptr);
  ASSERT_TRUE(t.text_of(22, &text, &defined));
  EXPECT_TRUE(defined);
  EXPECT_EQ(t.find("/data/a"), nullptr);
}
