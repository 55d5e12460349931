// writer_parts_test.cpp: the writer's parts one by one (chunk pool, member builder, output file,
// trace lines) and the writer over them: files read back through the project's reader.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "base/gzip_member.hpp"
#include "output/output_file.hpp"
#include "trace_support.hpp"
#include "writer/chunk_pool.hpp"
#include "writer/member_builder.hpp"
#include "writer/trace_lines.hpp"
#include "writer/writer.hpp"

using namespace dftrace::detail;

namespace {

bool exists(const std::string &p) {
  struct stat st;
  return ::lstat(p.c_str(), &st) == 0;
}

std::string slurp(const std::string &p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

using dftrace::test::name_of;
using dftrace::test::read_lines;
using dftrace::test::temp_dir;

line_format test_format() {
  line_format f;
  f.pid = 4242;
  f.epoch_offset_ns = 1'700'000'000'000'000'000ull;
  f.metadata = true;
  f.hhash_field = hhash_member(7386335834152862147ull);
  return f;
}

writer_settings settings_for(const std::string &path, const std::string &header, bool compress) {
  writer_settings ws;
  ws.compress = compress;
  ws.kind = codec_auto();
  ws.level = codec_default_level(ws.kind);
  ws.member_bytes = 4096;
  ws.flush_interval = 0.05;
  ws.chunk_bytes = 4096;
  ws.queue_bytes = 1 << 20;
  ws.compress_threads = 2;
  ws.format = test_format();
  ws.path = path;
  ws.header = header;
  return ws;
}

}  // namespace

// ---------------------------------------------------------------- chunk pool

TEST(ChunkPool, ReusesChunksOfItsSizeAndFreesLargerOnes) {
  chunk_pool pool(1024);
  chunk *a = pool.take(10);
  EXPECT_EQ(a->cap, 1024u);
  pool.recycle(a);
  EXPECT_EQ(pool.take(10), a);  // the same chunk again
  chunk *big = pool.take(5000);
  EXPECT_GE(big->cap, 5000u);
  pool.recycle(big);  // freed, not pooled
  chunk *b = pool.take(10);
  EXPECT_EQ(b->cap, 1024u);  // a pooled large chunk would come back here
  pool.recycle(a);
  pool.recycle(b);
}

TEST(ChunkPool, TakesWhatEachThreadCommittedOnce) {
  chunk_pool pool(1024);
  thread_buffer t1, t2;
  EXPECT_EQ(pool.add(&t1), 1u);
  EXPECT_EQ(pool.add(&t2), 2u);
  chunk *c1 = pool.take(1);
  t1.current = c1;
  c1->committed = 96;
  std::vector<chunk_range> out;
  out.reserve(8);
  pool.take_committed(out, false);
  ASSERT_EQ(out.size(), 1u);  // t2 holds no chunk
  EXPECT_EQ(out[0].c, c1);
  EXPECT_EQ(out[0].from, 0u);
  EXPECT_EQ(out[0].to, 96u);
  out.clear();
  pool.take_committed(out, false);
  EXPECT_TRUE(out.empty());  // nothing new
  c1->committed = 160;
  ASSERT_TRUE(pool.take_committed_within(out, std::chrono::milliseconds(100)));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].from, 96u);
  EXPECT_EQ(out[0].to, 160u);
  EXPECT_EQ(pool.remove(&t1), c1);  // the buffer's chunk comes back with it
  EXPECT_EQ(t1.current.load(), nullptr);
  out.clear();
  c1->committed = 200;
  pool.take_committed(out, false);
  EXPECT_TRUE(out.empty());  // t1 is no longer registered
  pool.recycle(c1);
}

// ---------------------------------------------------------------- member builder

TEST(MemberBuilder, CutsMembersAtTheirSizeAndCountsEventsApart) {
  member_builder b(100, test_format());
  const std::string line(40, 'x');
  const std::string text = line + "\n";
  member_stats st{1, 0, 0};
  for (int i = 0; i < 5; ++i) b.add_lines(text.data(), text.size(), st, false, i % 2 == 0);
  b.close();
  ASSERT_EQ(b.closed(), 3u);  // 2 + 2 + 1 lines of 41 bytes under 100
  size_t lines = 0, events = 0;
  for (size_t i = 0; i < b.closed(); ++i) {
    EXPECT_LE(b.at(i).text.size(), 100u);
    lines += b.at(i).stats.lines;
    events += b.at(i).events;
  }
  EXPECT_EQ(lines, 5u);
  EXPECT_EQ(events, 3u);
  b.next_pass();
  EXPECT_EQ(b.closed(), 0u);
}

// ---------------------------------------------------------------- output file

TEST(OutputFile, RelocateBeforeTheFileExistsHonoursThePathAndHeader) {
  temp_dir d;
  output_file f;
  f.plan(d.path + "/first.pfw", "[\nfirst\n");
  f.relocate(d.path + "/sub/second.pfw", "[\nsecond\n");
  EXPECT_EQ(f.path(), d.path + "/sub/second.pfw");
  EXPECT_EQ(f.header(), "[\nsecond\n");
  ASSERT_TRUE(f.open());
  ASSERT_TRUE(f.write("abc", 3));
  f.close();
  EXPECT_FALSE(exists(d.path + "/first.pfw"));
  EXPECT_EQ(slurp(d.path + "/sub/second.pfw"), "abc");
}

TEST(OutputFile, RelocateAfterOpenRenamesAndNeverReplaces) {
  temp_dir d;
  output_file f;
  f.plan(d.path + "/a.pfw.gz", "[\n");
  ASSERT_TRUE(f.open());
  f.relocate(d.path + "/b.pfw.gz", "ignored");
  EXPECT_EQ(f.path(), d.path + "/b.pfw.gz");
  EXPECT_FALSE(exists(d.path + "/a.pfw.gz"));
  EXPECT_TRUE(exists(d.path + "/b.pfw.gz"));
  // Something else holds the next name: it is left alone and a free name near it is taken.
  { std::ofstream(d.path + "/c.pfw.gz") << "someone else's"; }
  f.relocate(d.path + "/c.pfw.gz", "ignored");
  EXPECT_EQ(f.path(), d.path + "/c.1.pfw.gz");
  EXPECT_EQ(slurp(d.path + "/c.pfw.gz"), "someone else's");
  f.close();
}

TEST(OutputFile, AnExistingFileOrLinkIsLeftAlone) {
  temp_dir d;
  const std::string target = d.path + "/target";
  { std::ofstream(target) << "keep"; }
  ASSERT_EQ(::symlink(target.c_str(), (d.path + "/t.pfw").c_str()), 0);
  output_file f;
  f.plan(d.path + "/t.pfw", "[\n");
  ASSERT_TRUE(f.open());
  EXPECT_EQ(f.path(), d.path + "/t.1.pfw");
  ASSERT_TRUE(f.write("x", 1));
  f.close();
  EXPECT_EQ(slurp(target), "keep");
}

TEST(OutputFile, AnUnusableDirectoryFailsWithoutThrowing) {
  temp_dir d;
  { std::ofstream(d.path + "/file") << "x"; }
  output_file f;
  f.plan(d.path + "/file/below/t.pfw", "[\n");  // a regular file where a directory should be
  EXPECT_FALSE(f.open());
  EXPECT_TRUE(f.failed());
  EXPECT_FALSE(f.write("x", 1));
}

TEST(OutputFile, OneAtomicStateSaysWhereTheFileStandsWhileAnotherThreadOpensIt) {
  // The writer thread inside open() is held there (on the path's lock, which a fork holds);
  // the fatal-signal path, on another thread, reads the state: opening while it is held (its
  // bounded wait ends), open once it is done; an open() of its own then finds the file open
  // and creates nothing more.
  temp_dir d;
  output_file f;
  f.plan(d.path + "/t.pfw", "[\n");
  EXPECT_EQ(f.status(), output_file::state::untried);
  f.fork_prepare();  // (path lock held)
  std::thread writer([&] { EXPECT_TRUE(f.open(false, "[\n", 2)); });
  while (f.status() == output_file::state::untried) std::this_thread::yield();
  EXPECT_EQ(f.status(), output_file::state::opening);
  EXPECT_TRUE(f.tried());
  EXPECT_FALSE(f.is_open());
  EXPECT_EQ(f.wait_opening(20), output_file::state::opening);  // bounded: it gives up
  f.fork_parent();
  while (f.wait_opening(200) == output_file::state::opening) {
  }
  writer.join();
  EXPECT_EQ(f.status(), output_file::state::open);
  EXPECT_TRUE(f.open(true, "[\n", 2));
  ASSERT_TRUE(f.write("x", 1));
  f.close();
  EXPECT_EQ(f.status(), output_file::state::closed);
  EXPECT_FALSE(f.open());
  EXPECT_EQ(slurp(d.path + "/t.pfw"), "[\nx");
  EXPECT_FALSE(exists(d.path + "/t.1.pfw"));
}

TEST(OutputFile, OpenWhileAnotherThreadIsInsideItWaitsAndSaysOpen) {
  // The fatal-signal path's open() while the writer thread is creating the file: it must not
  // answer "tried, not open" (the handler would write nothing, the process die, and the file be
  // left half made), nor create a second file.
  for (int round = 0; round < 20; ++round) {
    temp_dir d;
    output_file f;
    f.plan(d.path + "/t.pfw", "[\n");
    f.fork_prepare();  // the writer thread is held inside open() (path lock)
    std::thread writer([&] { EXPECT_TRUE(f.open(false, "[\n", 2)); });
    while (f.status() == output_file::state::untried) std::this_thread::yield();
    std::atomic<bool> asked{false};
    bool handler_open = false;
    std::thread handler([&] {
      asked = true;
      handler_open = f.open(true, "[\n", 2);
    });
    while (!asked) std::this_thread::yield();
    f.fork_parent();  // the writer thread goes on (the handler waits up to 200 ms)
    handler.join();
    writer.join();
    EXPECT_TRUE(handler_open) << "round " << round;
    EXPECT_TRUE(f.is_open());
    f.close();
    EXPECT_EQ(slurp(d.path + "/t.pfw"), "[\n");
    EXPECT_FALSE(exists(d.path + "/t.1.pfw"));
  }
}

// Plans and opens d/t.pfw: the trace's descriptor, or -1 when the file did not open. As in a
// process with libdftrace_io, which guards the descriptor: it is held between writes.
int open_trace(output_file &f, const temp_dir &d) {
  trace_fd_guarded(true);
  f.plan(d.path + "/t.pfw", "[\n");
  return f.open() ? g_trace_fd.load() : -1;
}

TEST(OutputFile, TheDescriptorIsHighAndAReplacedOneIsNeverWrittenTo) {
  temp_dir d;
  output_file f;
  const int fd = open_trace(f, d);
  ASSERT_GE(fd, 0);
  struct rlimit rl;
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_cur > static_cast<rlim_t>(k_trace_fd_floor)) {
    EXPECT_GE(fd, k_trace_fd_floor);
  }
  ASSERT_TRUE(f.write("a", 1));
  // A program linked with dftrace alone puts its own file on the number.
  const std::string other = d.path + "/other";
  const int o = ::open(other.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(o, 0);
  ASSERT_EQ(::dup2(o, fd), fd);
  ASSERT_TRUE(f.write("b", 1));  // opened again by its path, elsewhere
  EXPECT_NE(g_trace_fd.load(), fd);
  ASSERT_TRUE(::write(fd, "mine", 4) == 4);
  // ... and when it closes it, likewise.
  ASSERT_EQ(::close(g_trace_fd.load()), 0);
  ASSERT_TRUE(f.write("c", 1));
  f.close();
  ::close(fd);
  ::close(o);
  EXPECT_EQ(slurp(d.path + "/t.pfw"), "abc");
  EXPECT_EQ(slurp(other), "mine");
  EXPECT_LT(g_trace_fd.load(), 0);
}

TEST(OutputFile, ReleaseMovesTheFileOffItsNumber) {
  temp_dir d;
  output_file f;
  const int fd = open_trace(f, d);
  ASSERT_GE(fd, 0);
  EXPECT_FALSE(release_trace_fd(fd + 1));
  ASSERT_TRUE(release_trace_fd(fd));
  EXPECT_NE(g_trace_fd.load(), fd);
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1);  // closed: the program's dup2 may take it
  ASSERT_TRUE(f.write("x", 1));
  f.close();
  EXPECT_EQ(slurp(d.path + "/t.pfw"), "x");
}

TEST(OutputFile, AMemberThatWouldCrossTheFileSizeLimitIsNotWritten) {
  // In a child of its own: the limit is the process's, and another thread's file (a writer of
  // an earlier test) crossing it would die of SIGXFSZ, which keeps its default here.
  temp_dir d;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // (the failure's message goes to stderr, which may be a file longer than the limit)
    const int null = ::open("/dev/null", O_WRONLY);
    if (null < 0 || ::dup2(null, 2) != 2) ::_exit(9);
    output_file f;
    f.plan(d.path + "/t.pfw", "[\n");
    if (!f.open()) ::_exit(10);
    struct rlimit small;
    ::getrlimit(RLIMIT_FSIZE, &small);
    small.rlim_cur = 10;
    if (::setrlimit(RLIMIT_FSIZE, &small) != 0) ::_exit(11);
    if (!f.write("0123456", 7)) ::_exit(12);
    if (f.write("789ab", 5) || !f.failed()) ::_exit(13);  // 12 > 10: not written, no SIGXFSZ
    if (!f.write_last("end", 3)) ::_exit(14);             // what still fits after the failure
    f.close();
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(slurp(d.path + "/t.pfw"), "0123456end");
}

// ---------------------------------------------------------------- trace lines

TEST(TraceLines, EveryLineIsOneJsonObjectWithItsFields) {
  const line_format f = test_format();
  const std::string hostile = "a\"b\\c\n\x01 é";
  const std::string meta = meta_line(f, 3, "SH", 4242, true, hostile, "12345");
  parsed_line pl;
  ASSERT_TRUE(parse_line(std::string_view(meta).substr(0, meta.size() - 1), pl)) << pl.error;
  EXPECT_EQ(meta.back(), '\n');
  EXPECT_EQ(pl.name.text, "SH");
  EXPECT_EQ(pl.ph.text, "M");
  ASSERT_NE(pl.arg_value("hhash"), nullptr);
  EXPECT_EQ(pl.arg_value("hhash")->text, "7386335834152862147");
  EXPECT_EQ(pl.arg_value("value")->text, "12345");

  // The same line written into a caller's buffer; nothing when the buffer may be too small.
  char into[1024];
  EXPECT_EQ(std::string(into, meta_line_into(into, sizeof into, f.pid, f.hhash_field, 3, "SH", 4242,
                                             true, hostile, "12345")),
            meta);
  EXPECT_EQ(meta_line_into(into, 64, f.pid, f.hhash_field, 3, "SH", 4242, true, hostile, "1"), 0u);
  EXPECT_EQ(std::string(into, meta_line_into(into, sizeof into, f.pid, "", 5, "FH", 4242, false,
                                             "/p", "7")),
            meta_line(4242, "", 5, "FH", 4242, false, "/p", "7"));

  const std::string named = name_line(f, 4, "thread_name", 7, "worker", "[0]");
  ASSERT_TRUE(parse_line(std::string_view(named).substr(0, named.size() - 1), pl)) << pl.error;
  EXPECT_EQ(pl.tid.text, "7");
  EXPECT_EQ(pl.arg_value("core_affinity")->text, "[0]");
  EXPECT_EQ(pl.arg_value("hhash"), nullptr);  // naming lines carry no hash

  start_fields st;
  st.id = 9;
  st.mono_ns = 5'000'123'456ull;
  st.version = "1.2.3";
  st.date = "Mon Jan 01 00:00:00 2026";
  const std::string start = start_line(f, st);
  ASSERT_TRUE(parse_line(std::string_view(start).substr(0, start.size() - 1), pl)) << pl.error;
  EXPECT_EQ(pl.name.text, "start");
  // Epoch microseconds: (mono + offset) / 1000, an integer at the default precision.
  EXPECT_EQ(pl.ts.text, std::to_string((st.mono_ns + f.epoch_offset_ns) / 1000));

  end_fields e;
  e.id = 10;
  e.mono_ns = 6'000'000'000ull;
  e.events = 5;
  e.dropped = 1;
  e.signal = SIGTERM;
  char buf[2048];
  const size_t n = end_line_into(f, e, buf, sizeof buf);
  ASSERT_GT(n, 0u);
  const std::string end(buf, n);
  ASSERT_EQ(end.substr(end.size() - 2), "]\n");
  const std::string first = end.substr(0, end.find('\n'));
  ASSERT_TRUE(parse_line(first, pl)) << pl.error;
  EXPECT_EQ(pl.arg_value("num_events")->text, "5");
  EXPECT_EQ(pl.arg_value("dropped_events")->text, "1");
  EXPECT_EQ(pl.arg_value("signal")->text, "SIGTERM");
  EXPECT_EQ(end_line_into(f, e, buf, 100), 0u);  // too small: nothing, not a cut line
}

// ---------------------------------------------------------------- the writer over its parts

TEST(Writer, WritesHeaderMetadataAndEndAsReadableMembers) {
  for (const bool compress : {true, false}) {
    temp_dir d;
    const std::string path = d.path + "/w.pfw" + (compress ? ".gz" : "");
    const line_format f = test_format();
    const std::string header = "[\n" + meta_line(f, 1, "HH", 4242, true, "host", "1");
    writer w(settings_for(path, header, compress));
    for (int i = 0; i < 200; ++i)  // several members of 4 KiB
      w.push_meta(meta_line(f, 100 + i, "FH", 4242, true, "/data/file" + std::to_string(i),
                            std::to_string(i)));
    ASSERT_TRUE(w.flush());
    end_fields e;
    e.id = 999;
    w.finish(e);
    const std::vector<std::string> lines = read_lines(path);
    ASSERT_EQ(lines.size(), 1u + 1 + 200 + 1 + 1) << "compress " << compress;  // [ HH FH.. end ]
    EXPECT_EQ(lines.front(), "[");
    EXPECT_EQ(name_of(lines[1]), "HH");
    for (int i = 0; i < 200; ++i) EXPECT_EQ(name_of(lines[2 + i]), "FH");
    EXPECT_EQ(name_of(lines[202]), "end");
    EXPECT_EQ(lines.back(), "]");
  }
}

// The file's members one by one: each one's text and the line count its DT field gives.
struct member_text {
  std::string text;
  uint32_t dt_lines;
};
std::vector<member_text> members_of(const std::string &path) {
  const std::string file = slurp(path);
  std::vector<member_text> out;
  size_t at = 0;
  while (at < file.size()) {
    dt_field dt;
    const auto *p = reinterpret_cast<const uint8_t *>(file.data() + at);
    if (!parse_dt_field(p, file.size() - at, &dt) || dt.compressed_len == 0) {
      ADD_FAILURE() << "no DT member at byte " << at;
      break;
    }
    size_t used = 0;
    const std::string text = dftrace::test::inflate_member(p, dt.compressed_len, &used);
    EXPECT_EQ(used, dt.compressed_len) << "member at byte " << at;
    out.push_back({text, dt.lines});
    at += dt.compressed_len;
  }
  return out;
}

// Metadata lines gathered in one pass (a burst of new files) are cut into members of whole
// lines, each of at most the member size unless one line is longer, each member's DT field
// counting its lines; every line arrives once, in order, whole.
TEST(Writer, ManyMetadataLinesBecomeMembersOfWholeLinesCountedRight) {
  temp_dir d;
  const std::string path = d.path + "/m.pfw.gz";
  const line_format f = test_format();
  writer w(settings_for(path, "[\n", true));
  std::vector<std::string> want;
  for (int i = 0; i < 600; ++i) {
    // names of 1 to ~300 bytes, and two longer than a member (4 KiB here)
    std::string name = "/data/" + std::string(static_cast<size_t>((i * 37) % 300), 'n');
    if (i == 100 || i == 400) name += std::string(6000, 'L');
    want.push_back(
        meta_line(f, 100 + i, "FH", 4242, true, name + std::to_string(i), std::to_string(i)));
    w.push_meta(want.back());
    if (i == 299) {
      ASSERT_TRUE(w.flush());  // two passes
    }
  }
  w.finish(end_fields{});
  const std::vector<member_text> members = members_of(path);
  ASSERT_GE(members.size(), 10u);
  std::string all;
  for (const member_text &m : members) {
    const auto lines = static_cast<uint32_t>(std::count(m.text.begin(), m.text.end(), '\n'));
    EXPECT_EQ(m.dt_lines, lines) << m.text.substr(0, 80);
    if (lines > 1) {
      EXPECT_LE(m.text.size(), 4096u);
    }
    EXPECT_TRUE(m.text.empty() || m.text.back() == '\n');
    all += m.text;
  }
  std::string expected;
  for (const std::string &l : want) expected += l;
  const size_t from = all.find(want.front()), to = all.find("\"name\":\"end\"");
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(to, std::string::npos);
  EXPECT_EQ(all.substr(from, all.rfind('\n', to) + 1 - from), expected);
}

TEST(Writer, RelocateBeforeTheFirstWriteUsesTheNewPathAndHeader) {
  temp_dir d;
  const line_format f = test_format();
  writer w(settings_for(d.path + "/before.pfw.gz", "[\n", true));
  w.relocate(d.path + "/after-3.pfw.gz", "[\n" + meta_line(f, 1, "PR", 4242, true, "rank", "3"));
  w.push_meta(meta_line(f, 40, "FH", 4242, true, "x", "1"));
  w.finish(end_fields{});
  EXPECT_FALSE(exists(d.path + "/before.pfw.gz"));
  const std::vector<std::string> lines = read_lines(d.path + "/after-3.pfw.gz");
  ASSERT_GE(lines.size(), 4u);
  EXPECT_EQ(name_of(lines[1]), "PR");
  EXPECT_EQ(w.path(), d.path + "/after-3.pfw.gz");
}
