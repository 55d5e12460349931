// member_builder.cpp: a pass's lines into members.
#include "writer/member_builder.hpp"

#include <string>
#include <string_view>

#include "base/clock.hpp"
#include "writer/event_rules.hpp"

namespace dftrace::detail {

member_builder::member_builder(size_t member_bytes, line_format format)
    : member_bytes_(member_bytes), format_(std::move(format)) {
  format_.index = &arg_index_;
}

member &member_builder::assembling() {
  if (!has_open_) {
    if (open_ == members_.size()) {
      members_.push_back(std::make_unique<member>());
      members_.back()->text.reserve(member_bytes_ + 4096);
    }
    member &m = *members_[open_];
    m.text.clear();
    m.stats = member_stats{};
    m.has_ts = false;
    m.events = 0;
    m.ok = false;
    has_open_ = true;
  }
  return *members_[open_];
}

void member_builder::close() {
  if (!has_open_) return;
  has_open_ = false;
  ++open_;
}

void member_builder::next_pass() {
  open_ = 0;
  if (arg_index_.slots.size() > (size_t{1} << 16)) arg_index_ = arg_index{};  // after a huge event
}

void member_builder::add_lines(const char *p, size_t n, const member_stats &st, bool has_ts,
                               bool events) {
  if (n == 0) return;
  if (has_open_ && !members_[open_]->text.empty() &&
      members_[open_]->text.size() + n > member_bytes_)
    close();
  member &m = assembling();
  m.text.append(p, n);
  m.stats.lines += st.lines;
  if (events) m.events += st.lines;
  if (has_ts) m.stats.add_ts(st.ts_min, st.ts_max, m.has_ts);
}

void member_builder::add_records(const chunk *c, uint32_t from, uint32_t to) {
  uint32_t off = from;
  while (off < to) {
    const rec &r = *reinterpret_cast<const rec *>(c->data + off);
    off += r.size;
    const bool fold = format_.rules && r.type == rec_type::complete ? rules_fold(r) : r.aggregate;
    if ((fold || (format_.budget_per_s && r.type == rec_type::complete && over_budget(r))) &&
        format_.aggregate_interval_ns) {
      agg_.add(format_, r);  // no line: folded into its interval's record
      continue;
    }
    const size_t bound = line_bound(r);
    if (has_open_ && !members_[open_]->text.empty() &&
        members_[open_]->text.size() + bound > member_bytes_)
      close();
    member &m = assembling();
    if (r.use_args_len > arg_index::k_small * sizeof(raw_arg) && !r.use_args_json)
      arg_index_.fit(std::string_view(r.use_args(), r.use_args_len),
                     true);  // linear time for many arguments
    uint64_t ts;
    m.text.set_end(format_record(format_, r, m.text.room(bound), &ts));
    ++m.stats.lines;
    if (r.type == rec_type::mark) continue;  // a metadata line: no event, no "ts"
    ++m.events;
    m.stats.add_ts(ts, m.has_ts);
  }
}

bool member_builder::rules_fold(const rec &r) {
  rule_name &n = rule_names_[r.name_cat];
  if (n.name.empty() && n.cat.empty()) {
    // ,"name":"<name>","cat":"<cat>" as the node escaped it; rules compare the text as written.
    const std::string &nc = *r.name_cat;
    const size_t name_at = nc.find("\"name\":\"") + 8, cat_key = nc.rfind("\",\"cat\":\"");
    if (name_at >= 8 && cat_key != std::string::npos && cat_key >= name_at) {
      n.name = nc.substr(name_at, cat_key - name_at);
      n.cat = nc.substr(cat_key + 9, nc.size() - (cat_key + 9) - 1);
    }
  }
  int8_t &known = n.folds[r.aggregate ? 1 : 0];
  if (known >= 0) return known != 0;
  rule_event e;
  e.name = n.name;
  e.cat = n.cat;
  const event_rules &rules = *format_.rules;
  if (rules.per_event()) {
    uint64_t start = r.start, end = r.end;
    if (r.ticked && format_.ticks) {
      start = format_.ticks->to_ns(start);
      end = format_.ticks->to_ns(end);
    }
    const uint64_t ts_us = (start + format_.epoch_offset_ns) / 1000;
    e.ts = format_.ns_precision ? double(start + format_.epoch_offset_ns) : double(ts_us);
    e.dur = format_.ns_precision ? double(end - start)
                                 : double((end + format_.epoch_offset_ns) / 1000 - ts_us);
    return rules.fold(r.aggregate != 0, e);
  }
  const bool folds = rules.fold(r.aggregate != 0, e);
  known = folds ? 1 : 0;  // the answer depends on the name (and the node's flag) alone
  return folds;
}

bool member_builder::over_budget(const rec &r) {
  budget_state &b = budget_[r.name_cat];
  if (b.over) return true;
  uint64_t start = r.start;
  if (r.ticked && format_.ticks) start = format_.ticks->to_ns(start);
  const uint64_t second = (start + format_.epoch_offset_ns) / 1000000000u;
  if (second != b.second) {
    b.second = second;
    b.count = 0;
  }
  if (++b.count <= format_.budget_per_s) return false;
  // Over: from this event on, the name is aggregated, and the trace says so once.
  b.over = true;
  std::string line =
      "{\"name\":\"budget\",\"cat\":\"dftracer\",\"pid\":" + std::to_string(format_.pid) +
      ",\"tid\":" + std::to_string(r.tid) + ",\"ph\":\"M\",\"args\":{";
  if (!format_.hhash_field.empty()) line += format_.hhash_field + ",";
  line += "\"name\":\"" + std::string(*r.name_cat).substr(9, r.name_cat->find("\",\"cat\"") - 9) +
          "\",\"value\":\"aggregated: over " + std::to_string(format_.budget_per_s) +
          " events in a second\"}}\n";
  add_lines(line.data(), line.size(), member_stats{1, 0, 0}, false, false);
  return true;
}

void member_builder::add_aggregates(uint64_t lag_ns, bool all) {
  if (agg_.empty()) return;
  std::string text;
  member_stats st;
  const uint64_t events = agg_.take(format_, lag_ns, all, &text, &st);
  if (text.empty()) return;
  add_lines(text.data(), text.size(), st, true, false);
  members_[open_]->events += events;  // the events these lines hold
}

}  // namespace dftrace::detail
