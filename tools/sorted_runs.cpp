// sorted_runs.cpp: the external sort behind merge and split --by time (sorted_runs.hpp).
#include "sorted_runs.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <queue>

namespace dftrace::tools {

namespace {

constexpr size_t k_read_buffer = 128u << 10;

// A run file being read: the record at its head. Records: ts, seq (u64), file, length (u32),
// then the line's bytes.
struct reader {
  FILE *f = nullptr;
  std::vector<char> buf;
  uint64_t ts = 0, seq = 0;
  uint32_t file = 0;
  std::string line;
  bool next() {
    uint64_t h[2];
    uint32_t fl[2];
    if (fread(h, sizeof h, 1, f) != 1 || fread(fl, sizeof fl, 1, f) != 1) return false;
    ts = h[0];
    seq = h[1];
    file = fl[0];
    line.resize(fl[1]);
    return fl[1] == 0 || fread(line.data(), 1, fl[1], f) == fl[1];
  }
};

}  // namespace

sorted_runs::sorted_runs(std::string dir, size_t run_bytes)
    : dir_(std::move(dir)), run_bytes_(run_bytes) {}

sorted_runs::~sorted_runs() { remove(); }

bool sorted_runs::open(std::string *why) {
  if (::mkdir(dir_.c_str(), 0700) != 0) {
    *why = dir_ + ": " + std::strerror(errno);
    return false;
  }
  made_ = true;
  return true;
}

bool sorted_runs::add(uint64_t ts, uint32_t file, std::string_view line) {
  entries_.push_back({ts, file, seq_++, text_.size(), static_cast<uint32_t>(line.size())});
  text_.append(line);
  return text_.size() < run_bytes_ || spill();
}

bool sorted_runs::spill() {
  if (entries_.empty()) return error_.empty();
  std::sort(entries_.begin(), entries_.end(), [](const entry &x, const entry &y) {
    if (x.ts != y.ts) return x.ts < y.ts;
    if (x.file != y.file) return x.file < y.file;
    return x.seq < y.seq;
  });
  const std::string path = dir_ + "/run-" + std::to_string(paths_.size());
  paths_.push_back(path);
  FILE *f = fopen(path.c_str(), "wb");
  bool ok = f != nullptr;
  if (f) {
    std::vector<char> buf(1u << 20);
    setvbuf(f, buf.data(), _IOFBF, buf.size());
    for (const entry &e : entries_) {
      const uint64_t h[2] = {e.ts, e.seq};
      const uint32_t fl[2] = {e.file, e.len};
      ok = ok && fwrite(h, sizeof h, 1, f) == 1 && fwrite(fl, sizeof fl, 1, f) == 1 &&
           fwrite(text_.data() + e.off, 1, e.len, f) == e.len;
    }
    ok = fclose(f) == 0 && ok;
  }
  if (!ok && error_.empty()) error_ = path + ": " + std::strerror(errno ? errno : EIO);
  entries_.clear();
  text_.clear();
  return ok;
}

bool sorted_runs::merge(const std::function<void(uint64_t, uint32_t, std::string_view)> &fn) {
  if (!spill()) return false;
  std::string().swap(text_);
  std::vector<entry>().swap(entries_);
  std::vector<reader> rs(paths_.size());
  auto later = [&rs](size_t x, size_t y) {
    const reader &a = rs[x], &b = rs[y];
    if (a.ts != b.ts) return a.ts > b.ts;
    if (a.file != b.file) return a.file > b.file;
    return a.seq > b.seq;
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> heap(later);
  bool ok = true;
  for (size_t k = 0; k < rs.size(); ++k) {
    rs[k].f = fopen(paths_[k].c_str(), "rb");
    if (!rs[k].f) {
      error_ = paths_[k] + ": " + std::strerror(errno);
      ok = false;
      break;
    }
    rs[k].buf.resize(k_read_buffer);
    setvbuf(rs[k].f, rs[k].buf.data(), _IOFBF, rs[k].buf.size());
    if (rs[k].next()) heap.push(k);
  }
  while (ok && !heap.empty()) {
    const size_t k = heap.top();
    heap.pop();
    fn(rs[k].ts, rs[k].file, rs[k].line);
    if (rs[k].next()) heap.push(k);
  }
  for (auto &r : rs)
    if (r.f) fclose(r.f);
  return ok;
}

void sorted_runs::remove() {
  for (const auto &p : paths_) ::unlink(p.c_str());
  paths_.clear();
  if (made_) ::rmdir(dir_.c_str());
  made_ = false;
}

}  // namespace dftrace::tools
