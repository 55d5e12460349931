// member_builder.hpp: gathers a pass's lines into members of about member_bytes: metadata lines as
// they come, records formatted into lines (record_format.cpp). Members are then compressed
// (output/compressor_pool.hpp) and written in order (output/output_file.hpp).
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "base/char_buffer.hpp"
#include "base/gzip_member.hpp"
#include "output/member.hpp"
#include "writer/aggregator.hpp"
#include "writer/chunk_pool.hpp"
#include "writer/record.hpp"

namespace dftrace::detail {

// One member of a pass (output/member.hpp), with what the writer counts and keeps.
struct member : text_member {
  uint64_t events = 0;  // event lines (not metadata)
  // Written to the file even in ring mode (metadata, aggregated records, the end line).
  bool kept = false;
};

// Used by one thread at a time (the writer's I/O lock). Buffers are reused from pass to pass.
class member_builder final : public member_list {
 public:
  member_builder(size_t member_bytes, line_format format);

  // Lines of text (each with its '\n'); `events`: they are events (counted in num_events).
  void add_lines(const char *p, size_t n, const member_stats &st, bool has_ts, bool events);
  // Formats the records in c->data[from, to) (folds those marked `aggregate`).
  void add_records(const chunk *c, uint32_t from, uint32_t to);
  // The aggregated records of intervals that ended lag_ns before the newest folded event (all
  // of them with all = true), as lines.
  void add_aggregates(uint64_t lag_ns, bool all);
  // The fatal-signal path: one open interval's aggregated record as a line at out (cap bytes),
  // marked written; null when none is left or it does not fit (aggregator::take_one).
  char *take_aggregate(char *out, size_t cap, uint64_t *ts_us, uint64_t *events) {
    return agg_.take_one(format_, out, cap, ts_us, events);
  }
  // Closes the member being assembled (if any).
  void close();
  // The closed members from the i-th on are written even in ring mode (member::kept).
  void keep_from(size_t i) {
    for (; i < open_; ++i) members_[i]->kept = true;
  }
  // Closed members of this pass, in order.
  size_t closed() const override { return open_; }
  member &at(size_t i) override { return *members_[i]; }
  // Starts the next pass (the closed members were written).
  void next_pass();
  // The closed members were written in the middle of a pass: the member being assembled (if
  // any) becomes the first, and the closed ones' buffers are reused, so that a pass over a
  // large backlog holds a few members at a time, not all of its text.
  void written_closed() {
    if (has_open_) std::swap(members_[0], members_[open_]);
    open_ = 0;
  }
  // The line format: pid and precision (the writer's end line uses it too).
  line_format &format() { return format_; }
  size_t member_bytes() const { return member_bytes_; }
  // Drops this pass's members, closed and open (a pass that ran out of memory); returns the
  // events they held.
  uint64_t discard() {
    uint64_t events = 0;
    const size_t n = open_ + (has_open_ ? 1 : 0);
    for (size_t i = 0; i < n && i < members_.size(); ++i) events += members_[i]->events;
    open_ = 0;
    has_open_ = false;
    return events;
  }
  // Forgets the pass being assembled (fork's child).
  void forget() {
    open_ = 0;
    has_open_ = false;
    agg_ = aggregator();  // a forked child forgets the parent's events
    limits_.clear();
    rule_names_.clear();
  }

 private:
  member &assembling();

  const size_t member_bytes_;
  line_format format_;
  arg_index arg_index_;  // formatting scratch for events with many arguments
  format_cache cache_;   // text formatted once for many lines
  aggregator agg_;       // aggregation mode's open intervals
  // output.budget and output.sample, per name: the budget's current window (second or hour)
  // and what the name wrote in it (events or bytes), whether it went over (aggregated from then
  // on), its sampling (1 event in `sample` written; 0: not looked up yet) and its events seen.
  struct name_limits {
    uint64_t window = 0, used = 0, sample = 0, seen = 0;
    bool over = false;
  };
  std::unordered_map<const std::string *, name_limits> limits_;
  bool limits_on_ = false;  // a budget or a sampling is configured
  // Whether the name's sampling or budget folds the complete event r (not yet written).
  bool limit_folds(const rec &r, name_limits *l);
  // The bytes of r's line against a bytes-per-hour budget.
  void count_bytes(const rec &r, name_limits *l, size_t bytes);
  // The metadata line that says what happens to r's name from now on (a budget's switch, a
  // sampling): {"name":<kind>,"cat":"dftracer",...,"args":{"name":<event name>,"value":...}}.
  void limit_line(const rec &r, const char *kind, const std::string &value);
  uint64_t start_epoch_ns(const rec &r) const;
  // format_.rules: whether a complete event is folded. Per name: its name and category as text,
  // and the answers (node flag off, on) when the rules read neither ts, dur nor rank (-1: not
  // known yet).
  struct rule_name {
    std::string name, cat;
    int8_t folds[2] = {-1, -1};
  };
  std::unordered_map<const std::string *, rule_name> rule_names_;
  bool rules_fold(const rec &r);
  std::vector<std::unique_ptr<member>> members_;
  size_t open_ = 0;  // index of the member being assembled
  bool has_open_ = false;
};

}  // namespace dftrace::detail
