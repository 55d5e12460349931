// common.cpp: argument parsing, input expansion, progress, trace loading and the parallel
// member writer shared by the subcommands.
#include "common.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dftrace::tools {

bool args_t::has(std::string_view name) const {
  for (auto &o : options)
    if (o.first == name) return true;
  return false;
}

std::string args_t::get(std::string_view name, const std::string &def) const {
  for (auto it = options.rbegin(); it != options.rend(); ++it)
    if (it->first == name) return it->second;
  return def;
}

std::string args_t::output(const char *cmd, const char *what) const {
  const std::string out = has("-o") ? get("-o") : get("--output");
  if (out.empty()) error_line(std::string(cmd) + ": -o " + what + " is required");
  return out;
}

std::vector<std::string> args_t::get_all(std::string_view name) const {
  std::vector<std::string> out;
  for (auto &o : options) {
    if (o.first != name) continue;
    size_t pos = 0;
    while (pos <= o.second.size()) {
      const size_t c = o.second.find(',', pos);
      const size_t end = c == std::string::npos ? o.second.size() : c;
      if (end > pos) out.push_back(o.second.substr(pos, end - pos));
      pos = end + 1;
    }
  }
  return out;
}

bool parse_args(int argc, char **argv, int first, const std::vector<std::string> &with_value,
                const std::vector<std::string> &flags, args_t *out) {
  bool only_positional = false;
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    if (only_positional || s.size() < 2 || s[0] != '-') {
      out->positional.push_back(s);
      continue;
    }
    if (s == "--") {
      only_positional = true;
      continue;
    }
    std::string value;
    bool inline_value = false;
    const size_t eq = s.find('=');
    if (s.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = s.substr(eq + 1);
      s = s.substr(0, eq);
      inline_value = true;
    }
    if (std::find(with_value.begin(), with_value.end(), s) != with_value.end()) {
      if (!inline_value) {
        if (i + 1 >= argc) {
          error_line("option " + s + " needs a value");
          return false;
        }
        value = argv[++i];
      }
      out->options.emplace_back(s, value);
    } else if (std::find(flags.begin(), flags.end(), s) != flags.end() && !inline_value) {
      out->options.emplace_back(s, "");
    } else {
      error_line("unknown option " + s + " (see dftrace --help)");
      return false;
    }
  }
  return true;
}

void error_line(const std::string &msg) {
  std::string line = "dftrace: " + msg + "\n";
  fwrite(line.data(), 1, line.size(), stderr);
  fflush(stderr);
}

namespace {

bool is_trace_name(const std::string &name) {
  auto ends = [&](const char *suf) {
    const size_t n = std::strlen(suf);
    return name.size() >= n && name.compare(name.size() - n, n, suf) == 0;
  };
  return ends(".pfw") || ends(".pfw.gz");
}

void walk(const std::string &dir, std::vector<std::string> *out) {
  DIR *d = opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> names;
  while (dirent *e = readdir(d)) {
    const std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto &n : names) {
    const std::string p = dir + "/" + n;
    struct stat st {};
    if (stat(p.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      walk(p, out);
    } else if (is_trace_name(n)) {
      out->push_back(p);
    }
  }
}

}  // namespace

std::vector<std::string> expand_inputs(const std::vector<std::string> &in, bool *ok) {
  std::vector<std::string> out;
  for (const auto &p : in) {
    struct stat st {};
    if (stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      const size_t before = out.size();
      walk(p, &out);
      if (out.size() == before) {
        error_line(p + ": no trace files (*.pfw, *.pfw.gz) in this directory");
        *ok = false;
      }
    } else {
      out.push_back(p);  // missing files are reported when opened, with the others going on
    }
  }
  return out;
}

std::vector<std::string> input_files(const args_t &a, const char *cmd, bool *ok) {
  std::vector<std::string> files = expand_inputs(a.positional, ok);
  if (files.empty()) error_line(std::string(cmd) + ": no input files");
  return files;
}

bool open_trace(const std::string &path, detail::trace_file *f, bool *ok) {
  std::string why;
  if (f->open(path, &why)) return true;
  error_line(path + ": " + why);
  *ok = false;
  return false;
}

size_t print_plan_issues(const detail::trace_file &f, const std::string &path) {
  for (const auto &i : f.plan_issues())
    error_line(path + ": byte " + std::to_string(i.offset) + ": " + i.message);
  return f.plan_issues().size();
}

bool parse_size(const std::string &s, uint64_t *out) {
  size_t n = 0;
  if (!detail::parse_size(s, &n) || n == 0) return false;
  *out = n;
  return true;
}

bool parse_count(const std::string &s, uint64_t *out) {
  const std::string t(trim(s));
  if (t.empty() || t.size() > 18 || t.find_first_not_of("0123456789") != std::string::npos)
    return false;
  *out = std::strtoull(t.c_str(), nullptr, 10);
  return *out >= 1;
}

int tool_threads() {
  if (const char *e = std::getenv("DFTRACE_TOOL_THREADS")) {
    const int n = std::atoi(e);
    if (n >= 1 && n <= 256) return n;
  }
  const unsigned h = std::thread::hardware_concurrency();
  return h == 0 ? 1 : static_cast<int>(std::min(h, 64u));
}

detail::read_options tool_read_options() {
  detail::read_options opt;
  opt.threads = tool_threads();
  return opt;
}

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

progress::progress(const char *what, uint64_t total)
    : what_(what), total_(total), enabled_(isatty(2) && total > 0), start_(now_seconds()) {
  if (std::getenv("DFTRACE_NO_PROGRESS")) enabled_ = false;
  // Runs shorter than this get no bar (tests set 0 to see it on small inputs).
  if (const char *d = std::getenv("DFTRACE_PROGRESS_DELAY")) delay_ = std::atof(d);
}

progress::~progress() { done(); }

void progress::add(uint64_t n) {
  seen_ += n;
  if (!enabled_) return;
  const double t = now_seconds();
  // Only runs longer than half a second get a bar, redrawn ten times a second.
  if (t - start_ < delay_ || t - last_ < 0.1) return;
  last_ = t;
  draw(false);
}

void progress::done() {
  if (!enabled_ || !shown_) return;
  draw(true);
  shown_ = false;
  enabled_ = false;
}

void progress::draw(bool final) {
  shown_ = true;
  const double frac = total_ ? std::min(1.0, static_cast<double>(seen_) / total_) : 1.0;
  const int width = 30;
  const int fill = static_cast<int>(frac * width);
  char bar[width + 1];
  for (int i = 0; i < width; ++i) bar[i] = i < fill ? '#' : '.';
  bar[width] = 0;
  const double el = now_seconds() - start_;
  const double mbs = el > 0 ? seen_ / el / 1e6 : 0;
  fprintf(stderr, "\r%s [%s] %3.0f%% %.0f MB in, %.0f MB/s%s", what_, bar, frac * 100, seen_ / 1e6,
          mbs, final ? "\n" : "");
  fflush(stderr);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

event_fields fields_of(const parsed_line &pl, time_unit unit) {
  event_fields f;
  f.ok = pl.error == nullptr;
  f.ph = detail::phase(pl);
  if (pl.ts.present() && detail::value_ns(pl.ts, unit, &f.ts)) f.has_ts = true;
  if (pl.dur.present() && detail::value_ns(pl.dur, unit, &f.dur)) f.has_dur = true;
  return f;
}

std::string us_text(uint64_t ns) {
  std::string s = std::to_string(ns / 1000);
  if (const uint64_t f = ns % 1000) {
    char buf[8];
    std::snprintf(buf, sizeof buf, ".%03u", static_cast<unsigned>(f));
    s += buf;
    while (s.back() == '0') s.pop_back();
  }
  return s;
}

bool declares_unit(std::string_view line) {
  if (line.find("\"time_metric\"") == std::string_view::npos) return false;
  parsed_line pl;
  time_unit u;
  return detail::parse_line(line, pl) && pl.name.text == "PR" && detail::declares_time_unit(pl, &u);
}

void hash_refs(const parsed_line &pl, std::vector<std::string_view> *out) {
  for (int i = 0; i < pl.nargs; ++i) {
    const auto &kv = pl.args_kv[i];
    if (!detail::is_hash_ref_key(kv.key)) continue;
    if (kv.value.type == jtype::number || kv.value.type == jtype::string)
      out->push_back(kv.value.text);
  }
}

// ---- writer

trace_writer::trace_writer(const std::string &path, int threads, size_t member_bytes)
    : path_(path), member_bytes_(member_bytes) {
  gz_ = path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    ok_ = false;
    error_ = path + ": " + std::strerror(errno);
    return;
  }
  threads = std::max(1, threads);
  max_in_flight_ = static_cast<size_t>(threads) * 4;
  if (gz_ && threads > 1)
    for (int i = 0; i < threads; ++i) pool_.emplace_back([this] { compress_loop(); });
  cur_ = std::make_unique<job>();
  cur_->text.reserve(member_bytes_ + 4096);
}

trace_writer::~trace_writer() {
  if (fd_ >= 0) finish();
}

void trace_writer::line(std::string_view text, bool has_ts, uint64_t ts_ns) {
  cur_->text.append(text.data(), text.size());
  close_line(has_ts, ts_ns);
}

void trace_writer::close_line(bool has_ts, uint64_t ts_ns) {
  job &j = *cur_;
  j.text.push_back('\n');
  ++j.stats.lines;
  if (has_ts) j.stats.add_ts(ts_ns / 1000, j.any_ts);
  if (j.text.size() >= member_bytes_) submit();
}

namespace {

bool write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

thread_local std::unique_ptr<detail::member_encoder> t_encoder;

void compress_job_text(const std::string &text, const detail::member_stats &st,
                       std::vector<char> &out, bool *failed) {
  if (!t_encoder) {
    // DFTRACE_TOOL_LEVEL: the deflate level of written traces (default: the codec's default).
    const detail::codec c = detail::codec_auto();
    int level = detail::codec_default_level(c);
    if (const char *e = std::getenv("DFTRACE_TOOL_LEVEL")) level = std::atoi(e);
    t_encoder = std::make_unique<detail::member_encoder>(c, level);
  }
  out.clear();
  *failed = !t_encoder->encode(text.data(), text.size(), st, out);
}

}  // namespace

void trace_writer::submit() {
  if (cur_->text.empty()) return;
  std::unique_ptr<job> j = std::move(cur_);
  cur_ = std::make_unique<job>();
  cur_->text.reserve(member_bytes_ + 4096);
  if (!gz_) {
    if (ok_ && !write_all(fd_, j->text.data(), j->text.size())) {
      ok_ = false;
      error_ = path_ + ": write failed: " + std::strerror(errno);
    }
    return;
  }
  if (pool_.empty()) {
    compress_job_text(j->text, j->stats, j->out, &j->failed);
    j->claimed = true;
    j->done = true;
    std::lock_guard<std::mutex> lk(mu_);
    queue_.push_back(std::move(j));
  } else {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return queue_.size() < max_in_flight_ || queue_.front()->done; });
    queue_.push_back(std::move(j));
    cv_.notify_all();
  }
  write_ready(false);
}

void trace_writer::compress_loop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    job *mine = nullptr;
    for (auto &j : queue_) {
      if (!j->claimed) {
        mine = j.get();
        mine->claimed = true;
        break;
      }
    }
    if (mine) {
      std::string text = std::move(mine->text);
      const detail::member_stats st = mine->stats;
      lk.unlock();
      std::vector<char> out;
      bool failed = false;
      compress_job_text(text, st, out, &failed);
      lk.lock();
      mine->out = std::move(out);
      mine->failed = failed;
      mine->done = true;
      cv_.notify_all();
      continue;
    }
    if (stop_) return;
    cv_.wait(lk);
  }
}

void trace_writer::write_ready(bool all) {
  for (;;) {
    std::unique_ptr<job> j;
    {
      std::unique_lock<std::mutex> lk(mu_);
      if (queue_.empty()) return;
      if (!queue_.front()->done) {
        if (!all) return;
        cv_.wait(lk, [&] { return queue_.front()->done; });
      }
      j = std::move(queue_.front());
      queue_.pop_front();
      cv_.notify_all();
    }
    if (j->failed) {
      ok_ = false;
      error_ = path_ + ": compression failed";
    } else if (ok_ && !write_all(fd_, j->out.data(), j->out.size())) {
      ok_ = false;
      error_ = path_ + ": write failed: " + std::strerror(errno);
    }
  }
}

bool trace_writer::finish() {
  if (fd_ < 0) return ok_;
  submit();
  write_ready(true);
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  for (auto &t : pool_) t.join();
  pool_.clear();
  if (::close(fd_) != 0 && ok_) {
    ok_ = false;
    error_ = path_ + ": " + std::strerror(errno);
  }
  fd_ = -1;
  return ok_;
}

}  // namespace dftrace::tools
