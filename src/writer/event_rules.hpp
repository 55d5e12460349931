// event_rules.hpp: DFTracer 2.x's aggregation rules (the YAML file of DFTRACER_AGGREGATION_FILE:
// `inclusion:` and `exclusion:` lists of expressions such as "cat == 'posix' AND dur < 100"),
// compiled once and evaluated by the writer thread on each complete event it is about to write
// (docs/configuration.md, "Aggregation rules files").
//
//   expr    := and ('OR' and)*          and := not ('AND' not)*
//   not     := 'NOT' not | '(' expr ')' | field op value | field 'IN' '{' value, ... '}'
//              | field ['NOT'] 'LIKE' pattern
//   field   := cat | name | app | ts | dur | rank      op := == = != < <= > >=
//   value   := 'text' | "text" | number | word         pattern: % any run, _ any one character
//
// Keywords and field names are case-insensitive; `cat` compares without case (DFTracer 1.x writes
// POSIX, rules are often written 'posix'), the other text fields exactly. `ts` and `dur` are in
// the trace's unit (microseconds, or nanoseconds with timer.precision: ns), as the line says them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dftrace::detail {

// The fields of one event that rules can read.
struct rule_event {
  std::string_view name, cat;
  double ts = 0, dur = 0;  // in the trace's unit
};

class rule_expr;  // a compiled expression (event_rules.cpp)

class event_rules {
 public:
  event_rules();
  ~event_rules();
  event_rules(const event_rules &) = delete;
  event_rules &operator=(const event_rules &) = delete;

  // Adds one expression; false (and *why: what is wrong, and where) when it does not parse.
  bool add(bool inclusion, std::string_view text, std::string *why);
  bool empty() const { return include_.empty() && exclude_.empty(); }
  // The process's values of `app` and `rank` (rank -1 until known).
  void set_app(std::string app) { app_ = std::move(app); }
  void set_rank(int64_t rank) { rank_.store(rank, std::memory_order_relaxed); }

  // Whether an event is folded: (folded by its node || an inclusion matches) && no exclusion
  // matches. Writer thread only.
  bool fold(bool node_folds, const rule_event &e) const;
  // Whether the rules read ts, dur or rank (else the answer depends on the name alone, and
  // callers may keep it per name).
  bool per_event() const { return per_event_; }

  struct context {
    const rule_event *e;
    std::string_view app;
    int64_t rank;
  };

 private:
  bool any(const std::vector<std::unique_ptr<rule_expr>> &list, const context &c) const;
  std::vector<std::unique_ptr<rule_expr>> include_, exclude_;
  bool per_event_ = false;
  std::string app_;
  std::atomic<int64_t> rank_{-1};
};

}  // namespace dftrace::detail
