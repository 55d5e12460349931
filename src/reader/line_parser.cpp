// line_parser.cpp: the straight paths for the lines dftrace and DFTracer write (byte by byte, and
// from bit masks on x86-64), and the choice of path; other lines go to the whole grammar
// (line_grammar.cpp). Parsing is most of the cost of stat and validate.
#include "reader/line_parser.hpp"

#include <cstdlib>
#include <cstring>
#include <utility>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define DFTRACE_LINE_SCAN_X86 1
#endif

#include "base/format.hpp"
#include "reader/line_lexer.hpp"

namespace dftrace::detail {

namespace {

using namespace line_lex;

// p at the quote of a top-level key that dftrace and DFTracer write, followed by its colon:
// its slot, p moved past the colon. nullptr for any other key (or a key written with blanks).
inline jvalue *common_key(const char *&p, const char *end, parsed_line &out) {
  auto is = [&p, end](const char(&k)[8], size_t n) {
    if (static_cast<size_t>(end - p) < n || std::memcmp(p, k, n) != 0) return false;
    p += n;
    return true;
  };
  if (end - p < 2) return nullptr;
  switch (p[1]) {
    case 'i': return is("\"id\":\0\0", 5) ? &out.id : nullptr;
    case 'n': return is("\"name\":", 7) ? &out.name : nullptr;
    case 'c': return is("\"cat\":\0", 6) ? &out.cat : nullptr;
    case 'p':
      if (is("\"pid\":\0", 6)) return &out.pid;
      return is("\"ph\":\0\0", 5) ? &out.ph : nullptr;
    case 't':
      if (is("\"tid\":\0", 6)) return &out.tid;
      return is("\"ts\":\0\0", 5) ? &out.ts : nullptr;
    case 'd': return is("\"dur\":\0", 6) ? &out.dur : nullptr;
    case 'a': return is("\"args\":", 7) ? &out.args : nullptr;
    case 's': return is("\"s\":\0\0\0", 4) ? &out.s : nullptr;
    default: return nullptr;
  }
}

// p at the quote of a key of printable ASCII without escapes, directly followed by its colon:
// the position after the colon. nullptr for any other key.
inline const char *plain_key(const char *p, const char *end) {
  if (*p != '"') return nullptr;
  ++p;
#if defined(__SSE2__)
  if (p + 16 <= end) {  // keys are short: one look at 16 bytes mostly finds the quote
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
    const int stop = _mm_movemask_epi8(_mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
        _mm_cmplt_epi8(v, _mm_set1_epi8(0x20))));
    p += stop ? __builtin_ctz(static_cast<unsigned>(stop)) : 16;
  }
#endif
  while (p < end && k_chars.plain[static_cast<unsigned char>(*p)]) ++p;
  if (end - p < 2 || p[0] != '"' || p[1] != ':') return nullptr;
  return p + 2;
}

// A string, number, true, false or null at p: its end, its type in *t. nullptr for anything
// else (objects, arrays) and for anything invalid.
[[gnu::always_inline]] inline const char *common_scalar(const char *p, const char *end, jtype *t) {
  const char *why = nullptr;
  switch (*p) {
    case '"': *t = jtype::string; return scan_string(p, end, &why);
    case 't':
      *t = jtype::boolean;
      return end - p >= 4 && std::memcmp(p, "true", 4) == 0 ? p + 4 : nullptr;
    case 'f':
      *t = jtype::boolean;
      return end - p >= 5 && std::memcmp(p, "false", 5) == 0 ? p + 5 : nullptr;
    case 'n':
      *t = jtype::null;
      return end - p >= 4 && std::memcmp(p, "null", 4) == 0 ? p + 4 : nullptr;
    default: *t = jtype::number; return scan_number(p, end, &why);
  }
}

inline void set(jvalue &v, jtype t, const char *vs, const char *ve) {
  v.type = t;
  v.text = t == jtype::string ? std::string_view(vs + 1, static_cast<size_t>(ve - 1 - (vs + 1)))
                              : std::string_view(vs, static_cast<size_t>(ve - vs));
}

// The lines that dftrace and DFTracer write, read in one straight pass: no blanks, only the
// known top-level keys (each once), scalar values, and an "args" object of scalars with keys
// that need no escapes. Anything else returns false, and parse_line reads the line again with
// the whole grammar: a line's result never depends on which path read it, and this path
// accepts nothing that the whole grammar rejects.
bool parse_common(const char *p, const char *end, parsed_line &out) {
  if (end - p < 2 || *p != '{' || p[1] != '"') return false;
  ++p;
  for (;;) {
    if (p >= end || *p != '"') return false;
    jvalue *slot = common_key(p, end, out);
    if (slot && slot->present()) return false;
    if (!slot && !(p = plain_key(p, end))) return false;  // another key (DFTracer 2.x's type)
    if (p >= end) return false;
    const char *vs = p;
    jtype t;
    if (*p == '{') {
      if (!slot || slot != &out.args) return false;
      ++p;
      if (p < end && *p == '}') {
        ++p;
      } else {
        for (;;) {
          if (p >= end || out.nargs == parsed_line::k_max_args) return false;
          const char *ks = p + 1;
          if (!(p = plain_key(p, end))) return false;
          parsed_line::arg &a = out.args_kv[out.nargs++];
          a.key = std::string_view(ks, static_cast<size_t>(p - 2 - ks));
          const char *as = p;
          if (p >= end || !(p = common_scalar(p, end, &t))) return false;
          set(a.value, t, as, p);
          if (p >= end) return false;
          if (*p == '}') break;
          if (*p++ != ',') return false;
        }
        ++p;
      }
      slot->type = jtype::object;
      slot->text = std::string_view(vs, static_cast<size_t>(p - vs));
    } else {
      if (!(p = common_scalar(p, end, &t))) return false;
      if (slot) set(*slot, t, vs, p);
    }
    if (p >= end) return false;
    if (*p == '}') return p + 1 == end;
    if (*p++ != ',') return false;
  }
}

// ---- The straight path with a structural scan (x86-64)
//
// The bytes of a line are classified a vector at a time into bit masks (one bit per byte):
// quotes, digits, and the bytes that need a closer look (backslash, control characters,
// non-ASCII). A line without the last kind, the usual case, has no escapes, so every quote
// delimits a string: the walk below takes strings from quote to quote and numbers to the end
// of their run of digits with a bit scan each, instead of testing bytes. It accepts the same
// lines as parse_common (the same layout: no blanks, known top-level keys once each, scalar
// values and an "args" object of scalars) and gives the same result; others go to the whole
// grammar, lines with special bytes or longer than the masks to parse_common first.

#if defined(DFTRACE_LINE_SCAN_X86)

// Lines up to this long take the structural scan (trace lines are a few hundred bytes).
constexpr size_t k_mask_words = 16;
constexpr size_t k_mask_bytes = 64 * k_mask_words;

// One line's masks; bit k of word w is byte 64 w + k. Bytes past the line are neither quotes
// nor digits.
struct line_masks {
  uint64_t quote[k_mask_words];
  uint64_t digit[k_mask_words];
};

// Builds the masks of p[0, n) (n <= k_mask_bytes); returns the mask of special bytes
// (nonzero: the line needs a closer look than this path gives).
using build_masks_fn = uint64_t (*)(const char *p, size_t n, line_masks &m);

// The last partial 64 bytes of a line, copied and padded with blanks (which are nothing the
// masks look for) so that no vector load reads past the line.
inline const char *padded_tail(const char *p, size_t left, char (&pad)[64]) {
  if (left >= 64) return p;
  std::memset(pad, ' ', sizeof pad);
  std::memcpy(pad, p, left);
  return pad;
}

uint64_t build_masks_sse2(const char *p, size_t n, line_masks &m) {
  const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20), zero = _mm_set1_epi8('0'), nine = _mm_set1_epi8(9);
  uint64_t special = 0;
  char pad[64];
  for (size_t i = 0, w = 0; i < n; i += 64, ++w) {
    const char *c = padded_tail(p + i, n - i, pad);
    uint64_t q = 0, d = 0;
    for (int k = 0; k < 4; ++k) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(c + 16 * k));
      const __m128i t = _mm_sub_epi8(v, zero);
      q |= static_cast<uint64_t>(static_cast<uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote))))
           << (16 * k);
      d |= static_cast<uint64_t>(
               static_cast<uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(t, nine), t))))
           << (16 * k);
      // a signed compare: below 0x20 or above 0x7f
      special |= static_cast<uint16_t>(
          _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, slash), _mm_cmplt_epi8(v, space))));
    }
    m.quote[w] = q;
    m.digit[w] = d;
  }
  return special;
}

__attribute__((target("avx2"))) uint64_t build_masks_avx2(const char *p, size_t n, line_masks &m) {
  const __m256i quote = _mm256_set1_epi8('"'), slash = _mm256_set1_epi8('\\');
  const __m256i space = _mm256_set1_epi8(0x20), zero = _mm256_set1_epi8('0');
  const __m256i nine = _mm256_set1_epi8(9);
  uint64_t special = 0;
  char pad[64];
  for (size_t i = 0, w = 0; i < n; i += 64, ++w) {
    const char *c = padded_tail(p + i, n - i, pad);
    uint64_t q = 0, d = 0;
    for (int k = 0; k < 2; ++k) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(c + 32 * k));
      const __m256i t = _mm256_sub_epi8(v, zero);
      q |= static_cast<uint64_t>(
               static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, quote))))
           << (32 * k);
      d |= static_cast<uint64_t>(static_cast<uint32_t>(
               _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_min_epu8(t, nine), t))))
           << (32 * k);
      special |= static_cast<uint32_t>(_mm256_movemask_epi8(
          _mm256_or_si256(_mm256_cmpeq_epi8(v, slash), _mm256_cmpgt_epi8(space, v))));
    }
    m.quote[w] = q;
    m.digit[w] = d;
  }
  return special;
}

// AVX-512BW compares into mask registers directly, and its masked load reads nothing past the
// line (no copy of the tail).
__attribute__((target("avx512f,avx512bw"))) uint64_t build_masks_avx512(const char *p, size_t n,
                                                                        line_masks &m) {
  const __m512i quote = _mm512_set1_epi8('"'), slash = _mm512_set1_epi8('\\');
  const __m512i space = _mm512_set1_epi8(0x20), zero = _mm512_set1_epi8('0');
  const __m512i nine = _mm512_set1_epi8(9);
  uint64_t special = 0;
  for (size_t i = 0, w = 0; i < n; i += 64, ++w) {
    const __mmask64 in = n - i >= 64 ? ~__mmask64{0} : (__mmask64{1} << (n - i)) - 1;
    const __m512i v = _mm512_maskz_loadu_epi8(in, p + i);
    m.quote[w] = _mm512_mask_cmpeq_epi8_mask(in, v, quote);
    m.digit[w] = _mm512_mask_cmple_epu8_mask(in, _mm512_sub_epi8(v, zero), nine);
    special |=
        _mm512_mask_cmpeq_epi8_mask(in, v, slash) | _mm512_mask_cmplt_epi8_mask(in, v, space);
  }
  return special;
}

// The quotes of a line in order.
struct quote_cursor {
  const uint64_t *q;
  size_t words, w = 0;
  uint64_t bits;
  quote_cursor(const uint64_t *quotes, size_t n_words) : q(quotes), words(n_words), bits(q[0]) {}
  // The position of the next quote; SIZE_MAX when there is none.
  size_t next() {
    while (!bits) {
      if (++w >= words) return SIZE_MAX;
      bits = q[w];
    }
    const size_t at = w * 64 + static_cast<size_t>(__builtin_ctzll(bits));
    bits &= bits - 1;
    return at;
  }
};

// The end of the run of digits at j (n at most).
[[gnu::always_inline]] inline size_t digits_end(const line_masks &m, size_t words, size_t n,
                                                size_t j) {
  size_t w = j >> 6;
  uint64_t stop = ~m.digit[w] & (~uint64_t{0} << (j & 63));
  while (!stop) {
    if (++w >= words) return n;
    stop = ~m.digit[w];
  }
  const size_t e = w * 64 + static_cast<size_t>(__builtin_ctzll(stop));
  return e < n ? e : n;
}

// A number, true, false or null at b[v]: its end and type, or 0 when it is none of them.
[[gnu::always_inline]] inline size_t masked_scalar(const char *b, size_t n, size_t v,
                                                   const line_masks &m, size_t words, jtype *t) {
  const char c = b[v];
  if (is_digit(c) || c == '-') {  // numbers first: most values are
    *t = jtype::number;
    const size_t j = v + (c == '-');
    if (j >= n) return 0;
    const size_t e = digits_end(m, words, n, j);
    if (e == j || (b[j] == '0' && e > j + 1)) return 0;
    if (e < n && (b[e] == '.' || (b[e] | 0x20) == 'e')) {  // a fraction or an exponent
      const char *why = nullptr;
      const char *r = scan_number(b + v, b + n, &why);
      return r ? static_cast<size_t>(r - b) : 0;
    }
    return e;
  }
  switch (c) {
    case 't':
      *t = jtype::boolean;
      return n - v >= 4 && std::memcmp(b + v, "true", 4) == 0 ? v + 4 : 0;
    case 'f':
      *t = jtype::boolean;
      return n - v >= 5 && std::memcmp(b + v, "false", 5) == 0 ? v + 5 : 0;
    case 'n': *t = jtype::null; return n - v >= 4 && std::memcmp(b + v, "null", 4) == 0 ? v + 4 : 0;
    default: return 0;
  }
}

// The walk over b[0, n) (b[0] is '{', b[1] a quote). False for any line outside the layout.
bool parse_masked(const char *b, size_t n, const line_masks &m, parsed_line &out) {
  const size_t words = (n + 63) / 64;
  quote_cursor qc(m.quote, words);
  size_t i = 1;  // at a key's opening quote
  for (;;) {
    if (qc.next() != i) return false;
    const size_t ke = qc.next();  // the key's closing quote
    if (ke >= n - 1 || b[ke + 1] != ':') return false;
    jvalue *slot = known_slot(out, b + i + 1, ke - i - 1);
    if (slot && slot->present()) return false;
    const size_t v = ke + 2;
    if (v >= n) return false;
    if (b[v] == '"') {
      qc.next();  // the quote at v: every quote before it has been taken
      const size_t ve = qc.next();
      if (ve >= n) return false;
      if (slot) {
        slot->type = jtype::string;
        slot->text = std::string_view(b + v + 1, ve - v - 1);
      }
      i = ve + 1;
    } else if (b[v] == '{') {
      if (slot != &out.args) return false;
      i = v + 1;
      if (i < n && b[i] == '}') {
        ++i;
      } else {
        for (;;) {
          if (out.nargs == parsed_line::k_max_args || qc.next() != i) return false;
          const size_t ae = qc.next();
          if (ae >= n - 1 || b[ae + 1] != ':') return false;
          parsed_line::arg &a = out.args_kv[out.nargs++];
          a.key = std::string_view(b + i + 1, ae - i - 1);
          const size_t av = ae + 2;
          if (av >= n) return false;
          if (b[av] == '"') {
            qc.next();
            const size_t ve = qc.next();
            if (ve >= n) return false;
            a.value.type = jtype::string;
            a.value.text = std::string_view(b + av + 1, ve - av - 1);
            i = ve + 1;
          } else {
            jtype t;
            if (!(i = masked_scalar(b, n, av, m, words, &t))) return false;
            a.value.type = t;
            a.value.text = std::string_view(b + av, i - av);
          }
          if (i >= n) return false;
          if (b[i] == '}') break;
          if (b[i] != ',') return false;
          ++i;
        }
        ++i;
      }
      slot->type = jtype::object;
      slot->text = std::string_view(b + v, i - v);
    } else {
      jtype t;
      if (!(i = masked_scalar(b, n, v, m, words, &t))) return false;
      if (slot) {
        slot->type = t;
        slot->text = std::string_view(b + v, i - v);
      }
    }
    if (i >= n) return false;
    if (b[i] == '}') return i + 1 == n;
    if (b[i] != ',') return false;
    ++i;
  }
}

build_masks_fn masks_for(line_scan s) {
  switch (s) {
    case line_scan::sse2: return build_masks_sse2;
    case line_scan::avx2: return build_masks_avx2;
    case line_scan::avx512: return build_masks_avx512;
    default: return nullptr;
  }
}

line_scan best_scan() {
  // DFTRACE_LINE_SCAN=portable, sse2 or avx2 asks for a narrower scan (comparisons, and CPUs
  // where wide vectors cost more than they give); a scan the CPU lacks is never taken.
  if (const char *e = std::getenv("DFTRACE_LINE_SCAN")) {
    const std::string_view want(e);
    for (const auto &[name, s] :
         {std::pair<std::string_view, line_scan>{"portable", line_scan::portable},
          {"sse2", line_scan::sse2},
          {"avx2", line_scan::avx2},
          {"avx512", line_scan::avx512}})
      if (want == name && line_scan_supported(s)) return s;
  }
  if (line_scan_supported(line_scan::avx512)) return line_scan::avx512;
  if (line_scan_supported(line_scan::avx2)) return line_scan::avx2;
  return line_scan::sse2;
}

#else
using build_masks_fn = void *;
build_masks_fn masks_for(line_scan) { return nullptr; }
line_scan best_scan() { return line_scan::portable; }
#endif

bool left_to_whole_grammar(parsed_line &out) {
  reset(out);
  out.error = "not in the layout of the straight path";
  return false;
}

// The structural scan this CPU runs, chosen once (before the dynamic initialisation of this
// file, a parse takes the portable path: the pointer is null).
const line_scan g_scan = best_scan();
const build_masks_fn g_masks = masks_for(g_scan);

// parse_line with the given mask builder (nullptr: the portable straight path); without
// whole_grammar, the lines that the straight path leaves are refused.
[[gnu::always_inline]] inline bool parse_with(std::string_view line, parsed_line &out,
                                              build_masks_fn masks, bool whole_grammar = true) {
  reset(out);
  const char *const b = line.data();
  const size_t n = line.size();
#if defined(DFTRACE_LINE_SCAN_X86)
  if (masks && n >= 2 && n <= k_mask_bytes && b[0] == '{' && b[1] == '"') {
    line_masks m;
    if (!masks(b, n, m)) {
      if (parse_masked(b, n, m, out)) {
        out.no_escapes = true;  // no special byte: no backslash
        return true;
      }
      return whole_grammar ? parse_line_general(line, out) : left_to_whole_grammar(out);
    }
  }
#else
  (void)masks;
#endif
  if (parse_common(b, b + n, out)) return true;
  return whole_grammar ? parse_line_general(line, out) : left_to_whole_grammar(out);
}

}  // namespace

bool parse_line(std::string_view line, parsed_line &out) { return parse_with(line, out, g_masks); }

bool line_scan_supported(line_scan s) {
  switch (s) {
    case line_scan::portable: return true;
#if defined(DFTRACE_LINE_SCAN_X86)
    case line_scan::sse2: return true;
    case line_scan::avx2: __builtin_cpu_init(); return __builtin_cpu_supports("avx2");
    case line_scan::avx512:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
#endif
    default: return false;
  }
}

line_scan line_scan_in_use() { return g_scan; }

bool parse_line_with(std::string_view line, parsed_line &out, line_scan s, bool whole_grammar) {
  return parse_with(line, out, line_scan_supported(s) ? masks_for(s) : nullptr, whole_grammar);
}

}  // namespace dftrace::detail
