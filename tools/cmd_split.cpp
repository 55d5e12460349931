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

// The options of one split; false after one line when they do not make one.
struct split_options {
  std::string in, dir, by;
  uint64_t piece_bytes = 64ull << 20;
};
bool read_options(const args_t &a, split_options *o) {
  if (a.positional.size() != 1) {
    error_line("split: exactly one input FILE is needed");
    return false;
  }
  o->in = a.positional[0];
  o->dir = a.output("split", "DIR");
  if (o->dir.empty()) return false;
  if (a.has("--size") && !parse_size(a.get("--size"), &o->piece_bytes)) {
    error_line("split: --size needs a size such as 64MiB");
    return false;
  }
  o->by = a.get("--by", "size");
  if (o->by != "size" && o->by != "pid" && o->by != "time") {
    error_line("split: --by must be size, pid or time");
    return false;
  }
  return true;
}

// Indexes the metadata lines: definitions by value, per-pid lines, thread names, the others.
void index_metadata(meta_index *mi) {
  parsed_line pl;
  for (size_t k = 0; k < mi->lines.size(); ++k) {
    if (!detail::parse_line(mi->lines[k], pl)) continue;
    const std::string_view n = pl.name.text;
    if (n == "HH" || n == "SH" || n == "FH") {
      if (const jvalue *v = pl.arg_value("value")) mi->defs[std::string(v->text)].push_back(k);
    } else if (n == "thread_name") {
      mi->thread_names[{std::string(pl.pid.text), std::string(pl.tid.text)}].push_back(k);
    } else if (pl.pid.present()) {
      mi->per_pid[std::string(pl.pid.text)].push_back(k);
    } else {
      mi->global.push_back(k);
    }
  }
}

// Pass 2's worker: a block's events, each with what routing needs.
void event_block(detail::text_block &b, time_unit unit) {
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
}

// One split: the input, its metadata, the pieces' scratch files and the pieces written.
class split_job {
 public:
  explicit split_job(split_options o) : o_(std::move(o)) {}
  ~split_job() { cleanup(); }
  int run();

 private:
  bool open_input();
  void note_issues(const detail::text_block &b);
  void read_metadata();
  piece *new_piece();
  void route(const event &e, std::string_view line);
  bool route_events();
  void choose_metadata(piece &pc, std::vector<size_t> *meta, std::vector<size_t> *defs);
  bool write_piece(size_t k);
  void cleanup();

  split_options o_;
  detail::trace_file file_;
  time_unit unit_ = time_unit::us;
  detail::read_options opt_;
  std::unique_ptr<progress> bar_;
  bool ok_ = true;
  meta_index mi_;
  std::string scratch_;
  std::vector<std::unique_ptr<piece>> pieces_;
  std::map<std::string, piece *> by_pid_;
  bool write_ok_ = true;
};

bool split_job::open_input() {
  if (mkdir(o_.dir.c_str(), 0755) != 0 && errno != EEXIST) {
    error_line(o_.dir + ": " + std::strerror(errno));
    return false;
  }
  if (!open_trace(o_.in, &file_, &ok_)) return false;
  print_plan_issues(file_, o_.in);
  unit_ = detail::header_time_unit(file_);
  opt_ = tool_read_options();
  opt_.window = static_cast<size_t>(2 * opt_.threads + 2);
  bar_ = std::make_unique<progress>("split", file_.size() * 2);
  return true;
}

void split_job::note_issues(const detail::text_block &b) {
  file_.release(b.in_offset, b.in_bytes);  // the resident set stays flat
  for (const auto &i : b.issues) {
    error_line(o_.in + ": byte " + std::to_string(i.offset) + ": " + i.message);
    if (i.error) ok_ = false;
  }
  bar_->add(b.in_bytes);
}

// Pass 1: the metadata lines, indexed.
void split_job::read_metadata() {
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
  detail::for_each_block(file_, opt_, work, [&](detail::text_block &b) {
    for (auto &l : static_cast<meta_result *>(b.result.get())->lines)
      mi_.lines.push_back(std::move(l));
    note_issues(b);
  });
  index_metadata(&mi_);
}

piece *split_job::new_piece() {
  auto p = std::make_unique<piece>();
  p->path = scratch_ + "/piece-" + std::to_string(pieces_.size());
  p->f = fopen(p->path.c_str(), "wb");
  if (!p->f) write_ok_ = false;
  pieces_.push_back(std::move(p));
  return pieces_.back().get();
}

// One event to its piece (by size or pid; by time the sorted stream comes here too).
void split_job::route(const event &e, std::string_view line) {
  piece *p = nullptr;
  if (o_.by == "pid") {
    auto it = by_pid_.find(e.pid);
    p = it != by_pid_.end() ? it->second : (by_pid_[e.pid] = new_piece());
  } else {
    if (pieces_.empty() || pieces_.back()->bytes >= o_.piece_bytes) new_piece();
    p = pieces_.back().get();
  }
  if (!p->f) return;
  for (const auto &r : e.refs) p->hashes.insert(r);
  p->pids.insert(e.pid);
  p->threads.insert({e.pid, e.tid});
  write_ok_ = p->add(e.ts, e.has_ts, line) && write_ok_;
}

// Pass 2: each event to its piece's scratch file (by time, through the external sort).
bool split_job::route_events() {
  scratch_ = o_.dir + "/.split-" + std::to_string(::getpid());
  if (::mkdir(scratch_.c_str(), 0700) != 0) {
    error_line(scratch_ + ": " + std::strerror(errno));
    scratch_.clear();
    return false;
  }
  const bool by_time = o_.by == "time";
  sorted_runs runs(scratch_ + "/runs");
  std::string why;
  if (by_time && !runs.open(&why)) {
    error_line("split: " + why);
    return false;
  }
  auto work = [unit = unit_](detail::text_block &b) { event_block(b, unit); };
  detail::for_each_block(file_, opt_, work, [&](detail::text_block &b) {
    auto *r = static_cast<event_result *>(b.result.get());
    for (const event &e : r->events) {
      const std::string_view line(r->text.data() + e.off, e.len);
      if (by_time)  // lines without a ts first, as they were (file 0); the others by time
        write_ok_ = runs.add(e.has_ts ? e.ts : 0, e.has_ts ? 1 : 0, line) && write_ok_;
      else
        route(e, line);
    }
    note_issues(b);
  });
  if (by_time) {
    const bool merged = runs.merge([&](uint64_t, uint32_t, std::string_view line) {
      event e;
      parsed_line p;
      if (detail::parse_line(line, p)) describe(p, unit_, &e);
      route(e, line);
    });
    write_ok_ = merged && write_ok_;
    if (!merged) why = runs.error();
    runs.remove();
  }
  if (pieces_.empty()) new_piece();  // a trace of metadata only still gives a piece
  for (auto &p : pieces_) {
    if (p->f && fclose(p->f) != 0) write_ok_ = false;
    p->f = nullptr;
  }
  if (!write_ok_)
    error_line("split: can not write the scratch files in " + scratch_ +
               (why.empty() ? "" : " (" + why + ")"));
  return write_ok_;
}

// The metadata a piece needs: the global lines, its pids' and threads' lines, and every
// definition its lines use, transitively (definitions carry hashes too: the hhash of the host
// that defined them). Each group in the source's order.
void split_job::choose_metadata(piece &pc, std::vector<size_t> *meta, std::vector<size_t> *defs) {
  std::unordered_set<size_t> chosen;
  std::unordered_set<std::string> &hashes = pc.hashes;
  parsed_line pl;
  std::vector<std::string_view> refs;
  auto note_refs = [&](size_t m) {
    if (!detail::parse_line(mi_.lines[m], pl)) return;
    refs.clear();
    hash_refs(pl, &refs);
    for (auto v : refs) hashes.insert(std::string(v));
  };
  auto take_all = [&](const auto &index, const auto &key) {
    auto it = index.find(key);
    if (it != index.end())
      for (size_t m : it->second)
        if (chosen.insert(m).second) meta->push_back(m);
  };
  for (size_t m : mi_.global)
    if (chosen.insert(m).second) meta->push_back(m);
  for (const auto &p : pc.pids) take_all(mi_.per_pid, p);
  for (const auto &th : pc.threads) take_all(mi_.thread_names, th);
  for (size_t m : *meta) note_refs(m);  // metadata lines carry hashes too (hhash)
  std::unordered_set<std::string> resolved;
  for (bool more = true; more;) {
    more = false;
    std::vector<std::string> todo;
    for (const auto &h : hashes)
      if (!resolved.count(h)) todo.push_back(h);
    for (const auto &h : todo) {
      resolved.insert(h);
      auto it = mi_.defs.find(h);
      if (it == mi_.defs.end()) continue;
      for (size_t m : it->second)
        if (chosen.insert(m).second) {
          defs->push_back(m);
          note_refs(m);
          more = true;
        }
    }
  }
  std::sort(defs->begin(), defs->end());
  std::sort(meta->begin(), meta->end());
}

// Piece k: what it needs first (the time unit's declaration first of all, where readers look
// for it), then its events from its scratch file.
bool split_job::write_piece(size_t k) {
  piece &pc = *pieces_[k];
  char num[32];
  snprintf(num, sizeof num, "-%04zu", k);
  const std::string path = o_.dir + "/" + base_name(o_.in) + num + ".pfw.gz";
  std::vector<size_t> meta, defs;
  choose_metadata(pc, &meta, &defs);
  detail::member_stream w(path, tool_threads());
  if (!w.ok()) {
    error_line(w.error());
    return false;
  }
  w.line("[", false, 0);
  auto unit_line = [this](size_t m) { return declares_unit(mi_.lines[m]); };
  const auto rest = std::stable_partition(meta.begin(), meta.end(), unit_line);
  for (auto it = meta.begin(); it != rest; ++it) w.line(mi_.lines[*it], false, 0);
  for (size_t m : defs) w.line(mi_.lines[m], false, 0);
  for (auto it = rest; it != meta.end(); ++it) w.line(mi_.lines[*it], false, 0);
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
    return false;
  }
  return true;
}

void split_job::cleanup() {
  for (auto &p : pieces_) {
    if (p->f) fclose(p->f);
    p->f = nullptr;
    ::unlink(p->path.c_str());
  }
  pieces_.clear();
  if (!scratch_.empty()) ::rmdir(scratch_.c_str());
  scratch_.clear();
}

int split_job::run() {
  if (!open_input()) return 1;
  read_metadata();
  if (!route_events()) return 1;
  for (size_t k = 0; k < pieces_.size(); ++k)
    if (!write_piece(k)) return 1;
  const size_t n = pieces_.size();
  cleanup();
  bar_->done();
  fprintf(stderr, "split %s into %zu piece(s) in %s\n", o_.in.c_str(), n, o_.dir.c_str());
  return ok_ ? 0 : 1;
}

}  // namespace

int cmd_split(const args_t &a) {
  split_options o;
  if (!read_options(a, &o)) return 2;
  return split_job(std::move(o)).run();
}

}  // namespace dftrace::tools
