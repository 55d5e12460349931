// trace_support.hpp: what the unit tests that write traces share: a temporary directory, the
// lines of a trace read back through the project's reader, and one gzip member inflated by zlib.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "reader/line_parser.hpp"
#include "reader/trace_reader.hpp"

namespace dftrace::test {

// A fresh directory under TMPDIR, removed with its files at the end of the test.
struct temp_dir {
  std::string path;
  temp_dir() {
    const char *t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t && *t ? t : "/tmp") + "/dftrace-unit-XXXXXX";
    path = mkdtemp(tmpl.data());
  }
  ~temp_dir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

// Every non-empty line of a trace (gzip members or plain text), damage reported as a failure.
inline std::vector<std::string> read_lines(const std::string &path) {
  detail::trace_file f;
  std::string why;
  std::vector<std::string> lines;
  if (!f.open(path, &why)) {
    ADD_FAILURE() << path << ": " << why;
    return lines;
  }
  detail::read_options opt;
  opt.threads = 1;
  detail::for_each_block(f, opt, nullptr, [&](detail::text_block &b) {
    EXPECT_TRUE(b.issues.empty()) << path << ": " << b.issues.front().message;
    detail::for_each_line(b.whole_lines(), [&](std::string_view l) {
      if (!l.empty()) lines.emplace_back(l);
      return true;
    });
  });
  return lines;
}

// The text of the first gzip member at p (n bytes), inflated by zlib (not the project's
// reader); *consumed: the member's compressed bytes. A member that does not end well is a
// failure.
inline std::string inflate_member(const void *p, size_t n, size_t *consumed) {
  z_stream zs{};
  inflateInit2(&zs, 16 + 15);
  zs.next_in = static_cast<Bytef *>(const_cast<void *>(p));
  zs.avail_in = static_cast<uInt>(n);
  std::string out;
  char buf[65536];
  int rc;
  do {
    zs.next_out = reinterpret_cast<Bytef *>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof buf - zs.avail_out);
  } while (rc == Z_OK);
  EXPECT_EQ(rc, Z_STREAM_END);
  *consumed = zs.total_in;
  inflateEnd(&zs);
  return out;
}

// A line's "name", or a note saying why it has none.
inline std::string name_of(const std::string &line) {
  detail::parsed_line pl;
  if (line == "[" || line == "]") return line;
  if (!detail::parse_line(line, pl)) return "<not JSON: " + std::string(pl.error) + ">";
  return pl.name.present() ? std::string(pl.name.text) : std::string();
}

}  // namespace dftrace::test
