// fuzz_trace_file.cpp: the whole-file reader: open (gzip or plain), the DT member plan, the
// stream fallback, blocks of whole lines in file order, and each line parsed. Input: the
// bytes of a trace file (held in a memfd, opened by path as the tools do).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "reader/line_parser.hpp"
#include "reader/trace_reader.hpp"

using namespace dftrace::detail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const bool limited = [] {
    set_max_text_bytes(16u << 20);
    return true;
  }();
  (void)limited;
  const int fd = memfd_create("fuzz-trace", MFD_CLOEXEC);
  if (fd < 0) return 0;
  size_t off = 0;
  while (off < size) {
    const ssize_t w = write(fd, data + off, size - off);
    if (w <= 0) break;
    off += static_cast<size_t>(w);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  {
    trace_file f;
    std::string why;
    if (f.open(path, &why)) {
      uint64_t covered = 0;
      for (const auto &p : f.parts()) {
        if (p.offset + p.length > f.size()) abort();
        covered += p.length;
      }
      if (covered != f.size()) abort();
      read_options opt;
      opt.threads = size % 3 == 0 ? 2 : 1;  // the ordered pool as well as the inline path
      opt.block_bytes = 4096;
      opt.window = 4;
      size_t next_seq = 0;
      auto work = [](text_block &b) {
        parsed_line pl;
        for_each_line(b.whole_lines(), [&](std::string_view line) {
          if (parse_line(line, pl)) {
            uint64_t u;
            value_u64(pl.ts, &u);
            value_u64(pl.dur, &u);
          }
          return true;
        });
      };
      auto consume = [&](text_block &b) {
        if (b.seq < next_seq) abort();  // file order
        next_seq = b.seq + 1;
        if (b.whole_lines().size() > b.text.size()) abort();
      };
      for_each_block(f, opt, work, consume);
    } else if (why.empty()) {
      abort();
    }
  }
  close(fd);
  return 0;
}
