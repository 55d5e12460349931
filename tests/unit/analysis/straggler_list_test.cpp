// straggler_list_test.cpp: the stragglers kept past a budget (sorted through temporary files)
// come back in the document's order, as often as asked, with their count, summed excess and
// first few; a file cut short under them is never read as fewer stragglers in silence.
#include "analysis/straggler_list.hpp"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "analysis/analyze.hpp"
#include "analysis/inputs.hpp"
#include "analysis/result_json.hpp"
#include "analysis/temp_files.hpp"

using namespace dftrace::analysis;
using dftrace::test::cut_temporary_files;

namespace {

// n stragglers over 7 groups, with few distinct excesses (ties broken by group, then by the
// step's text: "10" before "9"), added in a shuffled order.
std::vector<straggler> some(size_t n) {
  std::vector<straggler> v;
  for (size_t i = 0; i < n; ++i)
    v.push_back({i % 7, (i % 3 ? "" : "2:") + std::to_string(i), 5000000 + 1000 * (i % 5),
                 1000000 + (i % 4)});
  std::shuffle(v.begin(), v.end(), std::mt19937(42));
  return v;
}

// The order the document lists them in.
bool before(const straggler &a, const straggler &b) {
  if (a.dur - a.median != b.dur - b.median) return a.dur - a.median > b.dur - b.median;
  return a.group != b.group ? a.group < b.group : a.step < b.step;
}

bool same(const straggler &a, const straggler &b) {
  return a.group == b.group && a.step == b.step && a.dur == b.dur && a.median == b.median;
}

class StragglerList : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/straggler_list_" + std::to_string(getpid());
    mkdir(dir_.c_str(), 0700);
    setenv("TMPDIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("TMPDIR");
    rmdir(dir_.c_str());
  }
  std::string dir_;
};

}  // namespace

TEST_F(StragglerList, InTheDocumentsOrderPastTheBudget) {
  for (size_t budget : {size_t{0}, size_t{3}, size_t{64}}) {  // 3: 334 runs, two merge levels
    std::vector<straggler> want = some(1000);
    straggler_list list(budget);
    uint64_t excess = 0;
    for (const straggler &s : want) {
      list.add(s.group, s.step, s.dur, s.median);
      excess += s.dur - s.median;
    }
    ASSERT_TRUE(list.finish());
    std::sort(want.begin(), want.end(), before);
    EXPECT_EQ(list.size(), want.size());
    EXPECT_EQ(list.excess_ns(), excess);
    ASSERT_EQ(list.head().size(), straggler_list::k_head);
    for (size_t i = 0; i < list.head().size(); ++i) EXPECT_TRUE(same(list.head()[i], want[i]));
    for (int pass = 0; pass < 2; ++pass) {  // read back as often as asked
      std::vector<straggler> got;
      ASSERT_TRUE(list.for_each([&](const straggler &s) { got.push_back(s); }));
      ASSERT_EQ(got.size(), want.size()) << "budget " << budget;
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_TRUE(same(got[i], want[i])) << "budget " << budget << ", straggler " << i;
    }
  }
}

TEST_F(StragglerList, ALostReadBackIsSaidWhenTheDocumentIsWritten) {
  analysis_result r;
  r.groups.resize(7);
  for (size_t g = 0; g < r.groups.size(); ++g) {
    r.groups[g].has_rank = true;
    r.groups[g].rank = static_cast<int64_t>(g);
  }
  r.stragglers = straggler_list(4);
  for (const straggler &s : some(100)) r.stragglers.add(s.group, s.step, s.dur, s.median);
  ASSERT_TRUE(r.stragglers.finish());
  r.steps_compared = 100;
  input_report in;
  bool whole = false;
  const std::string doc = result_json(in, r, 7, &whole);
  EXPECT_TRUE(whole);
  EXPECT_NE(doc.find("\"step\":\"2:0\""), std::string::npos);
  ASSERT_GT(cut_temporary_files(), 0);  // the stragglers' own file, kept after the sort
  const std::string cut = result_json(in, r, 7, &whole);
  EXPECT_FALSE(whole) << "stragglers lost from the document in silence";
  EXPECT_LT(cut.size(), doc.size());
}

TEST_F(StragglerList, StepItemsLostWhenTheDocumentIsWrittenAreSaid) {
  analysis_result r;
  r.groups.resize(1);
  r.groups[0].steps = 10;
  r.steps = step_store(2);  // past 2 rows, in the file
  for (uint32_t i = 0; i < 10; ++i) {
    step_result s;
    s.index = i;
    s.start = 1000 * i;
    s.dur = 7;
    s.parts[k_nbound] = 7;
    r.steps.append(&s, 1);
  }
  input_report in;
  bool whole = false;
  const std::string doc = result_json(in, r, 1, &whole);
  EXPECT_TRUE(whole);
  ASSERT_GT(cut_temporary_files(), 0);
  const std::string cut = result_json(in, r, 1, &whole);
  EXPECT_FALSE(whole) << "step items lost from the document in silence";
  EXPECT_LT(cut.size(), doc.size());
}
