// straggler_list.cpp: stragglers sorted past a budget, then kept in order in a temporary file.
#include "analysis/straggler_list.hpp"

#include <algorithm>
#include <cstring>

#include "analysis/held_sum.hpp"

namespace dftrace::analysis {

namespace {

constexpr size_t k_piece = 512;  // rows read back at a time: 32 KiB

straggler from_row(const straggler_row &s) {
  return {s.group, s.step, s.median + s.excess, s.median};
}

}  // namespace

straggler_list::straggler_list(size_t budget)
    : budget_(budget), sorter_(std::make_shared<straggler_sorter>(budget)) {}

void straggler_list::add(size_t group, const std::string &step, uint64_t dur, uint64_t median) {
  straggler_row s;
  s.excess = dur - median;
  s.median = median;
  s.group = static_cast<uint32_t>(group);
  std::memcpy(s.step, step.data(), std::min(step.size(), sizeof s.step - 1));
  sorter_->add(s);
  ++count_;
  add_ns(&excess_, s.excess);
}

void straggler_list::keep(const straggler_row &s) {
  if (head_.size() < k_head) head_.push_back(from_row(s));
  mem_.push_back(s);
  if (!budget_ || mem_.size() < budget_) return;
  if (!file_) file_ = std::make_shared<spill_store>();
  uint64_t at = 0;
  // A fresh file written only here, in order: its rows lie from offset 0, one after the other.
  // One that fails refuses every later write, so the rest stay in memory, still in order.
  if (!file_->write_bytes(mem_.data(), mem_.size() * sizeof(straggler_row), &at)) return;
  in_file_ += mem_.size();
  mem_.clear();
}

bool straggler_list::finish() {
  if (!sorter_) return true;
  const size_t added = count_;
  const bool ok = sorter_->for_each_sorted([&](const straggler_row &s) {
    keep(s);
    return true;
  });
  sorter_.reset();
  count_ = in_file_ + mem_.size();  // fewer than added only when the sort's file failed
  if (count_ != added) {
    excess_ = 0;
    for_each([&](const straggler &s) { add_ns(&excess_, s.dur - s.median); });
  }
  return ok && count_ == added;
}

bool straggler_list::for_each(const std::function<void(const straggler &)> &fn) const {
  std::vector<straggler_row> buf;
  for (size_t i = 0; i < in_file_; i += buf.size()) {
    buf.resize(std::min(k_piece, in_file_ - i));
    if (!file_->read_bytes(i * sizeof(straggler_row), buf.data(),
                           buf.size() * sizeof(straggler_row)))
      return false;
    for (const straggler_row &s : buf) fn(from_row(s));
  }
  for (const straggler_row &s : mem_) fn(from_row(s));
  return true;
}

}  // namespace dftrace::analysis
