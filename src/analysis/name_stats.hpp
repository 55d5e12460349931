// name_stats.hpp: each (cat, name)'s calls, total and exact p50 and p99 (`dftrace diff`), from
// durations held in memory or spilled to the analysis's temporary file.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/collect.hpp"

namespace dftrace::analysis {

struct name_summary {
  uint64_t calls = 0, total = 0, p50 = 0, p99 = 0;
};

// The k-th smallest (1-based, k <= d.count()) of a name's durations, for each k in ks, exactly:
// by selection in memory when none is spilled; otherwise by a radix select over the spill file
// (a histogram of at most 2^16 buckets of the candidates' range per pass, with each bucket's
// least and greatest value, narrowing to one bucket's values, until they are one value or fit
// in `collect` values, which are then selected in memory). Memory: at most 1.5 MiB per rank
// (24 bytes per bucket the range reaches) and `collect` values. False when the spill file
// cannot be read back.
bool select_durations(name_durations &d, const spill_store *store, const std::vector<uint64_t> &ks,
                      std::vector<uint64_t> *out, size_t collect = size_t{1} << 20);

// The durations held in memory before they are spilled, and the candidates a select collects:
// 4 x the events' spill budget (collection::spill_after), 8 MiB by default.
inline size_t durations_budget(size_t spill_after) { return 4 * spill_after; }

// Each name's ("cat/name") figures, p50 and p99 by nearest rank (as percentile_sorted); frees
// the durations. A name whose spilled durations cannot be read back is listed in *unread (its
// p50 and p99 then 0). `collect`: as select_durations's.
std::map<std::string, name_summary> summarize_names(
    std::unordered_map<std::string, name_durations> &names, const spill_store *store,
    std::vector<std::string> *unread, size_t collect);

// The line that lists the names whose total time reached 2^64-1 ns (held there by add_ns,
// never wrapped: not exact), the first three by name and how many more; "" when none did.
std::string held_names_line(const std::map<std::string, name_summary> &names);

// The same for the names whose count of calls reached 2^64-1 (an aggregated record's dft_cnt
// added by add_count); "" when none did.
std::string held_calls_line(const std::map<std::string, name_summary> &names);

}  // namespace dftrace::analysis
