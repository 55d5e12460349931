// partial_codec_test.cpp: a partial whose spilled steps or collective calls cannot be read back
// while it is encoded (the temporary file cut short under it) says so, and the merge lists the
// group as damaged; the same partial read whole gives the same figures as one machine.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "analysis/analyze.hpp"
#include "analysis/inputs.hpp"
#include "analysis/partial_codec.hpp"
#include "analysis/result_json.hpp"
#include "analysis/temp_files.hpp"

using namespace dftrace::analysis;
using dftrace::test::cut_temporary_files;

namespace {

constexpr uint64_t k_t0 = 1700000000000000000ull;

std::string temp_dir() {
  std::string d = ::testing::TempDir() + "/partial_codec_" + std::to_string(getpid());
  mkdir(d.c_str(), 0700);
  return d;
}

// One ranked process of `calls` all_reduce calls (a group of 2) and `steps` step events.
std::string write_rank(const std::string &dir, int rank, int calls, int steps) {
  const std::string path = dir + "/r" + std::to_string(rank) + ".pfw";
  FILE *f = fopen(path.c_str(), "w");
  const int pid = 100 + rank;
  fprintf(f,
          "[\n{\"id\":1,\"name\":\"PR\",\"cat\":\"dftracer\",\"pid\":%d,\"tid\":%d,\"ph\":\"M\","
          "\"args\":{\"name\":\"time_metric\",\"value\":\"ns\"}}\n"
          "{\"id\":2,\"name\":\"PR\",\"cat\":\"dftracer\",\"pid\":%d,\"tid\":%d,\"ph\":\"M\","
          "\"args\":{\"name\":\"rank\",\"value\":%d}}\n",
          pid, pid, pid, pid, rank);
  int id = 3;
  for (int k = 0; k < calls; ++k)
    fprintf(f,
            "{\"id\":%d,\"name\":\"all_reduce\",\"cat\":\"comm\",\"pid\":%d,\"tid\":%d,"
            "\"ts\":%llu,\"dur\":5,\"ph\":\"X\",\"args\":{\"comm_size\":2,\"comm_group\":\"w\"}}\n",
            id++, pid, pid, static_cast<unsigned long long>(k_t0 + 10 * k + rank));
  for (int k = 0; k < steps; ++k)
    fprintf(f,
            "{\"id\":%d,\"name\":\"step\",\"cat\":\"compute\",\"pid\":%d,\"tid\":%d,"
            "\"ts\":%llu,\"dur\":7,\"ph\":\"X\",\"args\":{\"step\":%d}}\n",
            id++, pid, pid, static_cast<unsigned long long>(k_t0 + 1000000 + 10 * k), k);
  fprintf(f, "]\n");
  fclose(f);
  return path;
}

struct merged {
  bool calls_spilled = false;  // some group's calls were in the temporary file when encoded
  bool decoded = false;
  std::string why;
  analysis_result r;
  std::string doc;  // the document of `dftrace analyze --json`
};

// Reads the ranks' files with a spill budget of 16 events (8 collective calls, 2 step rows), runs
// phase 1, optionally cuts the temporary files, encodes, decodes and merges the partial.
merged run(const std::vector<std::string> &paths, bool cut) {
  layer_table table;
  dftrace::detail::read_options opt;
  opt.threads = 1;
  collection c;
  c.spill_after = 16;
  input_report in;
  read_traces(paths, table, opt, &c, &in, {});
  analysis_partial p = analyze_groups(c, table);
  merged m;
  for (const group_partial &g : p.groups)
    m.calls_spilled = m.calls_spilled || !g.colls.spilled.empty();
  if (cut) {
    EXPECT_GT(cut_temporary_files(), 0);
  }
  const std::string bytes = encode_partial(in, p);
  std::vector<analysis_partial> parts(1);
  input_report back;
  m.decoded = decode_partial(bytes, &back, &parts[0], &m.why);
  if (m.decoded) m.decoded = merge_partials(parts, table, &m.r, &m.why);
  if (m.decoded) m.doc = result_json(back, m.r, 2);
  return m;
}

class PartialCodec : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir();
    setenv("TMPDIR", dir_.c_str(), 1);
    setenv("DFTRACE_ANALYZE_SPILL_EVENTS", "16", 1);  // step_rows_budget(): 2 rows
  }
  void TearDown() override {
    unsetenv("DFTRACE_ANALYZE_SPILL_EVENTS");
    unsetenv("TMPDIR");
    for (const char *f : {"/r0.pfw", "/r1.pfw"}) std::remove((dir_ + f).c_str());
    rmdir(dir_.c_str());
  }
  std::string dir_;
};

// The merge lists a rank as not read back, and the document says the input is incomplete (so
// the command exits 2 unless --allow-damaged).
bool names_lost_group(const merged &m) {
  bool listed = false;
  for (const std::string &p : m.r.process_problems)
    listed = listed || p.find("could not be read back") != std::string::npos;
  return listed && m.doc.find("\"complete\":false") != std::string::npos &&
         m.doc.find("could not be read back") != std::string::npos;
}

}  // namespace

TEST_F(PartialCodec, SpilledCallsReadWholeAreMatched) {
  const std::vector<std::string> paths = {write_rank(dir_, 0, 40, 0), write_rank(dir_, 1, 40, 0)};
  merged m = run(paths, false);
  EXPECT_TRUE(m.calls_spilled);
  ASSERT_TRUE(m.decoded) << m.why;
  EXPECT_TRUE(m.r.process_problems.empty());
  EXPECT_NE(m.doc.find("\"complete\":true"), std::string::npos);
  EXPECT_EQ(m.r.collectives.instances, 40u);
  ASSERT_EQ(m.r.collectives.ops.size(), 1u);
  EXPECT_EQ(m.r.collectives.ops[0].spread_max, 1u);  // rank 1 arrives 1 ns after rank 0
}

TEST_F(PartialCodec, CollectiveCallsLostWhileEncodingAreDamage) {
  const std::vector<std::string> paths = {write_rank(dir_, 0, 40, 0), write_rank(dir_, 1, 40, 0)};
  merged m = run(paths, true);
  EXPECT_TRUE(m.calls_spilled);
  ASSERT_TRUE(m.decoded) << m.why;
  EXPECT_TRUE(names_lost_group(m)) << "the calls written as zeros were not reported";
}

TEST_F(PartialCodec, StepsLostWhileEncodingAreDamage) {
  const std::vector<std::string> paths = {write_rank(dir_, 0, 0, 30), write_rank(dir_, 1, 0, 30)};
  merged m = run(paths, true);
  ASSERT_TRUE(m.decoded) << m.why;
  EXPECT_TRUE(names_lost_group(m)) << "the steps written short were not reported";
  EXPECT_EQ(m.r.steps.size(), 60u);  // every row is there, as zeros, and the group says so
}
