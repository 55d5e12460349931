// step_sort.cpp: rows sorted through the analysis's kind of temporary file (runs merged).
#include "analysis/step_sort.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace dftrace::analysis {

namespace {

constexpr size_t k_fan_in = 64;  // runs merged at once
constexpr size_t k_piece = 512;  // rows read back (or written) at a time: 16 KiB

// One run read back a piece at a time.
template <class Row>
struct cursor {
  size_t next = 0;  // the run's next row to read
  std::vector<Row> buf;
  size_t pos = 0;
  bool live() const { return pos < buf.size(); }
};

}  // namespace

bool key_figure_row::operator<(const key_figure_row &o) const {
  return std::strcmp(text, o.text) < 0;
}

bool straggler_row::operator<(const straggler_row &o) const {
  if (excess != o.excess) return excess > o.excess;
  if (group != o.group) return group < o.group;
  return std::strcmp(step, o.step) < 0;
}

template <class Row>
void run_sorter<Row>::add(const Row &r) {
  buf_.push_back(r);
  if (budget_ && buf_.size() >= budget_) flush();
}

template <class Row>
void run_sorter<Row>::append(run *to, const Row *rows, size_t n) {
  if (!n) return;
  if (!file_) file_ = std::make_unique<spill_store>();
  uint64_t at = 0;
  if (to->mem.empty() && file_->write_bytes(rows, n * sizeof(Row), &at)) {
    if (!to->count) to->offset = at;  // nothing else writes while a run is written: contiguous
    to->count += n;
    return;
  }
  to->mem.insert(to->mem.end(), rows, rows + n);
}

template <class Row>
void run_sorter<Row>::flush() {
  if (buf_.empty()) return;
  std::sort(buf_.begin(), buf_.end());
  const auto equal = [](const Row &a, const Row &b) { return !(a < b); };
  found_equal_ = found_equal_ || std::adjacent_find(buf_.begin(), buf_.end(), equal) != buf_.end();
  run r;
  append(&r, buf_.data(), buf_.size());
  runs_.push_back(std::move(r));
  buf_.clear();
}

// The runs' rows in order (equal rows: the earlier run's first) until fn says stop; false when
// the file cannot be read back.
template <class Row>
bool run_sorter<Row>::merge(const std::vector<run> &in,
                            const std::function<bool(const Row &)> &fn) const {
  std::vector<cursor<Row>> cur(in.size());
  auto refill = [&](size_t i) {
    cursor<Row> &c = cur[i];
    const run &r = in[i];
    c.pos = 0;
    c.buf.clear();
    if (c.next < r.count) {
      c.buf.resize(std::min(k_piece, r.count - c.next));
      if (!file_->read_bytes(r.offset + c.next * sizeof(Row), c.buf.data(),
                             c.buf.size() * sizeof(Row)))
        return false;
    } else if (c.next - r.count < r.mem.size()) {
      const auto from = r.mem.begin() + static_cast<std::ptrdiff_t>(c.next - r.count);
      c.buf.assign(from, from + static_cast<std::ptrdiff_t>(
                                    std::min(k_piece, r.mem.size() - (c.next - r.count))));
    }
    c.next += c.buf.size();
    return true;
  };
  // A heap of the live cursors, the least row on top.
  auto later = [&](size_t a, size_t b) {
    const Row &x = cur[a].buf[cur[a].pos], &y = cur[b].buf[cur[b].pos];
    return y < x || (!(x < y) && b < a);
  };
  std::vector<size_t> heap;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!refill(i)) return false;
    if (cur[i].live()) heap.push_back(i);
  }
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const size_t i = heap.back();
    if (!fn(cur[i].buf[cur[i].pos])) return true;
    if (++cur[i].pos == cur[i].buf.size() && !refill(i)) return false;
    if (cur[i].live())
      std::push_heap(heap.begin(), heap.end(), later);
    else
      heap.pop_back();
  }
  return true;
}

template <class Row>
bool run_sorter<Row>::for_each_sorted(const std::function<bool(const Row &)> &fn) {
  if (runs_.empty()) {  // every row in memory: no file
    std::sort(buf_.begin(), buf_.end());
    for (const Row &r : buf_)
      if (!fn(r)) break;
    std::vector<Row>().swap(buf_);
    return true;
  }
  flush();
  std::vector<Row>().swap(buf_);
  // Levels: each k_fan_in runs merged into one, written to the file, until one pass will do.
  while (runs_.size() > k_fan_in) {
    std::vector<run> next;
    for (size_t i = 0; i < runs_.size(); i += k_fan_in) {
      const auto first = runs_.begin() + static_cast<std::ptrdiff_t>(i);
      const auto last =
          runs_.begin() + static_cast<std::ptrdiff_t>(std::min(i + k_fan_in, runs_.size()));
      std::vector<run> part(std::make_move_iterator(first), std::make_move_iterator(last));
      if (part.size() == 1) {
        next.push_back(std::move(part[0]));
        continue;
      }
      run out;
      std::vector<Row> piece;
      const bool ok = merge(part, [&](const Row &r) {
        piece.push_back(r);
        if (piece.size() == k_piece) {
          append(&out, piece.data(), piece.size());
          piece.clear();
        }
        return true;
      });
      if (!ok) return false;
      append(&out, piece.data(), piece.size());
      next.push_back(std::move(out));
    }
    runs_.swap(next);
  }
  const bool ok = merge(runs_, fn);
  runs_.clear();
  return ok;
}

template class run_sorter<key_row>;
template class run_sorter<key_figure_row>;
template class run_sorter<straggler_row>;

}  // namespace dftrace::analysis
