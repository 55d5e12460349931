// compression_bench.cpp: deflate implementations and levels on real trace text, in 1 MiB
// members as the writer makes them: speed (MB/s of text) and compressed bytes per event.
// Usage: compression_bench TRACE.pfw   (uncompressed text; e.g. zcat a trace into a file)
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "base/gzip_member.hpp"

using namespace dftrace::detail;

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TRACE.pfw\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  std::printf("%zu bytes, %zu lines, %.1f bytes/line uncompressed\n", text.size(), lines,
              double(text.size()) / double(lines));
  for (codec c : {codec::isal, codec::libdeflate, codec::zlib}) {
    if (!codec_available(c)) continue;
    for (int level = codec_min_level(c); level <= std::min(codec_max_level(c), 9); ++level) {
      member_encoder enc(c, level);
      std::vector<char> out;
      out.reserve(text.size());
      const auto t0 = std::chrono::steady_clock::now();
      size_t pos = 0;
      while (pos < text.size()) {  // whole lines, about 1 MiB each
        size_t end = std::min(text.size(), pos + (1u << 20));
        while (end < text.size() && text[end - 1] != '\n') ++end;
        enc.encode(text.data() + pos, end - pos, member_stats{}, out);
        pos = end;
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("%-10s level %d: %7.1f MB/s  %6.2f bytes/event  ratio %.1f\n", codec_name(c),
                  level, text.size() / s / 1e6, double(out.size()) / double(lines),
                  double(text.size()) / out.size());
    }
  }
  return 0;
}
