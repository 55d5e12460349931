// stdio_text.cpp: the character and line calls of a stream (fgetc, fputc, fgets, fputs,
// getline, the printf family), folded per stream and call (stdio_fold.hpp): events of category
// STDIO with fhash, calls and bytes. Their _unlocked and _FORTIFY_SOURCE forms are recorded under
// the plain name.
#include <stdarg.h>
#include <string.h>

#include "plugins/io/stdio_fold.hpp"

using namespace dftrace::io;

// The C library's forms that its headers do not declare (fortified and compatibility names).
extern "C" {
int _IO_getc(FILE *f);
int _IO_putc(int c, FILE *f);
int _IO_ungetc(int c, FILE *f);
char *__fgets_chk(char *buf, size_t room, int n, FILE *f);
char *__fgets_unlocked_chk(char *buf, size_t room, int n, FILE *f);
int __fprintf_chk(FILE *f, int flag, const char *format, ...);
int __printf_chk(int flag, const char *format, ...);
int __vfprintf_chk(FILE *f, int flag, const char *format, va_list ap);
int __vprintf_chk(int flag, const char *format, va_list ap);
}

namespace {

constexpr const char *k_stdio = "STDIO";

// Bytes moved by each kind of call, from its result.
inline uint64_t char_bytes(int ret) { return ret == EOF ? 0 : 1; }
inline uint64_t count_bytes(long ret) { return ret > 0 ? static_cast<uint64_t>(ret) : 0; }
// fgets: the line read (up to a NUL byte in it: fgets says no more).
inline uint64_t line_bytes(const char *ret) { return ret ? strlen(ret) : 0; }

}  // namespace

extern "C" {

// A call of `name` folded as the node `event` on stream `f`.
// `reads`: a reading call (ungetc's bytes read again are not counted twice).
#define DFTRACE_IO_FOLDED_AS(reads, event, f, call, bytes) \
  DFTRACE_IO_NODE(k_stdio, event);                         \
  DFTRACE_IO_PASS(call);                                   \
  return folded<reads>(                                    \
      node_, f, [&] { return call; }, [&](auto ret) { return bytes; })
#define DFTRACE_IO_FOLDED_READ(event, f, call, bytes) \
  DFTRACE_IO_FOLDED_AS(true, event, f, call, bytes)
#define DFTRACE_IO_FOLDED(event, f, call, bytes) DFTRACE_IO_FOLDED_AS(false, event, f, call, bytes)

// ---- characters
#define DFTRACE_IO_SHAPE_GETC(cat, name, event, ...)                   \
  int name(FILE *f) {                                                  \
    DFTRACE_IO_REAL(name);                                             \
    DFTRACE_IO_FOLDED_READ(event, f, real_##name(f), char_bytes(ret)); \
  }                                                                    \
  DFTRACE_IO_REGISTER(name);

#define DFTRACE_IO_SHAPE_GETCHAR(cat, name, event, ...)                   \
  int name(void) {                                                        \
    DFTRACE_IO_REAL(name);                                                \
    DFTRACE_IO_FOLDED_READ(event, stdin, real_##name(), char_bytes(ret)); \
  }                                                                       \
  DFTRACE_IO_REGISTER(name);

#define DFTRACE_IO_SHAPE_PUTC(cat, name, event, ...)                 \
  int name(int c, FILE *f) {                                         \
    DFTRACE_IO_REAL(name);                                           \
    DFTRACE_IO_FOLDED(event, f, real_##name(c, f), char_bytes(ret)); \
  }                                                                  \
  DFTRACE_IO_REGISTER(name);

#define DFTRACE_IO_SHAPE_PUTCHAR(cat, name, event, ...)                \
  int name(int c) {                                                    \
    DFTRACE_IO_REAL(name);                                             \
    DFTRACE_IO_FOLDED(event, stdout, real_##name(c), char_bytes(ret)); \
  }                                                                    \
  DFTRACE_IO_REGISTER(name);

// ---- lines
#define DFTRACE_IO_SHAPE_FGETS(cat, name, event, ...)                          \
  char *name(char *buf, int n, FILE *f) {                                      \
    DFTRACE_IO_REAL(name);                                                     \
    DFTRACE_IO_FOLDED_READ(event, f, real_##name(buf, n, f), line_bytes(ret)); \
  }                                                                            \
  DFTRACE_IO_REGISTER(name);

#define DFTRACE_IO_SHAPE_FGETS_CHK(cat, name, event, ...)                            \
  char *name(char *buf, size_t room, int n, FILE *f) {                               \
    DFTRACE_IO_REAL(name);                                                           \
    DFTRACE_IO_FOLDED_READ(event, f, real_##name(buf, room, n, f), line_bytes(ret)); \
  }                                                                                  \
  DFTRACE_IO_REGISTER(name);

// fputs writes the whole string or fails (EOF).
#define DFTRACE_IO_SHAPE_FPUTS(cat, name, event, ...)                           \
  int name(const char *s, FILE *f) {                                            \
    DFTRACE_IO_REAL(name);                                                      \
    DFTRACE_IO_FOLDED(event, f, real_##name(s, f), ret == EOF ? 0 : strlen(s)); \
  }                                                                             \
  DFTRACE_IO_REGISTER(name);

// puts: the string and a newline.
int puts(const char *s) {
  DFTRACE_IO_REAL(puts);
  DFTRACE_IO_FOLDED("puts", stdout, real_puts(s), ret == EOF ? 0 : strlen(s) + 1);
}

#define DFTRACE_IO_SHAPE_GETDELIM(cat, name, event, ...)                                   \
  ssize_t name(char **line, size_t *room, int delim, FILE *f) {                            \
    DFTRACE_IO_REAL(name);                                                                 \
    DFTRACE_IO_FOLDED_READ(event, f, real_##name(line, room, delim, f), count_bytes(ret)); \
  }                                                                                        \
  DFTRACE_IO_REGISTER(name);

ssize_t getline(char **line, size_t *room, FILE *f) {
  DFTRACE_IO_REAL(getline);
  DFTRACE_IO_FOLDED_READ("getline", f, real_getline(line, room, f), count_bytes(ret));
}

// ---- pushing back and discarding pushback: no event. A byte ungetc pushes back is not
// counted again when a reading call reads it again (stdio_fold.hpp, fold_unread); rewind and
// fsetpos discard it (fseek, fflush, fclose and freopen: stdio.cpp).
#define DFTRACE_IO_SHAPE_UNGETC(cat, name, ...)                                                  \
  int name(int c, FILE *f) {                                                                     \
    DFTRACE_IO_REAL(name);                                                                       \
    const int ret = real_##name(c, f);                                                           \
    if (ret != EOF && f && !t_inside && g_ready.load(std::memory_order_relaxed)) fold_unread(f); \
    return ret;                                                                                  \
  }                                                                                              \
  DFTRACE_IO_REGISTER(name);

void rewind(FILE *f) {
  DFTRACE_IO_REAL(rewind);
  fold_forget_unread(f);
  real_rewind(f);
}

#define DFTRACE_IO_SHAPE_FSETPOS(cat, name, event, pos_type) \
  int name(FILE *f, const pos_type *pos) {                   \
    DFTRACE_IO_REAL(name);                                   \
    fold_forget_unread(f);                                   \
    return real_##name(f, pos);                              \
  }                                                          \
  DFTRACE_IO_REGISTER(name);

// ---- formatted output: the bytes are the result. The variadic forms call the C library's
// va_list form (what its own variadic forms do).
int vfprintf(FILE *f, const char *format, va_list ap) {
  DFTRACE_IO_REAL(vfprintf);
  DFTRACE_IO_FOLDED("vfprintf", f, real_vfprintf(f, format, ap), count_bytes(ret));
}

int __vfprintf_chk(FILE *f, int flag, const char *format, va_list ap) {
  DFTRACE_IO_REAL(__vfprintf_chk);
  DFTRACE_IO_FOLDED("vfprintf", f, real___vfprintf_chk(f, flag, format, ap), count_bytes(ret));
}

int vprintf(const char *format, va_list ap) {
  DFTRACE_IO_REAL(vprintf);
  DFTRACE_IO_FOLDED("vprintf", stdout, real_vprintf(format, ap), count_bytes(ret));
}

int __vprintf_chk(int flag, const char *format, va_list ap) {
  DFTRACE_IO_REAL(__vprintf_chk);
  DFTRACE_IO_FOLDED("vprintf", stdout, real___vprintf_chk(flag, format, ap), count_bytes(ret));
}

// The variadic forms: the event is named after them; the work is the va_list form's.
#define DFTRACE_IO_VARIADIC(event, f, real_call)                                    \
  DFTRACE_IO_NODE(k_stdio, event);                                                  \
  va_list ap;                                                                       \
  va_start(ap, format);                                                             \
  int ret;                                                                          \
  if (__builtin_expect(!maybe_recording(node_), 1))                                 \
    ret = real_call;                                                                \
  else                                                                              \
    ret = folded<false>(                                                            \
        node_, f, [&] { return real_call; }, [](int r) { return count_bytes(r); }); \
  va_end(ap);                                                                       \
  return ret

int fprintf(FILE *f, const char *format, ...) {
  DFTRACE_IO_REAL(vfprintf);
  DFTRACE_IO_VARIADIC("fprintf", f, real_vfprintf(f, format, ap));
}

int __fprintf_chk(FILE *f, int flag, const char *format, ...) {
  DFTRACE_IO_REAL(__vfprintf_chk);
  DFTRACE_IO_VARIADIC("fprintf", f, real___vfprintf_chk(f, flag, format, ap));
}

int printf(const char *format, ...) {
  DFTRACE_IO_REAL(vprintf);
  DFTRACE_IO_VARIADIC("printf", stdout, real_vprintf(format, ap));
}

int __printf_chk(int flag, const char *format, ...) {
  DFTRACE_IO_REAL(__vprintf_chk);
  DFTRACE_IO_VARIADIC("printf", stdout, real___vprintf_chk(flag, format, ap));
}

// The wrappers of the table's rows written here, and the registry's entries of those above.
#define DFTRACE_IO_SHAPE_TEXT_OWN(cat, name, ...) DFTRACE_IO_REGISTER(name);
#include "plugins/io/shapes.hpp"
#define DFTRACE_IO_CALL DFTRACE_IO_WRAPPER
#include "dftrace/io_calls.def"

}  // extern "C"
