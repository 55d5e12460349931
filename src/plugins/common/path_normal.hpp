// path_normal.hpp: an absolute path's normal form ("//", "." and ".." removed, without resolving
// links: src/plugins/io/README.md, "Which files"), computed on every open and stat of a file and
// on every MPI-IO open. Header-only and free of the rest of the plug-ins, so that a unit test
// holds the quick check to the rewrite.
#pragma once

#include <string.h>

#include <cstddef>

namespace dftrace::plugin {

// Normalises an absolute path (p[0] == '/') in place: "//", "/./" and "/x/.." removed, a
// trailing '/' dropped; "/" stays "/".
inline void normalise(char *p) {
  char *out = p;
  const char *in = p;
  while (*in) {
    while (*in == '/') ++in;
    if (!*in) break;
    const char *end = in;
    while (*end && *end != '/') ++end;
    const size_t n = static_cast<size_t>(end - in);
    if (n == 1 && in[0] == '.') {
      // nothing
    } else if (n == 2 && in[0] == '.' && in[1] == '.') {
      while (out > p && *--out != '/') {
      }
    } else {
      *out++ = '/';
      memmove(out, in, n);
      out += n;
    }
    in = end;
  }
  if (out == p) *out++ = '/';
  *out = '\0';
}

// Whether normalise would leave the absolute path p (n bytes) as it is: no empty, "." or ".."
// component and no trailing '/' (a path the application built, the usual case: its check is a
// few memchr calls instead of the rewrite).
inline bool is_normal(const char *p, size_t n) {
  if (n > 1 && p[n - 1] == '/') return false;
  const char *const end = p + n;
  for (const char *s = p;
       (s = static_cast<const char *>(memchr(s, '/', static_cast<size_t>(end - s))));) {
    const char *c = s + 1;  // the component after this '/'
    if (c == end) return n == 1;
    if (*c == '/') return false;
    if (*c == '.' &&
        (c + 1 == end || c[1] == '/' || (c[1] == '.' && (c + 2 == end || c[2] == '/'))))
      return false;
    s = c;
  }
  return true;
}

}  // namespace dftrace::plugin
