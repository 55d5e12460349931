// cmd_split.cpp: dftrace split: stand-alone pieces of one trace (by size, pid or time), each
// carrying the hash definitions, process and thread names that its events use. It streams:
// pass 1 keeps the metadata lines, pass 2 routes each event to its piece's scratch file (by
// time: through the external sort, sorted_runs), and each piece is then written with what it
// needs first. Memory holds the metadata and each piece's set of names, never the events.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "args.hpp"
#include "commands.hpp"
#include "inputs.hpp"
#include "lines.hpp"
#include "output/member_stream.hpp"
#include "progress.hpp"
#include "sorted_runs.hpp"

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
  std::vector<std::string> lines;  // every metadata line, in file order
  // Hash definitions by value; per-pid metadata (process_name, PR, CM, ...); thread names.
  std::unordered_map<std::string, std::vector<size_t>> defs;
  std::unordered_map<std::string, std::vector<size_t>> per_pid;
  std::map<std::pair<std::string, std::string>, std::vector<size_t>> thread_names;
  std::vector<size_t> global;  // metadata without a pid
};

// A piece being gathered: its events in a scratch file (records: ts, has_ts, length, line), and
// the names its events use.
struct piece {
  std::string path;
  FILE *f = nullptr;
  uint64_t bytes = 0;
  std::unordered_set<std::string> hashes, pids;
  std::set<std::pair<std::string, std::string>> threads;
  bool add(uint64_t ts, bool has_ts, std::string_view line) {
    const uint64_t h[2] = {ts, has_ts ? 1u : 0u};
    const uint32_t len = static_cast<uint32_t>(line.size());
    bytes += line.size() + 1;
    return fwrite(h, sizeof h, 1, f) == 1 && fwrite(&len, sizeof len, 1, f) == 1 &&
           fwrite(line.data(), 1, len, f) == len;
  }
};

// What pass 2 keeps of an event line: enough to route it and to know what its piece needs.
struct event {
  uint64_t ts = 0;
  bool has_ts = false;
  std::string pid, tid;
  std::vector<std::string> refs;
  uint32_t off = 0, len = 0;  // in the block result's text
};
struct event_result : detail::block_result {
  std::string text;
  std::vector<event> events;
};

void describe(const parsed_line &pl, time_unit unit, event *e) {
  const event_fields f = fields_of(pl, unit);
  e->has_ts = f.has_ts;
  e->ts = f.ts;
  if (pl.pid.present()) e->pid.assign(pl.pid.text);
  if (pl.tid.present()) e->tid.assign(pl.tid.text);
  std::vector<std::string_view> refs;
  hash_refs(pl, &refs);
  for (auto r : refs) e->refs.emplace_back(r);
}

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
  detail::trace_file file;
  bool ok = true;
  if (!open_trace(in, &file, &ok)) return 1;
  print_plan_issues(file, in);
  const time_unit unit = detail::header_time_unit(file);
  detail::read_options opt = tool_read_options();
  opt.window = static_cast<size_t>(2 * opt.threads + 2);
  progress bar("split", file.size() * 2);
  auto note_issues = [&](const detail::text_block &b) {
    file.release(b.in_offset, b.in_bytes);  // the resident set stays flat
    for (const auto &i : b.issues) {
      error_line(in + ": byte " + std::to_string(i.offset) + ": " + i.message);
      if (i.error) ok = false;
    }
    bar.add(b.in_bytes);
  };

  // ---- pass 1: the metadata lines, indexed
  meta_index mi;
  {
    struct meta_result : detail::block_result {
      std::vector<std::string> lines;
    };
    auto work = [](detail::text_block &b) {
      auto r = std::make_unique<meta_result>();
      parsed_line pl;
      detail::for_each_line(b.whole_lines(), [&](std::string_view line) {
        const std::string_view t = trim(line);
        if (t.empty() || t == "[" || t == "]") return true;
        if (detail::parse_line(line, pl) && detail::phase(pl) == 'M') r->lines.emplace_back(line);
        return true;
      });
      b.result = std::move(r);
    };
    detail::for_each_block(file, opt, work, [&](detail::text_block &b) {
      for (auto &l : static_cast<meta_result *>(b.result.get())->lines)
        mi.lines.push_back(std::move(l));
      note_issues(b);
    });
    parsed_line pl;
    for (size_t k = 0; k < mi.lines.size(); ++k) {
      if (!detail::parse_line(mi.lines[k], pl)) continue;
      const std::string_view n = pl.name.text;
      if (n == "HH" || n == "SH" || n == "FH") {
        if (const jvalue *v = pl.arg_value("value")) mi.defs[std::string(v->text)].push_back(k);
      } else if (n == "thread_name") {
        mi.thread_names[{std::string(pl.pid.text), std::string(pl.tid.text)}].push_back(k);
      } else if (pl.pid.present()) {
        mi.per_pid[std::string(pl.pid.text)].push_back(k);
      } else {
        mi.global.push_back(k);
      }
    }
  }

  // ---- pass 2: each event to its piece's scratch file
  const std::string scratch = dir + "/.split-" + std::to_string(::getpid());
  if (::mkdir(scratch.c_str(), 0700) != 0) {
    error_line(scratch + ": " + std::strerror(errno));
    return 1;
  }
  std::vector<std::unique_ptr<piece>> pieces;
  bool write_ok = true;
  auto new_piece = [&]() -> piece * {
    auto p = std::make_unique<piece>();
    p->path = scratch + "/piece-" + std::to_string(pieces.size());
    p->f = fopen(p->path.c_str(), "wb");
    if (!p->f) write_ok = false;
    pieces.push_back(std::move(p));
    return pieces.back().get();
  };
  auto cleanup = [&] {
    for (auto &p : pieces) {
      if (p->f) fclose(p->f);
      p->f = nullptr;
      ::unlink(p->path.c_str());
    }
    ::rmdir(scratch.c_str());
  };
  std::map<std::string, piece *> by_pid;
  // Routes one event (by size or pid; by time the sorted stream comes here too).
  auto route = [&](const event &e, std::string_view line) {
    piece *p = nullptr;
    if (by == "pid") {
      auto it = by_pid.find(e.pid);
      p = it != by_pid.end() ? it->second : (by_pid[e.pid] = new_piece());
    } else {
      if (pieces.empty() || pieces.back()->bytes >= piece_bytes) new_piece();
      p = pieces.back().get();
    }
    if (!p->f) return;
    for (const auto &r : e.refs) p->hashes.insert(r);
    p->pids.insert(e.pid);
    p->threads.insert({e.pid, e.tid});
    write_ok = p->add(e.ts, e.has_ts, line) && write_ok;
  };
  sorted_runs runs(scratch + "/runs");
  std::string why;
  if (by == "time" && !runs.open(&why)) {
    error_line("split: " + why);
    cleanup();
    return 1;
  }
  {
    auto work = [unit](detail::text_block &b) {
      auto r = std::make_unique<event_result>();
      parsed_line pl;
      detail::for_each_line(b.whole_lines(), [&](std::string_view line) {
        const std::string_view t = trim(line);
        if (t.empty() || t == "[" || t == "]") return true;
        if (!detail::parse_line(line, pl) || detail::phase(pl) == 'M') return true;
        event e;
        describe(pl, unit, &e);
        e.off = static_cast<uint32_t>(r->text.size());
        e.len = static_cast<uint32_t>(line.size());
        r->text.append(line);
        r->events.push_back(std::move(e));
        return true;
      });
      b.result = std::move(r);
    };
    detail::for_each_block(file, opt, work, [&](detail::text_block &b) {
      auto *r = static_cast<event_result *>(b.result.get());
      for (const event &e : r->events) {
        const std::string_view line(r->text.data() + e.off, e.len);
        if (by == "time") {
          // Lines without a ts first, as they were (file 0); the others by time (file 1).
          write_ok = runs.add(e.has_ts ? e.ts : 0, e.has_ts ? 1 : 0, line) && write_ok;
        } else {
          route(e, line);
        }
      }
      note_issues(b);
    });
  }
  if (by == "time") {
    const bool merged = runs.merge([&](uint64_t, uint32_t, std::string_view line) {
      event e;
      parsed_line p;
      if (detail::parse_line(line, p)) describe(p, unit, &e);
      route(e, line);
    });
    write_ok = merged && write_ok;
    if (!merged) why = runs.error();
    runs.remove();
  }
  if (pieces.empty()) new_piece();  // a trace of metadata only still gives a piece
  for (auto &p : pieces) {
    if (p->f && fclose(p->f) != 0) write_ok = false;
    p->f = nullptr;
  }
  if (!write_ok) {
    error_line("split: can not write the scratch files in " + scratch +
               (why.empty() ? "" : " (" + why + ")"));
    cleanup();
    return 1;
  }

  // ---- each piece: what it needs first, then its events
  const std::string stem = dir + "/" + base_name(in);
  parsed_line pl;
  std::vector<std::string_view> refs;
  for (size_t k = 0; k < pieces.size(); ++k) {
    piece &pc = *pieces[k];
    char num[32];
    snprintf(num, sizeof num, "-%04zu", k);
    const std::string path = stem + num + ".pfw.gz";
    std::vector<size_t> meta, defs;
    std::unordered_set<size_t> chosen;
    std::unordered_set<std::string> &hashes = pc.hashes;
    auto note_refs = [&](size_t m) {
      if (!detail::parse_line(mi.lines[m], pl)) return;
      refs.clear();
      hash_refs(pl, &refs);
      for (auto v : refs) hashes.insert(std::string(v));
    };
    auto take = [&](size_t m) {
      if (chosen.insert(m).second) meta.push_back(m);
    };
    for (size_t m : mi.global) take(m);
    for (const auto &p : pc.pids) {
      auto it = mi.per_pid.find(p);
      if (it != mi.per_pid.end())
        for (size_t m : it->second) take(m);
    }
    for (const auto &th : pc.threads) {
      auto it = mi.thread_names.find(th);
      if (it != mi.thread_names.end())
        for (size_t m : it->second) take(m);
    }
    // Metadata lines carry hashes too (hhash).
    for (size_t m : meta) note_refs(m);
    // Definitions carry hashes themselves (the hhash of the host that defined them): take
    // definitions until nothing new is needed.
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
        for (size_t m : it->second)
          if (chosen.insert(m).second) {
            defs.push_back(m);
            note_refs(m);
            more = true;
          }
      }
    }
    // Original file order inside each group keeps the piece looking like its source.
    std::sort(defs.begin(), defs.end());
    std::sort(meta.begin(), meta.end());
    detail::member_stream w(path, tool_threads());
    if (!w.ok()) {
      error_line(w.error());
      cleanup();
      return 1;
    }
    w.line("[", false, 0);
    // The time unit's declaration first, where readers look for it (detail::header_time_unit).
    auto unit_line = [&mi](size_t m) { return declares_unit(mi.lines[m]); };
    const auto rest = std::stable_partition(meta.begin(), meta.end(), unit_line);
    for (auto it = meta.begin(); it != rest; ++it) w.line(mi.lines[*it], false, 0);
    for (size_t m : defs) w.line(mi.lines[m], false, 0);
    for (auto it = rest; it != meta.end(); ++it) w.line(mi.lines[*it], false, 0);
    FILE *f = fopen(pc.path.c_str(), "rb");
    bool read_ok = f != nullptr;
    if (f) {
      std::vector<char> buf(1u << 20);
      setvbuf(f, buf.data(), _IOFBF, buf.size());
      std::string line;
      uint64_t h[2];
      uint32_t len = 0;
      while (fread(h, sizeof h, 1, f) == 1 && fread(&len, sizeof len, 1, f) == 1) {
        line.resize(len);
        if (len && fread(line.data(), 1, len, f) != len) {
          read_ok = false;
          break;
        }
        w.line(line, h[1] != 0, h[0]);
      }
      fclose(f);
    }
    ::unlink(pc.path.c_str());
    w.line("]", false, 0);
    if (!w.finish() || !read_ok) {
      error_line(read_ok ? w.error() : "split: can not read back " + pc.path);
      cleanup();
      return 1;
    }
  }
  cleanup();
  bar.done();
  fprintf(stderr, "split %s into %zu piece(s) in %s\n", in.c_str(), pieces.size(), dir.c_str());
  return ok ? 0 : 1;
}

}  // namespace dftrace::tools
