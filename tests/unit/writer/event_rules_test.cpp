// event_rules_test.cpp: DFTracer 2.x's aggregation rule expressions (writer/event_rules.hpp):
// what parses, what a rule matches, and what a bad rule says.
#include <gtest/gtest.h>

#include <string>

#include "writer/event_rules.hpp"

using namespace dftrace::detail;

namespace {

// Whether one inclusion rule folds the event (no node flag, no exclusion).
bool folds(const std::string &rule, const rule_event &e, int64_t rank = 3) {
  event_rules r;
  std::string why;
  EXPECT_TRUE(r.add(true, rule, &why)) << rule << ": " << why;
  r.set_app("train");
  r.set_rank(rank);
  return r.fold(false, e);
}

std::string error_of(const std::string &rule) {
  event_rules r;
  std::string why;
  EXPECT_FALSE(r.add(true, rule, &why)) << rule;
  EXPECT_TRUE(r.empty());
  return why;
}

const rule_event k_read{"read", "POSIX", 1000.0, 40.0};

}  // namespace

TEST(EventRules, ComparisonsOnEachField) {
  EXPECT_TRUE(folds("cat == 'posix'", k_read));  // categories compare without case
  EXPECT_TRUE(folds("cat = POSIX", k_read));
  EXPECT_FALSE(folds("name == 'READ'", k_read));  // names exactly
  EXPECT_TRUE(folds("name != \"write\"", k_read));
  EXPECT_TRUE(folds("dur < 100", k_read));
  EXPECT_FALSE(folds("dur >= 100", k_read));
  EXPECT_TRUE(folds("dur <= 40 AND dur >= 40", k_read));
  EXPECT_TRUE(folds("ts > 999.5", k_read));
  EXPECT_TRUE(folds("app == 'train'", k_read));
  EXPECT_TRUE(folds("rank == 3", k_read));
  EXPECT_FALSE(folds("rank == 3", k_read, -1));
  EXPECT_TRUE(folds("name > 'open'", k_read));  // text order
}

TEST(EventRules, InLikeAndLogic) {
  EXPECT_TRUE(folds("name IN {open, read, 'close'}", k_read));
  EXPECT_FALSE(folds("name IN {open, close}", k_read));
  EXPECT_TRUE(folds("cat in (posix, stdio)", k_read));
  EXPECT_TRUE(folds("name LIKE 're%'", k_read));
  EXPECT_TRUE(folds("name LIKE '_ea_'", k_read));
  EXPECT_TRUE(folds("name LIKE '%'", k_read));
  EXPECT_FALSE(folds("name LIKE 'r%x'", k_read));
  EXPECT_TRUE(folds("name NOT LIKE 'w%'", k_read));
  EXPECT_TRUE(folds("cat LIKE 'pos%'", k_read));
  // AND binds tighter than OR; NOT and parentheses
  EXPECT_TRUE(folds("name == 'x' OR cat == 'posix' AND dur < 100", k_read));
  EXPECT_FALSE(folds("(name == 'x' OR cat == 'posix') AND dur > 100", k_read));
  EXPECT_TRUE(folds("NOT name == 'write'", k_read));
  EXPECT_FALSE(folds("not (dur < 100)", k_read));
}

TEST(EventRules, InclusionExclusionAndTheNodeFlag) {
  event_rules r;
  std::string why;
  ASSERT_TRUE(r.add(true, "cat == 'posix'", &why));
  ASSERT_TRUE(r.add(false, "name == 'stat'", &why));
  EXPECT_FALSE(r.per_event());
  EXPECT_TRUE(r.fold(false, k_read));
  EXPECT_FALSE(r.fold(false, {"stat", "POSIX", 0, 1}));  // excluded
  EXPECT_FALSE(r.fold(false, {"forward", "compute", 0, 1}));
  EXPECT_TRUE(r.fold(true, {"forward", "compute", 0, 1}));  // the node folds it already
  EXPECT_FALSE(r.fold(true, {"stat", "POSIX", 0, 1}));      // an exclusion still keeps it
  ASSERT_TRUE(r.add(false, "dur > 1000", &why));
  EXPECT_TRUE(r.per_event());
  EXPECT_FALSE(r.fold(false, {"read", "POSIX", 0, 5000}));
}

TEST(EventRules, MistakesSayWhatAndWhere) {
  EXPECT_NE(error_of("size > 3").find("'size' is not a field"), std::string::npos);
  EXPECT_NE(error_of("dur < ").find("a value expected"), std::string::npos);
  EXPECT_NE(error_of("dur < abc").find("'abc' is not a number"), std::string::npos);
  EXPECT_NE(error_of("name == 'read").find("not closed"), std::string::npos);
  EXPECT_NE(error_of("(dur < 3").find("')' expected"), std::string::npos);
  EXPECT_NE(error_of("dur < 3 dur").find("left over"), std::string::npos);
  EXPECT_NE(error_of("name ~ 'x'").find("character 6"), std::string::npos);
  EXPECT_NE(error_of("").find("empty"), std::string::npos);
  EXPECT_NE(error_of("name IN {a, b").find("'}' expected"), std::string::npos);
  // Deep nesting is refused, not recursed into until the stack runs out.
  EXPECT_NE(error_of(std::string(100000, '(') + "dur < 1").find("nested more than 64"),
            std::string::npos);
  std::string nots;
  for (int i = 0; i < 50000; ++i) nots += "NOT ";
  EXPECT_NE(error_of(nots + "dur < 1").find("nested more than 64"), std::string::npos);
  std::string ok;
  for (int i = 0; i < 60; ++i) ok += "(";
  ok += "dur < 1";
  for (int i = 0; i < 60; ++i) ok += ")";
  EXPECT_TRUE(folds(ok, {"x", "y", 0, 0}));
}
