// inputs.cpp: the block loop over each file, with every kind of damage the reader reports
// (and the members' DT line counts) turned into a listed problem.
#include "analysis/inputs.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <utility>

#include "reader/time_unit.hpp"

namespace dftrace::analysis {

namespace {

// The block's analysis part, with the tap's result for the same block beside it.
struct tapped_part : detail::block_result {
  std::unique_ptr<detail::block_result> part, tapped;
};

// scan_block, after the tap's work on the same text when there is a tap.
void scan_tapped(detail::text_block &b, detail::time_unit unit, const layer_table &table,
                 block_tap *tap) {
  if (!tap) return scan_block(b, unit, table);
  auto both = std::make_unique<tapped_part>();
  tap->work(b);
  both->tapped = std::move(b.result);
  scan_block(b, unit, table);
  both->part = std::move(b.result);
  b.result = std::move(both);
}

void read_one(detail::trace_file &f, const layer_table &table, const detail::read_options &opt,
              collection *c, input_report *rep, const std::function<void(uint64_t)> &progress,
              block_tap *tap) {
  file_report fr;
  fr.path = f.path();
  fr.compressed_bytes = f.size();
  fr.members = f.parts().size();
  fr.dt_members = f.dt_members();
  auto problem = [&](bool error, const std::string &what) {
    (error ? rep->damaged : rep->warnings).push_back({f.path(), what});
    if (error) fr.damaged = true;
  };
  for (const auto &i : f.plan_issues())
    problem(i.error, "byte " + std::to_string(i.offset) + ": " + i.message);
  const detail::time_unit unit = detail::header_time_unit(f);
  file_folder folder;
  uint64_t invalid_before = 0, bad_times = 0, bad_bytes = 0;
  if (tap) tap->begin(f);
  detail::for_each_block(
      f, opt, [&](detail::text_block &b) { scan_tapped(b, unit, table, tap); },
      [&](detail::text_block &b) {
        if (tap) {
          auto *both = static_cast<tapped_part *>(b.result.get());
          tap->take(b, std::move(both->tapped));
          b.result = std::move(both->part);
        }
        auto *p = static_cast<block_part *>(b.result.get());
        for (const auto &i : b.issues)
          problem(i.error, "byte " + std::to_string(i.offset) + ": " + i.message);
        if (b.partial_tail)
          problem(true, "byte " + std::to_string(b.in_offset) +
                            ": the last line is cut short by the damage above");
        if (b.part && b.part->kind == detail::planned_part::member &&
            b.part->dt.lines != p->counts.lines)
          problem(true, "member at byte " + std::to_string(b.in_offset) + ": its DT field says " +
                            std::to_string(b.part->dt.lines) + " lines, it holds " +
                            std::to_string(p->counts.lines));
        fr.lines += p->counts.lines;
        fr.text_bytes += b.text.size();
        invalid_before += p->counts.invalid;
        bad_times += p->counts.bad_times;
        bad_bytes += p->counts.bad_bytes;
        folder.add(*p, c);
        b.result.reset();
        if (progress) progress(b.in_bytes);
        f.release(b.in_offset, b.in_bytes);
      });
  if (invalid_before)
    problem(true, std::to_string(invalid_before) + " line(s) are not valid JSON objects");
  if (bad_times)
    problem(true, std::to_string(bad_times) +
                      " event(s) left out: a ts or dur that is no time in nanoseconds from 0 to "
                      "2^64-1 (negative, not a number, or ending past it)");
  if (bad_bytes)
    problem(true, std::to_string(bad_bytes) +
                      " I/O event(s) left out of the io figures: a ret, size or bytes that is no "
                      "byte count (an integer up to 2^63-1; a negative ret is a failed call)");
  folder.finish(c, f.path());
  if (tap) tap->end(f);
  rep->files.push_back(fr);
}

}  // namespace

size_t spill_budget() {
  if (const char *e = std::getenv("DFTRACE_ANALYZE_SPILL_EVENTS"))
    return static_cast<size_t>(std::strtoull(e, nullptr, 10));
  return size_t{1} << 18;
}

std::vector<std::string> unique_files(const std::vector<std::string> &paths,
                                      std::vector<std::pair<std::string, std::string>> *again) {
  // Read again, each of a file's processes would hold its events twice.
  std::map<std::pair<dev_t, ino_t>, std::vector<size_t>> names;  // the file -> where named
  std::vector<std::string> out;
  std::vector<size_t> slot(paths.size(), SIZE_MAX);  // where a file's kept name goes in out
  for (size_t i = 0; i < paths.size(); ++i) {
    struct stat st {};
    if (::stat(paths[i].c_str(), &st) != 0) {
      slot[i] = out.size();
      out.push_back(paths[i]);
      continue;
    }
    auto &v = names[std::make_pair(st.st_dev, st.st_ino)];
    if (v.empty()) {
      slot[i] = out.size();
      out.push_back(paths[i]);
    }
    v.push_back(i);
  }
  std::vector<std::pair<std::string, std::string>> dropped;
  for (const auto &kv : names) {
    const std::vector<size_t> &v = kv.second;
    size_t kept = v[0];
    for (size_t i : v)
      if (paths[i] < paths[kept]) kept = i;
    out[slot[v[0]]] = paths[kept];
    for (size_t i : v)
      if (i != kept) dropped.emplace_back(paths[i], paths[kept]);
  }
  std::sort(dropped.begin(), dropped.end());
  if (again) *again = std::move(dropped);
  return out;
}

std::string given_again(const std::string &kept) {
  return "the same file as " + kept + ", given again: read once";
}

void read_traces(const std::vector<std::string> &paths, const layer_table &table,
                 const detail::read_options &opt, collection *c, input_report *rep,
                 const std::function<void(uint64_t)> &progress, block_tap *tap) {
  std::vector<std::pair<std::string, std::string>> again;
  for (const std::string &path : unique_files(paths, &again)) {
    detail::trace_file f;
    std::string why;
    if (!f.open(path, &why)) {
      if (tap) tap->unreadable(path, why);
      rep->damaged.push_back({path, "cannot be read: " + why});
      rep->files.push_back({path, 0, 0, 0, 0, 0, true});
      continue;
    }
    read_one(f, table, opt, c, rep, progress, tap);
  }
  for (const auto &a : again) rep->warnings.push_back({a.first, given_again(a.second)});
  rep->counts = c->counts;
  if (!c->spill.error().empty())
    rep->warnings.push_back({"", "the temporary file for events failed (" + c->spill.error() +
                                     "); the rest was kept in memory"});
  if (c->coll_file && !c->coll_file->error().empty())
    rep->warnings.push_back({"", "the temporary file for collective calls failed (" +
                                     c->coll_file->error() + "); the rest was kept in memory"});
  // By path, so that nothing reported depends on the order of the inputs.
  std::stable_sort(rep->files.begin(), rep->files.end(),
                   [](const file_report &a, const file_report &b) { return a.path < b.path; });
  for (auto *v : {&rep->damaged, &rep->warnings})
    std::stable_sort(v->begin(), v->end(), [](const input_problem &a, const input_problem &b) {
      return a.path < b.path;
    });
}

}  // namespace dftrace::analysis
