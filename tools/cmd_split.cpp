// cmd_split.cpp: dftrace split: stand-alone pieces of one trace (by size, pid or time), each
// carrying the hash definitions, process and thread names that its events use.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "common.hpp"

namespace dftrace::tools {

namespace {

std::string base_name(const std::string &path) {
  std::string b =
      path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  for (const char *suf : {".gz", ".pfw", ".json"}) {
    const size_t n = std::strlen(suf);
    if (b.size() > n && b.compare(b.size() - n, n, suf) == 0) b.resize(b.size() - n);
  }
  return b.empty() ? "trace" : b;
}

struct meta_index {
  // Hash definitions by value; per-pid metadata (process_name, PR, CM, ...); thread names.
  std::unordered_map<std::string, std::vector<const line_rec *>> defs;
  std::unordered_map<std::string, std::vector<const line_rec *>> per_pid;
  std::map<std::pair<std::string, std::string>, std::vector<const line_rec *>> thread_names;
  std::vector<const line_rec *> global;  // metadata without a pid
};

}  // namespace

int cmd_split(const args_t &a) {
  if (a.positional.size() != 1) {
    error_line("split: exactly one input FILE is needed");
    return 2;
  }
  const std::string dir = a.output("split", "DIR");
  if (dir.empty()) return 2;
  uint64_t piece_bytes = 64ull << 20;
  if (a.has("--size") && !parse_size(a.get("--size"), &piece_bytes)) {
    error_line("split: --size needs a size such as 64MiB");
    return 2;
  }
  const std::string by = a.get("--by", "size");
  if (by != "size" && by != "pid" && by != "time") {
    error_line("split: --by must be size, pid or time");
    return 2;
  }
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    error_line(dir + ": " + std::strerror(errno));
    return 1;
  }
  const std::string in = a.positional[0];
  loaded_trace t;
  progress bar("split", 0);
  if (!load_trace(in, 0, &t, &bar)) return 1;
  bool ok = true;
  for (const auto &i : t.issues)
    if (i.error) ok = false;

  // Index the metadata.
  meta_index mi;
  parsed_line pl;
  for (const auto &rec : t.lines) {
    if (!rec.is_meta) continue;
    if (!detail::parse_line(rec.view(), pl)) continue;
    const std::string_view n = pl.name.text;
    if (n == "HH" || n == "SH" || n == "FH") {
      if (const jvalue *v = pl.arg_value("value")) mi.defs[std::string(v->text)].push_back(&rec);
    } else if (n == "thread_name") {
      mi.thread_names[{std::string(pl.pid.text), std::string(pl.tid.text)}].push_back(&rec);
    } else if (pl.pid.present()) {
      mi.per_pid[std::string(pl.pid.text)].push_back(&rec);
    } else {
      mi.global.push_back(&rec);
    }
  }

  // Assign the other lines to pieces.
  std::vector<const line_rec *> events;
  for (const auto &rec : t.lines)
    if (!rec.is_meta) events.push_back(&rec);
  if (by == "time")
    std::stable_sort(events.begin(), events.end(), [](const line_rec *x, const line_rec *y) {
      return x->has_ts && y->has_ts ? x->ts < y->ts : (!x->has_ts && y->has_ts);
    });
  std::vector<std::vector<const line_rec *>> pieces;
  if (by == "pid") {
    std::map<std::string, size_t> index;
    for (const line_rec *r : events) {
      detail::parse_line(r->view(), pl);
      auto it = index.emplace(std::string(pl.pid.text), pieces.size());
      if (it.second) pieces.emplace_back();
      pieces[it.first->second].push_back(r);
    }
  } else {
    uint64_t size = 0;
    for (const line_rec *r : events) {
      if (pieces.empty() || size >= piece_bytes) {
        pieces.emplace_back();
        size = 0;
      }
      pieces.back().push_back(r);
      size += r->len + 1;
    }
  }
  if (pieces.empty()) pieces.emplace_back();  // a trace of metadata only still gives a piece

  const std::string stem = dir + "/" + base_name(in);
  std::vector<std::string_view> refs;
  for (size_t k = 0; k < pieces.size(); ++k) {
    char num[32];
    snprintf(num, sizeof num, "-%04zu", k);
    const std::string path = stem + num + ".pfw.gz";
    // What this piece needs: definitions of the hashes its lines use, and the names of its
    // pids and threads.
    std::vector<const line_rec *> meta;
    std::unordered_set<const line_rec *> chosen;
    std::unordered_set<std::string> pids;
    std::set<std::pair<std::string, std::string>> threads;
    std::unordered_set<std::string> hashes;
    auto note_refs = [&](const line_rec *r, bool names) {
      if (!detail::parse_line(r->view(), pl)) return;
      refs.clear();
      hash_refs(pl, &refs);
      for (auto v : refs) hashes.insert(std::string(v));
      if (!names) return;
      if (pl.pid.present()) pids.insert(std::string(pl.pid.text));
      if (pl.pid.present() && pl.tid.present())
        threads.insert({std::string(pl.pid.text), std::string(pl.tid.text)});
    };
    for (const line_rec *r : pieces[k]) note_refs(r, true);
    auto take = [&](const line_rec *r) {
      if (chosen.insert(r).second) meta.push_back(r);
    };
    for (const line_rec *r : mi.global) take(r);
    for (const auto &p : pids) {
      auto it = mi.per_pid.find(p);
      if (it != mi.per_pid.end())
        for (const line_rec *r : it->second) take(r);
    }
    for (const auto &th : threads) {
      auto it = mi.thread_names.find(th);
      if (it != mi.thread_names.end())
        for (const line_rec *r : it->second) take(r);
    }
    // Metadata lines carry hashes too (hhash).
    for (const line_rec *r : meta) note_refs(r, false);
    // Definitions carry hashes themselves (the hhash of the host that defined them): take
    // definitions until nothing new is needed.
    std::vector<const line_rec *> defs;
    std::unordered_set<std::string> resolved;
    for (bool more = true; more;) {
      more = false;
      std::vector<std::string> todo;
      for (const auto &h : hashes)
        if (!resolved.count(h)) todo.push_back(h);
      for (const auto &h : todo) {
        resolved.insert(h);
        auto it = mi.defs.find(h);
        if (it == mi.defs.end()) continue;
        for (const line_rec *r : it->second)
          if (chosen.insert(r).second) {
            defs.push_back(r);
            note_refs(r, false);
            more = true;
          }
      }
    }
    // Original file order inside each group keeps the piece looking like its source.
    auto by_seq = [](const line_rec *x, const line_rec *y) { return x->seq < y->seq; };
    std::sort(defs.begin(), defs.end(), by_seq);
    std::sort(meta.begin(), meta.end(), by_seq);
    trace_writer w(path, tool_threads());
    if (!w.ok()) {
      error_line(w.error());
      return 1;
    }
    w.line("[", false, 0);
    // The time unit's declaration first, where readers look for it (detail::header_time_unit).
    auto unit_line = [](const line_rec *r) { return declares_unit(r->view()); };
    const auto rest = std::stable_partition(meta.begin(), meta.end(), unit_line);
    for (auto it = meta.begin(); it != rest; ++it) w.line((*it)->view(), false, 0);
    for (const line_rec *r : defs) w.line(r->view(), false, 0);
    for (auto it = rest; it != meta.end(); ++it) w.line((*it)->view(), false, 0);
    for (const line_rec *r : pieces[k]) w.line(r->view(), r->has_ts, r->ts);
    w.line("]", false, 0);
    if (!w.finish()) {
      error_line(w.error());
      return 1;
    }
  }
  fprintf(stderr, "split %s into %zu piece(s) in %s\n", in.c_str(), pieces.size(), dir.c_str());
  return ok ? 0 : 1;
}

}  // namespace dftrace::tools
