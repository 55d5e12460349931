// trace_reader_test.cpp: member planning through DT fields, streaming without them, damage,
// and the ordered delivery of blocks from the worker pool.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "reader/trace_reader.hpp"

using namespace dftrace::detail;

namespace {

std::string temp_path(const char *name) {
  return ::testing::TempDir() + "/reader_test_" + std::to_string(getpid()) + "_" + name;
}

void write_bytes(const std::string &path, const std::vector<char> &b) {
  FILE *f = fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  fwrite(b.data(), 1, b.size(), f);
  fclose(f);
}

// Writes b to path and opens it as a trace; false with *why when it can not be read.
bool open_bytes(trace_file &f, const std::string &path, const std::vector<char> &b,
                std::string *why) {
  write_bytes(path, b);
  return f.open(path, why);
}

// n members of `per` lines each; line k is {"id":k,"ts":1000+k}.
std::vector<char> dt_file(int n, int per, std::string *text) {
  member_encoder enc(codec::zlib, 1);
  std::vector<char> out;
  int k = 0;
  for (int m = 0; m < n; ++m) {
    std::string t;
    for (int i = 0; i < per; ++i, ++k)
      t += "{\"id\":" + std::to_string(k) + ",\"ts\":" + std::to_string(1000 + k) + "}\n";
    *text += t;
    EXPECT_TRUE(enc.encode(t.data(), t.size(), scan_member_stats(t.data(), t.size()), out));
  }
  return out;
}

std::string read_all(const trace_file &f, int threads, std::vector<read_issue> *issues,
                     size_t block = 4096) {
  read_options opt;
  opt.threads = threads;
  opt.block_bytes = block;
  opt.window = 3;
  std::string got;
  size_t expect_seq = 0;
  for_each_block(f, opt, nullptr, [&](text_block &b) {
    EXPECT_EQ(b.seq, expect_seq++);
    got.append(b.text);
    for (auto &i : b.issues) issues->push_back(i);
  });
  return got;
}

// text as one gzip member without a DT field, as DFTracer writes a file.
std::vector<char> one_gzip_member(std::string text) {
  std::vector<char> raw(compressBound(text.size()) + 64);
  // gzip framing through deflateInit2 (windowBits 31).
  z_stream zs{};
  deflateInit2(&zs, 1, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
  zs.next_in = reinterpret_cast<Bytef *>(text.data());
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef *>(raw.data());
  zs.avail_out = static_cast<uInt>(raw.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  raw.resize(zs.total_out);
  deflateEnd(&zs);
  return raw;
}

}  // namespace

TEST(TraceReader, PlansMembersFromDtFieldsAndReadsThemInOrder) {
  std::string text;
  const auto bytes = dt_file(40, 50, &text);
  const std::string path = temp_path("dt.pfw.gz");
  trace_file f;
  std::string why;
  ASSERT_TRUE(open_bytes(f, path, bytes, &why)) << why;
  EXPECT_TRUE(f.fully_described());
  EXPECT_EQ(f.dt_members(), 40u);
  EXPECT_EQ(f.parts()[3].dt.lines, 50u);
  EXPECT_EQ(f.parts()[1].dt.ts_min, 1050u);
  for (int threads : {1, 2, 4}) {
    std::vector<read_issue> issues;
    EXPECT_EQ(read_all(f, threads, &issues), text) << threads;
    EXPECT_TRUE(issues.empty());
  }
  unlink(path.c_str());
}

TEST(TraceReader, StreamsASingleMemberWithoutDtInBlocksOfWholeLines) {
  std::string text = "[\n";
  for (int i = 0; i < 20000; ++i)
    text += "{\"id\":" + std::to_string(i) + ",\"ts\":" + std::to_string(i) + "}\n";
  text += "]";
  std::vector<char> raw = one_gzip_member(text);
  const std::string path = temp_path("stream.pfw.gz");
  trace_file f;
  std::string why;
  ASSERT_TRUE(open_bytes(f, path, raw, &why));
  EXPECT_EQ(f.dt_members(), 0u);
  ASSERT_EQ(f.parts().size(), 1u);
  EXPECT_EQ(f.parts()[0].kind, planned_part::stream);
  read_options opt;
  opt.threads = 2;
  opt.block_bytes = 4096;
  std::string got;
  int blocks = 0;
  for_each_block(f, opt, nullptr, [&](text_block &b) {
    ++blocks;
    if (b.text.size() && got.size() + b.text.size() < text.size()) {
      EXPECT_EQ(b.text.back(), '\n');
    }
    got.append(b.text);
  });
  EXPECT_EQ(got, text);
  EXPECT_GT(blocks, 10);

  // Cut the file inside the deflate data: what came before is kept, the damage reported.
  raw.resize(raw.size() * 2 / 3);
  write_bytes(path, raw);
  trace_file g;
  ASSERT_TRUE(g.open(path, &why));
  std::vector<read_issue> issues;
  const std::string part = read_all(g, 2, &issues);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].message.find("truncated"), std::string::npos);
  EXPECT_GT(part.size(), text.size() / 3);
  EXPECT_EQ(text.compare(0, part.size(), part), 0);
  unlink(path.c_str());
}

TEST(TraceReader, TruncatedFinalDtMemberFallsBackToStreaming) {
  std::string text;
  auto bytes = dt_file(5, 2000, &text);
  bytes.resize(bytes.size() - 300);
  const std::string path = temp_path("cut.pfw.gz");
  trace_file f;
  std::string why;
  ASSERT_TRUE(open_bytes(f, path, bytes, &why));
  EXPECT_EQ(f.dt_members(), 4u);
  EXPECT_EQ(f.parts().back().kind, planned_part::stream);
  std::vector<read_issue> issues;
  const std::string got = read_all(f, 2, &issues);
  ASSERT_FALSE(issues.empty());
  EXPECT_GT(got.size(), text.size() * 4 / 5);
  EXPECT_EQ(text.compare(0, got.size(), got), 0);
  unlink(path.c_str());
}

TEST(TraceReader, RejectsWhatIsNotATrace) {
  const std::string path = temp_path("junk.bin");
  write_bytes(path, {'\x89', 'P', 'N', 'G', '\r', '\n'});
  trace_file f;
  std::string why;
  EXPECT_FALSE(f.open(path, &why));
  EXPECT_NE(why.find("not a trace"), std::string::npos);
  trace_file g;
  EXPECT_FALSE(g.open(temp_path("missing"), &why));
  unlink(path.c_str());
}

TEST(TraceReader, PlainFilesAreSlicedAtLineBoundaries) {
  std::string text = "[\n";
  for (int i = 0; i < 600000; ++i) text += "{\"id\":" + std::to_string(i) + "}\n";
  const std::string path = temp_path("plain.pfw");
  trace_file f;
  std::string why;
  ASSERT_TRUE(open_bytes(f, path, std::vector<char>(text.begin(), text.end()), &why));
  EXPECT_GT(f.parts().size(), 1u);
  for (const auto &p : f.parts()) EXPECT_EQ(f.data()[p.offset + p.length - 1], '\n');
  std::vector<read_issue> issues;
  EXPECT_EQ(read_all(f, 2, &issues), text);
  unlink(path.c_str());
}

TEST(TraceReader, DtUncompressedLengthIsOnlyAHint) {
  // One member; its DT uncompressed length forged to values that once sized the buffer.
  const std::string text = "{\"a\":1}\n{\"b\":2}\n";
  member_encoder enc(codec::zlib, 1);
  std::vector<char> m;
  ASSERT_TRUE(enc.encode(text.data(), text.size(), scan_member_stats(text.data(), text.size()), m));
  dt_field dt;
  ASSERT_TRUE(parse_dt_field(reinterpret_cast<const uint8_t *>(m.data()), m.size(), &dt));
  ASSERT_EQ(dt.uncompressed_len, text.size());
  for (uint32_t forged :
       {0xFFFFFFFFu, 0xFFFFFFFEu, 0u, 1u, static_cast<uint32_t>(text.size() + 1)}) {
    dt_field f = dt;
    f.uncompressed_len = forged;
    std::unique_ptr<char[]> out;
    size_t len = 0;
    std::vector<read_issue> issues;
    EXPECT_TRUE(inflate_member(reinterpret_cast<const uint8_t *>(m.data()), m.size(), f, out, &len,
                               issues, 0));
    ASSERT_EQ(std::string(out.get(), len), text) << forged;
    ASSERT_EQ(issues.size(), 1u) << forged;
    EXPECT_NE(issues[0].message.find("DT field says " + std::to_string(forged)), std::string::npos);
  }
}

TEST(TraceReader, AMemberCannotInflatePastTheLimit) {
  const std::string text(3u << 20, 'a');  // 3 MiB, about 3 KiB compressed
  member_encoder enc(codec::zlib, 6);
  std::vector<char> m;
  ASSERT_TRUE(enc.encode(text.data(), text.size(), member_stats{}, m));
  dt_field dt;
  ASSERT_TRUE(parse_dt_field(reinterpret_cast<const uint8_t *>(m.data()), m.size(), &dt));
  const size_t before = max_text_bytes();
  set_max_text_bytes(1u << 20);
  std::unique_ptr<char[]> out;
  size_t len = 0;
  std::vector<read_issue> issues;
  const bool ok = inflate_member(reinterpret_cast<const uint8_t *>(m.data()), m.size(), dt, out,
                                 &len, issues, 0);
  set_max_text_bytes(before);
  EXPECT_FALSE(ok);
  EXPECT_EQ(len, 1u << 20);
  ASSERT_FALSE(issues.empty());
  EXPECT_NE(issues[0].message.find("the reader's limit"), std::string::npos);
}

TEST(TraceReader, OneMemberOfAFewMiBIsSharedByTheWorkers) {
  // DFTracer 1.x writes a file as one member of a few MiB: with the reader's default block
  // size it must still come in several blocks, or one worker parses the whole file.
  std::string text = "[\n";
  for (int i = 0; text.size() < (3u << 20); ++i)
    text += "{\"id\":" + std::to_string(i) +
            ",\"name\":\"write\",\"ts\":" + std::to_string(1727387344294995 + i) +
            ",\"args\":{\"fhash\":56322}}\n";
  text += "]";
  const std::string path = temp_path("one_member.pfw.gz");
  trace_file f;
  std::string why;
  ASSERT_TRUE(open_bytes(f, path, one_gzip_member(text), &why)) << why;
  ASSERT_EQ(f.parts().size(), 1u);
  for (int threads : {1, 2}) {
    read_options opt;  // the reader's defaults
    opt.threads = threads;
    ASSERT_LT(text.size(), opt.block_bytes);
    std::string got;
    size_t blocks = 0;
    for_each_block(f, opt, nullptr, [&](text_block &b) {
      EXPECT_EQ(b.seq, blocks++);
      got.append(b.text);
    });
    EXPECT_EQ(got, text) << threads;
    EXPECT_GE(blocks, 4u) << threads;
  }
  unlink(path.c_str());
}

namespace {
// A file of many members and one cut as a stream, to be read by several workers.
struct pool_files {
  std::string dt_text, stream_text, dt_path = temp_path("pool_dt.pfw.gz"),
                                    stream_path = temp_path("pool_stream.pfw.gz");
  trace_file dt, stream;
  pool_files() {
    std::string why;
    EXPECT_TRUE(open_bytes(dt, dt_path, dt_file(64, 50, &dt_text), &why)) << why;
    stream_text = "[\n";
    for (int i = 0; stream_text.size() < (2u << 20); ++i)
      stream_text += "{\"id\":" + std::to_string(i) + ",\"ts\":" + std::to_string(1000 + i) + "}\n";
    EXPECT_TRUE(open_bytes(stream, stream_path, one_gzip_member(stream_text), &why)) << why;
  }
  ~pool_files() {
    unlink(dt_path.c_str());
    unlink(stream_path.c_str());
  }
};
}  // namespace

TEST(TraceReader, AnExceptionOfTheConsumerOrOfAWorkerStopsThePoolAndReachesTheCaller) {
  pool_files files;
  for (const trace_file *f : {&files.dt, &files.stream}) {
    read_options opt;
    opt.threads = 4;
    opt.block_bytes = 4096;
    opt.window = 3;
    auto throw_at = [](size_t seq) {
      return [seq](text_block &b) {
        if (b.seq == seq) throw std::runtime_error("block " + std::to_string(seq));
      };
    };
    for (size_t seq : {size_t{0}, size_t{2}}) {
      try {
        for_each_block(*f, opt, nullptr, throw_at(seq));
        ADD_FAILURE() << "the consumer's exception was lost";
      } catch (const std::runtime_error &e) {
        EXPECT_EQ(std::string(e.what()), "block " + std::to_string(seq));
      }
      try {
        for_each_block(*f, opt, throw_at(seq), nullptr);
        ADD_FAILURE() << "the worker's exception was lost";
      } catch (const std::runtime_error &e) {
        EXPECT_EQ(std::string(e.what()), "block " + std::to_string(seq));
      }
    }
  }
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
TEST(TraceReader, ReadsWithTheWorkersTheSystemGives) {
  // Under an address-space limit that leaves room for about one more thread stack, most of the
  // 8 workers cannot start: the read goes on with those that did, or on the caller's thread.
  pool_files files;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Thread stacks of 256 MiB, and room for one more and 64 MiB of data.
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) || pthread_attr_setstacksize(&attr, 256u << 20) ||
        pthread_setattr_default_np(&attr))
      _exit(3);
    long pages = 0;
    if (FILE *s = fopen("/proc/self/statm", "r")) {
      if (fscanf(s, "%ld", &pages) != 1) pages = 0;
      fclose(s);
    }
    const rlimit as{static_cast<rlim_t>(pages) * sysconf(_SC_PAGESIZE) + (320u << 20),
                    RLIM_INFINITY};
    if (pages == 0 || setrlimit(RLIMIT_AS, &as) != 0) _exit(3);
    try {
      read_options opt;
      opt.threads = 8;
      opt.block_bytes = 4096;
      for (const trace_file *f : {&files.dt, &files.stream}) {
        std::string got;
        for_each_block(*f, opt, nullptr, [&](text_block &b) { got.append(b.text); });
        if (got != (f == &files.dt ? files.dt_text : files.stream_text)) _exit(1);
      }
      int refused = 0;  // the limit bites: a few threads beside each other are refused
      std::vector<std::thread> probe;
      try {
        for (int i = 0; i < 4; ++i) probe.emplace_back([] {});
      } catch (const std::system_error &) {
        refused = 1;
      }
      for (auto &t : probe) t.join();
      _exit(refused ? 0 : 2);
    } catch (...) {
      _exit(4);
    }
  }
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st)) << "the reader died of signal " << WTERMSIG(st);
  EXPECT_NE(WEXITSTATUS(st), 1) << "the text read differs";
  EXPECT_NE(WEXITSTATUS(st), 3) << "the limit could not be set";
  EXPECT_NE(WEXITSTATUS(st), 4) << "the read threw";
  if (WEXITSTATUS(st) == 2) GTEST_SKIP() << "threads were not refused under the limit";
}
#endif
