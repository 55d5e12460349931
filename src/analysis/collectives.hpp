// collectives.hpp: collectives matched across ranks (MPI and comm.* events): for each instance
// when each rank arrived, and the time each spent blocked waiting for the last one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/spill.hpp"
#include "reader/line_parser.hpp"

namespace dftrace::analysis {

// One collective call of a process: its event [start, end) and, for an asynchronous call with a
// `comm_id`, the `comm.wait` event of that id [wait_start, wait_end) (empty when none).
struct coll_call {
  uint64_t start = 0, end = 0, wait_start = 0, wait_end = 0;
  int64_t comm_id = 0;
  uint32_t key = 0;  // index into coll_data::keys
  bool has_id = false;
  uint8_t pad[3] = {};  // written to the spill file: no byte left uninitialised
};

// A `comm.wait` event with a `comm_id` (the wait of an asynchronous torch.distributed call).
struct coll_wait {
  int64_t id = 0;
  uint64_t start = 0, end = 0;
};

// The collectives of a block, a process or a group. keys: "OP\x1fSIZE\x1fGROUP" (SIZE: the
// `comm_size` argument as a number, "" when absent; GROUP: the `comm_group` argument, "" when
// absent), the matching key. The calls are those in a temporary file (spilled, in order), then
// those in memory (calls): keys never change index until canonical(), so spilled calls keep them.
// The waits likewise: those in the file (spilled_waits), then those in memory; their order does
// not matter (resolve_waits sorts them).
struct coll_data {
  struct chunk {
    uint64_t offset = 0;
    size_t count = 0;
  };
  std::vector<std::string> keys;
  std::vector<coll_call> calls;
  std::vector<coll_wait> waits;
  std::shared_ptr<spill_store> file;  // where the spilled calls and waits lie
  std::vector<chunk> spilled;
  size_t spilled_calls = 0;
  std::vector<chunk> spilled_waits;
  bool lost = false;  // spilled calls or waits could not be read back (here or in data appended)
  uint32_t key_of(std::string_view op, std::string_view size, std::string_view group);
  size_t size() const { return spilled_calls + calls.size(); }
  // Moves the calls and waits in memory to f; false (kept in memory) when it cannot.
  bool spill(const std::shared_ptr<spill_store> &f);
  // Brings the spilled calls and waits back into memory, before those there; false when they
  // cannot be read (they are then lost, and `lost` says so).
  bool load();
  // The calls [first, first + n) of the whole (spilled first), into *out (replaced); false
  // when the file cannot be read.
  bool read(size_t first, size_t n, std::vector<coll_call> *out) const;
  // Appends o's calls and waits (keys translated). o's spilled calls stay in the file when its
  // keys are this one's (as when this one is empty), else they are read back first. Waits are
  // tied to calls per process only: call resolve_waits before appending one process's data to
  // another's.
  void append(coll_data &o);
  // Gives each asynchronous call the wait of its comm_id (the first, by start), then drops the
  // waits: a process's comm_id numbers are its own.
  void resolve_waits();
  // Calls in a fixed order (key text, start, end, wait): independent of the order of files.
  void canonical();
  bool empty() const {
    return calls.empty() && waits.empty() && spilled.empty() && spilled_waits.empty();
  }
};

// The operation a complete event is, when it is a collective ("comm.all_reduce",
// "MPI_Allreduce"), else empty; point-to-point, non-blocking posts and waits are none.
std::string_view collective_op(std::string_view cat, std::string_view name);
// Records a complete event of category comm or MPI when it is a collective or a comm.wait with
// a comm_id.
void scan_collective(const detail::parsed_line &pl, uint64_t ts, uint64_t end, coll_data *d);

// One rank's (group's) figures at one operation.
struct coll_rank {
  size_t group = 0;
  uint64_t calls = 0, wait_ns = 0;  // wait_ns: blocked before the last rank arrived
  uint64_t last = 0;                // instances it arrived last at (strictly after another)
  uint64_t caused_ns = 0;           // the others' wait at those instances
};

struct coll_op {
  std::string op;
  bool has_size = false;
  uint64_t comm_size = 0;
  std::string group;  // the comm_group argument the calls carry ("" when none)
  uint64_t instances = 0, unmatched_calls = 0;
  uint64_t wait_ns = 0, blocked_ns = 0;  // blocked_ns: the matched calls' own time, all ranks
  uint64_t spread_p50 = 0, spread_p99 = 0, spread_max = 0;
  bool has_last = false;
  size_t last_group = 0;  // the rank that arrived last most often
  uint64_t last_count = 0;
  std::vector<coll_rank> ranks;  // in group order
  std::string note;              // why some calls (or all) were not matched
};

struct coll_group_total {
  size_t group = 0;
  uint64_t calls = 0, wait_ns = 0, caused_ns = 0, last = 0;
};

struct coll_summary {
  std::vector<coll_op> ops;              // by op, then comm_size
  std::vector<coll_group_total> groups;  // groups that called a matched collective
  uint64_t instances = 0, wait_ns = 0, blocked_ns = 0;
  // Every time figure is a sum of durations held at 2^64-1 (add_ns), none past blocked_ns
  // (each call's wait is part of its blocked time): held(blocked_ns) says whether any is held.
};

// Matches the groups' collectives (groups[g]: group g's data, canonical, in memory or spilled)
// by key, the k-th call of each group at a key being instance k: a walk over the groups'
// sequences side by side, holding a piece of each. Each key's instances' spreads (8 bytes
// each) are held up to `budget` (0: no limit), then in a temporary file, their p50 and p99
// selected over it. *complete (when given) is false when a spilled call or spread could not be
// read back (its instance then counts as starting at 0).
coll_summary match_collectives(const std::vector<const coll_data *> &groups, size_t budget,
                               bool *complete = nullptr);

// Collective calls held in memory before they go to a temporary file (48 bytes each): half the
// events' spill budget (128 Ki, 6 MiB, by default), 0 for never.
inline size_t coll_calls_budget(size_t spill_after) {
  return spill_after / 2 ? spill_after / 2 : spill_after;
}
// Spreads of one key's instances held in memory before they go to a temporary file (8 bytes
// each): the calls' budget (128 Ki, 1 MiB, by default), 0 for never.
inline size_t coll_spreads_budget(size_t spill_after) { return coll_calls_budget(spill_after); }

}  // namespace dftrace::analysis
