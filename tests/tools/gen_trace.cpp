// gen_trace.cpp: writes synthetic dftrace traces of any size for the tools' tests and
// benchmarks: realistic line shapes, parents written after their children, FH definitions
// appearing as files are first used, counters, thread names, DT gzip members.
//
// usage: gen_trace OUT --events N [--pid P] [--seed S] [--threads T] [--member-bytes B]
//                  [--clock-offset-ns X] [--rank R] [--no-dt] [--plain] [--no-close]
#include <zlib.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/format.hpp"
#include "base/gzip_member.hpp"
#include "base/hash.hpp"

using namespace dftrace::detail;

namespace {

struct options {
  std::string out;
  uint64_t events = 1000;
  uint64_t pid = 1000;
  uint64_t seed = 1;
  int threads = 2;
  size_t member_bytes = 1u << 20;
  bool has_clock = false;
  int64_t clock_offset_ns = 0;
  bool dt = true;
  bool plain = false;
  bool close = true;
  int64_t rank = -1;
};

class sink {
 public:
  explicit sink(const options &o) : o_(o), enc_(codec_auto(), 1) {
    f_ = fopen(o.out.c_str(), "wb");
    if (!f_) {
      perror(o.out.c_str());
      exit(1);
    }
    if (!o_.dt && !o_.plain) {
      zs_ = std::make_unique<z_stream>();
      std::memset(zs_.get(), 0, sizeof(z_stream));
      deflateInit2(zs_.get(), 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    }
  }
  void line(const std::string &s) {
    text_ += s;
    text_ += '\n';
    ++stats_.lines;
    const char *ts = std::strstr(s.c_str(), "\"ts\":");
    const char *args = std::strstr(s.c_str(), "\"args\":");
    if (ts && (!args || ts < args)) {
      const uint64_t v = std::strtoull(ts + 5, nullptr, 10);
      if (!any_ts_ || v < stats_.ts_min) stats_.ts_min = v;
      if (!any_ts_ || v > stats_.ts_max) stats_.ts_max = v;
      any_ts_ = true;
    }
    if (text_.size() >= o_.member_bytes) flush(false);
  }
  void flush(bool last) {
    if (o_.plain) {
      fwrite(text_.data(), 1, text_.size(), f_);
    } else if (o_.dt) {
      if (!text_.empty()) {
        out_.clear();
        enc_.encode(text_.data(), text_.size(), stats_, out_);
        fwrite(out_.data(), 1, out_.size(), f_);
      }
    } else {
      std::vector<unsigned char> buf(deflateBound(zs_.get(), text_.size()) + 64);
      zs_->next_in = reinterpret_cast<Bytef *>(text_.data());
      zs_->avail_in = static_cast<uInt>(text_.size());
      int r;
      do {
        zs_->next_out = buf.data();
        zs_->avail_out = static_cast<uInt>(buf.size());
        r = deflate(zs_.get(), last ? Z_FINISH : Z_NO_FLUSH);
        fwrite(buf.data(), 1, buf.size() - zs_->avail_out, f_);
      } while (zs_->avail_out == 0 || (last && r != Z_STREAM_END));
      if (last) deflateEnd(zs_.get());
    }
    text_.clear();
    stats_ = member_stats{};
    any_ts_ = false;
  }
  ~sink() {
    flush(true);
    fclose(f_);
  }

 private:
  const options &o_;
  FILE *f_ = nullptr;
  member_encoder enc_;
  std::string text_;
  std::vector<char> out_;
  member_stats stats_;
  bool any_ts_ = false;
  std::unique_ptr<z_stream> zs_;
};

std::string num(uint64_t v) { return std::to_string(v); }

}  // namespace

int main(int argc, char **argv) {
  options o;
  if (argc < 2) {
    fprintf(stderr, "usage: gen_trace OUT --events N [options]\n");
    return 2;
  }
  o.out = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char * {
      if (i + 1 >= argc) {
        fprintf(stderr, "gen_trace: %s needs a value\n", a.c_str());
        exit(2);
      }
      return argv[++i];
    };
    if (a == "--events")
      o.events = std::strtoull(next(), nullptr, 10);
    else if (a == "--pid")
      o.pid = std::strtoull(next(), nullptr, 10);
    else if (a == "--seed")
      o.seed = std::strtoull(next(), nullptr, 10);
    else if (a == "--threads")
      o.threads = std::atoi(next());
    else if (a == "--member-bytes")
      o.member_bytes = std::strtoull(next(), nullptr, 10);
    else if (a == "--clock-offset-ns") {
      o.has_clock = true;
      o.clock_offset_ns = std::strtoll(next(), nullptr, 10);
    } else if (a == "--no-dt")
      o.dt = false;
    else if (a == "--plain")
      o.plain = true;
    else if (a == "--no-close")
      o.close = false;
    else if (a == "--rank")
      o.rank = std::strtoll(next(), nullptr, 10);
    else {
      fprintf(stderr, "gen_trace: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (o.threads < 1) o.threads = 1;
  std::mt19937_64 rng(o.seed);
  sink s(o);
  const std::string host = "node" + num(o.pid % 7);
  const uint64_t hh = dftracer_hash(host);
  const std::string hhs = num(hh);
  const std::string exec = "train";
  const std::string cmd = "python3;train.py;--epochs;3";
  uint64_t id = 0;
  const std::string P = num(o.pid);
  auto meta = [&](const std::string &name, uint64_t tid, const std::string &args) {
    s.line("{\"id\":" + num(++id) + ",\"name\":\"" + name + "\",\"cat\":\"dftracer\",\"pid\":" + P +
           ",\"tid\":" + num(tid) + ",\"ph\":\"M\",\"args\":{" + args + "}}");
  };
  s.line("[");
  meta("HH", o.pid, "\"hhash\":" + hhs + ",\"name\":\"" + host + "\",\"value\":" + hhs);
  meta("SH", o.pid,
       "\"hhash\":" + hhs + ",\"name\":\"" + cmd + "\",\"value\":" + num(dftracer_hash(cmd)));
  meta("SH", o.pid,
       "\"hhash\":" + hhs + ",\"name\":\"" + exec + "\",\"value\":" + num(dftracer_hash(exec)));
  meta("PR", o.pid, "\"hhash\":" + hhs + ",\"name\":\"hostname\",\"value\":\"" + host + "\"");
  if (o.rank >= 0)
    meta("PR", o.pid, "\"hhash\":" + hhs + ",\"name\":\"rank\",\"value\":" + num(o.rank));
  if (o.has_clock) {
    meta("PR", o.pid,
         "\"hhash\":" + hhs +
             ",\"name\":\"clock_offset_ns\",\"value\":" + std::to_string(o.clock_offset_ns));
    meta("PR", o.pid,
         "\"hhash\":" + hhs + ",\"name\":\"clock_offset_uncertainty_ns\",\"value\":250");
  }
  meta("process_name", o.pid, "\"name\":\"" + exec + "\"");
  uint64_t t0 = 1795262848000000ull + (o.seed % 1000) * 10;
  s.line("{\"id\":" + num(++id) + ",\"name\":\"start\",\"cat\":\"dftracer\",\"pid\":" + P +
         ",\"tid\":" + P + ",\"ts\":" + num(t0) + ",\"dur\":0,\"ph\":\"X\",\"args\":{\"hhash\":" +
         hhs + ",\"version\":\"0.1.0\",\"exec_hash\":" + num(dftracer_hash(exec)) +
         ",\"cmd_hash\":" + num(dftracer_hash(cmd)) + ",\"level\":1,\"p_idx\":-1}}");
  static const char *names[][2] = {{"forward", "compute"}, {"backward", "compute"},
                                   {"step", "compute"},    {"fetch", "dataloader"},
                                   {"read", "POSIX"},      {"all_reduce", "comm"},
                                   {"transfer", "device"}, {"item", "data"}};
  std::vector<uint64_t> tids;
  for (int t = 0; t < o.threads; ++t) tids.push_back(o.pid + static_cast<uint64_t>(t));
  std::vector<uint64_t> clock(tids.size(), t0 + 10);
  std::vector<bool> named(tids.size(), false);
  uint64_t files_defined = 0;
  uint64_t written = 0;
  uint64_t counters = 0;  // counter lines, events too (the writer counts them in num_events)
  std::uniform_int_distribution<int> pick(0, 7);
  std::uniform_int_distribution<uint64_t> dur(1, 400);
  while (written < o.events) {
    const size_t t = static_cast<size_t>(rng() % tids.size());
    if (!named[t]) {
      meta("thread_name", tids[t], "\"name\":\"worker-" + num(t) + "\"");
      named[t] = true;
    }
    // One parent with up to 9 children, written after them (as a tracer does).
    const uint64_t parent_id = ++id;
    const uint64_t pstart = clock[t];
    uint64_t at = pstart + 1;
    const int kids = static_cast<int>(rng() % 10);
    for (int k = 0; k < kids && written + 1 < o.events; ++k) {
      const int n = pick(rng);
      std::string extra;
      if (names[n][1][0] == 'P') {  // POSIX reads use a file hash, defined on first use
        const uint64_t file = rng() % 64;
        const std::string path = "/data/shard-" + num(file) + ".bin";
        const uint64_t fh = dftracer_hash(path);
        if (file >= files_defined) {
          for (; files_defined <= file; ++files_defined) {
            const std::string pth = "/data/shard-" + num(files_defined) + ".bin";
            meta("FH", tids[t],
                 "\"hhash\":" + hhs + ",\"name\":\"" + pth +
                     "\",\"value\":" + num(dftracer_hash(pth)));
          }
        }
        extra = ",\"fhash\":" + num(fh) + ",\"size\":" + num(4096 * (1 + rng() % 16));
      }
      const uint64_t d = dur(rng);
      s.line("{\"id\":" + num(++id) + ",\"name\":\"" + names[n][0] + "\",\"cat\":\"" + names[n][1] +
             "\",\"pid\":" + P + ",\"tid\":" + num(tids[t]) + ",\"ts\":" + num(at) +
             ",\"dur\":" + num(d) + ",\"ph\":\"X\",\"args\":{\"hhash\":" + hhs +
             ",\"epoch\":" + num(written / 100000) + ",\"step\":" + num(written / 10) + extra +
             ",\"level\":2,\"p_idx\":" + num(parent_id) + "}}");
      at += d + 1;
      ++written;
    }
    s.line("{\"id\":" + num(parent_id) + ",\"name\":\"iteration\",\"cat\":\"pipeline\",\"pid\":" +
           P + ",\"tid\":" + num(tids[t]) + ",\"ts\":" + num(pstart) +
           ",\"dur\":" + num(at - pstart) + ",\"ph\":\"X\",\"args\":{\"hhash\":" + hhs +
           ",\"step\":" + num(written / 10) + ",\"level\":1,\"p_idx\":-1}}");
    ++written;
    clock[t] = at + 2;
    if (written % 97 == 0) {
      ++counters;
      s.line("{\"name\":\"memory\",\"cat\":\"device\",\"pid\":" + P + ",\"tid\":" + num(tids[t]) +
             ",\"ts\":" + num(at) + ",\"ph\":\"C\",\"args\":{\"bytes\":" + num(rng() % 1000000) +
             "}}");
    }
  }
  uint64_t last = 0;
  for (auto c : clock) last = std::max(last, c);
  if (o.close) {
    s.line("{\"id\":" + num(++id) + ",\"name\":\"end\",\"cat\":\"dftracer\",\"pid\":" + P +
           ",\"tid\":" + P + ",\"ts\":" + num(last) +
           ",\"dur\":0,\"ph\":\"X\",\"args\":{\"hhash\":" + hhs + ",\"num_events\":" +
           num(written + counters) + ",\"dropped_events\":0,\"level\":1,\"p_idx\":-1}}");
    s.line("]");
  }
  return 0;
}
