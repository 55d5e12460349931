// step_store.cpp: steps in memory, then in the analysis's kind of temporary file.
#include "analysis/step_store.hpp"

#include <algorithm>
#include <cassert>

namespace dftrace::analysis {

void step_store::append(const step_result *s, size_t n) {
  assert(borrowed_.empty());
  mem_.insert(mem_.end(), s, s + n);
  size_ += n;
  if (!budget_ || mem_.size() <= budget_) return;
  if (!spill_) spill_ = std::make_shared<spill_store>();
  uint64_t at = 0;
  if (!spill_->write_bytes(mem_.data(), mem_.size() * sizeof(step_result), &at)) return;
  file_.push_back({in_file_, mem_.size(), at});
  in_file_ += mem_.size();
  mem_.clear();
}

void step_store::borrow(std::shared_ptr<const step_store> src, size_t first, size_t n,
                        uint32_t group) {
  if (!n) return;
  borrowed_.push_back({std::move(src), first, n, size_, group});
  size_ += n;
}

bool step_store::for_each_borrowed(
    size_t first, size_t end, const std::function<void(const step_result &, size_t)> &fn) const {
  auto b = std::upper_bound(borrowed_.begin(), borrowed_.end(), first,
                            [](size_t i, const range &r) { return i < r.at; });
  if (b != borrowed_.begin()) --b;
  for (size_t i = first; i < end; ++b) {
    const size_t k = std::min(end, b->at + b->count) - i;
    const range &r = *b;
    if (!r.src->for_each(r.first + (i - r.at), k, [&](const step_result &s, size_t j) {
          step_result x = s;
          x.group = r.group;
          fn(x, r.at + (j - r.first));
        }))
      return false;
    i += k;
  }
  return true;
}

bool step_store::for_each(size_t first, size_t n,
                          const std::function<void(const step_result &, size_t)> &fn) const {
  const size_t end = std::min(first + n, size_);
  if (!borrowed_.empty()) return for_each_borrowed(first, end, fn);
  constexpr size_t k_piece = 4096;  // rows read back at a time (352 KiB)
  std::vector<step_result> buf;
  auto c = std::upper_bound(file_.begin(), file_.end(), first,
                            [](size_t i, const chunk &k) { return i < k.first; });
  if (c != file_.begin()) --c;
  size_t i = first;
  for (; i < std::min(end, in_file_); ++c) {
    while (i < c->first + c->count && i < end) {
      const size_t k = std::min({k_piece, c->first + c->count - i, end - i});
      buf.resize(k);
      if (!spill_->read_bytes(c->offset + (i - c->first) * sizeof(step_result), buf.data(),
                              k * sizeof(step_result)))
        return false;
      for (size_t j = 0; j < k; ++j) fn(buf[j], i + j);
      i += k;
    }
  }
  for (; i < end; ++i) fn(mem_[i - in_file_], i);
  return true;
}

bool step_store::read(size_t first, size_t n, std::vector<step_result> *out) const {
  out->clear();
  out->reserve(std::min(n, size_ - std::min(first, size_)));
  return for_each(first, n, [&](const step_result &s, size_t) { out->push_back(s); });
}

}  // namespace dftrace::analysis
