// member_builder.cpp: a pass's lines into members.
#include "writer/member_builder.hpp"

#include <string>
#include <string_view>

#include "base/clock.hpp"
#include "writer/event_rules.hpp"

namespace dftrace::detail {

namespace {

// A node's pre-escaped ,"name":"<name>","cat":"<cat>" split into its name and category as
// written (escaped); false when it is not of that shape.
bool split_name_cat(const std::string &nc, std::string *name, std::string *cat) {
  const size_t name_at = nc.find("\"name\":\"") + 8, cat_key = nc.rfind("\",\"cat\":\"");
  if (name_at < 8 || cat_key == std::string::npos || cat_key < name_at) return false;
  *name = nc.substr(name_at, cat_key - name_at);
  *cat = nc.substr(cat_key + 9, nc.size() - (cat_key + 9) - 1);
  return true;
}

}  // namespace

member_builder::member_builder(size_t member_bytes, line_format format)
    : member_bytes_(member_bytes), format_(std::move(format)) {
  format_.index = &arg_index_;
  format_.cache = &cache_;
  limits_on_ = format_.budget_per_s || format_.budget_bytes_per_h || !format_.sample.empty();
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
    m.kept = false;
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
    const bool complete = r.type == rec_type::complete;
    bool fold = format_.rules && complete ? rules_fold(r) : r.aggregate;
    name_limits *lim = nullptr;
    if (!fold && complete && limits_on_) {
      lim = &limits_[r.name_cat];
      fold = limit_folds(r, lim);
    }
    if (fold && format_.aggregate_interval_ns) {
      agg_.add(format_, r);  // no line: folded into its interval's record
      continue;
    }
    const size_t bound = line_bound(r);
    if (has_open_ && !members_[open_]->text.empty() &&
        members_[open_]->text.size() + bound > member_bytes_)
      close();
    member &m = assembling();
    if (r.use_args_len > arg_index::k_small * sizeof(raw_arg) && r.use_args_kind == args_kind::raw)
      arg_index_.fit(std::string_view(r.use_args(), r.use_args_len),
                     true);  // linear time for many arguments
    uint64_t ts;
    const size_t before = m.text.size();
    m.text.set_end(format_record(format_, r, m.text.room(bound), &ts));
    if (lim && format_.budget_bytes_per_h) count_bytes(r, lim, m.text.size() - before);
    ++m.stats.lines;
    if (r.type == rec_type::mark) continue;  // a metadata line: no event, no "ts"
    ++m.events;
    m.stats.add_ts(ts, m.has_ts);
  }
}

bool member_builder::rules_fold(const rec &r) {
  rule_name &n = rule_names_[r.name_cat];
  if (n.name.empty() && n.cat.empty())
    split_name_cat(*r.name_cat, &n.name, &n.cat);  // rules compare the text as written
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

uint64_t member_builder::start_epoch_ns(const rec &r) const {
  const uint64_t start = r.ticked && format_.ticks ? format_.ticks->to_ns(r.start) : r.start;
  return start + format_.epoch_offset_ns;
}

bool member_builder::limit_folds(const rec &r, name_limits *l) {
  if (l->over) return true;
  if (l->sample == 0) {
    // output.sample: the most specific of "ai" (every name), "<cat>", "<cat>.<name>"; of equal
    // ones, the last.
    l->sample = 1;
    std::string name, cat;
    if (!format_.sample.empty() && split_name_cat(*r.name_cat, &name, &cat)) {
      const std::string path = cat + "." + name;
      int best = -1;
      for (const auto &rule : format_.sample) {
        const int level = rule.first == "ai"   ? 0
                          : rule.first == cat  ? 1
                          : rule.first == path ? 2
                                               : -1;
        if (level >= best && level >= 0) {
          best = level;
          l->sample = rule.second;
        }
      }
    }
    if (l->sample > 1)
      limit_line(r, "sample",
                 "sampled: 1 in " + std::to_string(l->sample) +
                     " written, the others in aggregated records");
  }
  if (l->sample > 1 && l->seen++ % l->sample != 0) return true;
  if (!format_.budget_per_s) return false;
  const uint64_t second = start_epoch_ns(r) / 1000000000u;
  if (second != l->window) {
    l->window = second;
    l->used = 0;
  }
  if (++l->used <= format_.budget_per_s) return false;
  // Over: from this event on, the name is aggregated, and the trace says so once.
  l->over = true;
  limit_line(r, "budget",
             "aggregated: over " + std::to_string(format_.budget_per_s) + " events in a second");
  return true;
}

void member_builder::count_bytes(const rec &r, name_limits *l, size_t bytes) {
  if (l->over) return;
  const uint64_t hour = start_epoch_ns(r) / 3600000000000u;
  if (hour != l->window) {
    l->window = hour;
    l->used = 0;
  }
  l->used += bytes;
  if (l->used <= format_.budget_bytes_per_h) return;
  l->over = true;  // from the next event on
  limit_line(
      r, "budget",
      "aggregated: over " + std::to_string(format_.budget_bytes_per_h) + " bytes in an hour");
}

void member_builder::limit_line(const rec &r, const char *kind, const std::string &value) {
  std::string name, cat;
  split_name_cat(*r.name_cat, &name, &cat);
  std::string line = std::string("{\"name\":\"") + kind +
                     "\",\"cat\":\"dftracer\",\"pid\":" + std::to_string(format_.pid) +
                     ",\"tid\":" + std::to_string(r.tid) + ",\"ph\":\"M\",\"args\":{";
  if (!format_.hhash_field.empty()) line += format_.hhash_field + ",";
  line += "\"name\":\"" + name + "\",\"value\":\"" + value + "\"}}\n";
  add_lines(line.data(), line.size(), member_stats{1, 0, 0}, false, false);
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
