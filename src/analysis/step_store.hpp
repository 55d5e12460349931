// step_store.hpp: a run's steps (step_result rows), held in memory up to a budget and beyond it
// in an unlinked temporary file (spill_store), read back in order, a slice at a time, so that
// what the analysis holds does not grow with the number of steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "analysis/spill.hpp"

namespace dftrace::analysis {

// The classes a step's time is split over, in priority order (the first that holds an instant
// takes it), then `other`.
constexpr const char *k_bound_classes[] = {"compute", "comm", "io", "data"};
constexpr size_t k_nbound = 4;

// One step: 88 bytes, in memory up to the store's budget, else in its file.
struct step_result {
  uint64_t start = 0, dur = 0;
  int64_t step = 0, epoch = 0;
  uint64_t parts[k_nbound + 1] = {};  // compute, comm, io, data not hidden, other: sum = dur
  uint32_t group = 0;                 // index into analysis_result::groups
  uint32_t index = 0;                 // position among its group's steps, by start time
  bool has_step = false, has_epoch = false;
  uint8_t pad[6] = {};  // written to the file: no byte left uninitialised
};

class step_store {
 public:
  // Rows kept in memory before they go to the file (0: never to the file).
  explicit step_store(size_t budget = 0) : budget_(budget) {}
  // Appends rows (their order kept); past the budget every row in memory goes to the file
  // (kept in memory when the file cannot be written).
  void append(const step_result *s, size_t n);
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Calls fn(row, index) for the rows [first, first + n) in order, a piece at a time; false
  // when the file cannot be read back (fn has then seen the rows before the failure).
  bool for_each(size_t first, size_t n,
                const std::function<void(const step_result &, size_t)> &fn) const;
  bool for_each(const std::function<void(const step_result &, size_t)> &fn) const {
    return for_each(0, size_, fn);
  }
  // Reads the rows [first, first + n) into *out (replacing it); false as for_each.
  bool read(size_t first, size_t n, std::vector<step_result> *out) const;
  // The rows [first, first + n) of src as this store's next rows, their group read as group:
  // read from src each time, never copied (the merge of partials puts their groups in order
  // so). A store holds either such rows or its own: append() only to one without them.
  void borrow(std::shared_ptr<const step_store> src, size_t first, size_t n, uint32_t group);
  void clear() { *this = step_store(budget_); }

 private:
  struct chunk {
    size_t first = 0, count = 0;
    uint64_t offset = 0;
  };
  struct range {
    std::shared_ptr<const step_store> src;
    size_t first = 0, count = 0, at = 0;  // src's rows [first, first + count): ours from at
    uint32_t group = 0;
  };
  bool for_each_borrowed(size_t first, size_t end,
                         const std::function<void(const step_result &, size_t)> &fn) const;
  std::vector<range> borrowed_;
  size_t budget_ = 0, size_ = 0;
  std::vector<chunk> file_;  // rows [0, in_file) in the file, in order
  size_t in_file_ = 0;
  std::vector<step_result> mem_;  // rows [in_file, size)
  std::shared_ptr<spill_store> spill_;
};

}  // namespace dftrace::analysis
