// aggregator.hpp: aggregation mode (aggregation.*): the complete events of a node marked
// `aggregate` are folded, per interval, per (name, category, thread), into one record: the
// count, and the min, max and sum of the duration and of each numeric per-use argument
// (docs/format.md, "Aggregated records"). The file hashes of an I/O event (`fhash`, and an
// in-kernel copy's `from_hash` and `to_hash`) are part of the key and written as they are, so
// that a record says which files its calls read and wrote. The writer thread folds records here
// instead of formatting them, so the application pays what it pays for any event and the trace
// holds one line per name, thread and interval.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/gzip_member.hpp"
#include "writer/record.hpp"

namespace dftrace::detail {

class aggregator {
 public:
  // Folds a complete event (r.aggregate set); f gives the clock mapping and the unit.
  void add(const line_format &f, const rec &r);
  // Appends the lines of every interval that ended at least `lag_ns` before the newest event
  // folded (all of them with all = true) to out; returns how many events they hold. Events
  // that arrive after their interval was written start a new record for it (sums stay exact).
  uint64_t take(const line_format &f, uint64_t lag_ns, bool all, std::string *out,
                member_stats *st);
  bool empty() const { return groups_.empty(); }
  // The fatal-signal path: writes the line of one open interval's record at out (cap bytes)
  // and marks it written (it keeps its memory: nothing is freed or allocated); returns the
  // line's end, or null when none is left or the next one does not fit. *ts_us: its "ts" in
  // microseconds; *events: the events it holds.
  char *take_one(const line_format &f, char *out, size_t cap, uint64_t *ts_us, uint64_t *events);

 private:
  struct num {         // one numeric argument
    bool set = false;  // a value was folded since the record was last written
    bool is_double = false;
    int64_t imin = 0, imax = 0, isum = 0;
    double dmin = 0, dmax = 0, dsum = 0;
  };
  // The per-use arguments that identify a record instead of being folded (k_ident_keys in
  // aggregator.cpp): their values, and which of them the events have.
  static constexpr int k_idents = 3;
  struct key {
    const std::string *name_cat;
    int64_t tid;
    uint64_t interval;
    uint64_t ident[k_idents];
    uint8_t ident_set;  // bit i: ident[i] is there; bit k_idents + i: it is signed (INT)
    bool operator==(const key &o) const {
      return name_cat == o.name_cat && tid == o.tid && interval == o.interval &&
             ident_set == o.ident_set && ident[0] == o.ident[0] && ident[1] == o.ident[1] &&
             ident[2] == o.ident[2];
    }
  };
  struct arg {        // a folded argument
    std::string key;  // as the events give it
    std::string esc;  // as the line writes it (escaped)
    num n;
  };
  struct group {
    key k;
    uint64_t count = 0, dmin = 0, dmax = 0, dsum = 0;  // durations in the trace's unit; count
                                                       // 0: written by the signal path
    std::vector<arg> args;                             // first-seen order
  };
  struct key_hash {
    size_t operator()(const key &k) const {
      return std::hash<const void *>()(k.name_cat) ^ (k.tid * 0x9e3779b97f4a7c15ull) ^
             (k.interval * 0xc2b2ae3d27d4eb4full) ^ (k.ident[0] * 0xff51afd7ed558ccdull) ^
             (k.ident[1] * 0xc4ceb9fe1a85ec53ull) ^ (k.ident[2] * 0x94d049bb133111ebull) ^
             k.ident_set;
    }
  };
  static void fold(group *g, std::string_view key, bool dbl, const char *value);
  // A record's line: its length bound, and the line itself (with '\n') at p; returns its end.
  // No allocation.
  static size_t line_bound(const line_format &f, const group &g);
  static char *write_line(const line_format &f, const group &g, char *p);
  std::unordered_map<key, group, key_hash> groups_;
  // add's numeric arguments to fold, gathered in its one pass over them (kept: no allocation
  // per event).
  struct arg_value {
    std::string_view key;
    const char *value;  // 8 bytes
    bool dbl;
  };
  std::vector<arg_value> pending_;
  uint64_t newest_ns_ = 0;  // the newest event start folded (epoch ns)
};

}  // namespace dftrace::detail
