// scan.cpp: one block of trace lines into its own columns (dftrace._reader), and a block's
// columns appended to the whole read's.
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "columns.hpp"
#include "reader/aggregated.hpp"
#include "reader/json_string.hpp"

namespace dftrace::pyreader {
namespace {

int64_t int_or(const jvalue &v, int64_t def) {
  // Short bare integers (id, level, p_idx) directly: up to 18 digits cannot overflow.
  const std::string_view t = v.text;
  if (v.type == jtype::number && !t.empty() && t.size() <= 18) {
    const bool neg = t[0] == '-';
    int64_t x = 0;
    size_t i = neg;
    for (; i < t.size(); ++i) {
      const unsigned d = static_cast<unsigned char>(t[i] - '0');
      if (d > 9) break;
      x = x * 10 + d;
    }
    if (i == t.size() && t.size() > size_t{neg}) return neg ? -x : x;
  }
  int64_t x = 0;
  return v.present() && dftrace::detail::value_i64(v, &x) ? x : def;
}

// int_or for the short integers of every line (level, p_idx, id), inline: a number of at most
// nine characters that the parser found valid is an integer when it is all digits. limit: the
// end of the readable text (the block's); where 8 bytes can be read from the digits, up to 8 of
// them are read at once (little-endian CPUs).
[[gnu::always_inline]] inline int64_t small_int_or(const jvalue &v, int64_t def,
                                                   const char *limit) {
  const std::string_view t = v.text;
  if (v.type == jtype::number && t.size() - 1 < 9) {
    const bool neg = t[0] == '-';
    const char *p = t.data() + neg;
    const size_t n = t.size() - neg;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n - 4 < 5 && limit - p >= 8) {  // 4 to 8 digits (ids); fewer: the loop below
      // the n digits moved to the top bytes, '0' below them (leading zeros of the same value)
      const uint64_t c = load64(p) << (8 * (8 - n)) | (0x3030303030303030ull >> (8 * n - 1) >> 1);
      constexpr uint64_t hi = 0xF0F0F0F0F0F0F0F0ull;
      if (((c & hi) | (((c + 0x0606060606060606ull) & hi) >> 4)) == 0x3333333333333333ull) {
        uint64_t d = c - 0x3030303030303030ull;  // the first digit is the lowest byte
        d = (d * 10 + (d >> 8)) & 0x00FF00FF00FF00FFull;
        d = (d * 100 + (d >> 16)) & 0x0000FFFF0000FFFFull;
        d = (d * 10000 + (d >> 32)) & 0xFFFFFFFFull;
        return neg ? -static_cast<int64_t>(d) : static_cast<int64_t>(d);
      }
      return int_or(v, def);  // a fraction or an exponent
    }
#else
    (void)limit;
#endif
    int64_t x = 0;
    for (size_t i = 0; i < n; ++i) {
      const unsigned d = static_cast<unsigned char>(p[i] - '0');
      if (d > 9) return int_or(v, def);  // a fraction or an exponent
      x = x * 10 + d;
    }
    if (n) return neg ? -x : x;
  }
  return int_or(v, def);
}

// An integer field whose text mostly repeats from line to line (pid, tid): parsed once per change.
struct cached_int {
  std::string_view text;
  int64_t value = -1;
  int64_t get(const jvalue &v) {
    if (!text.empty() && same_text(v.text, text)) return value;
    value = int_or(v, -1);
    text = v.text;
    return value;
  }
};

// Reads one requested argument's value into its column, at row.
void put_arg(arg_column &c, const jvalue *v, size_t row, std::string *scratch) {
  if (c.hash) {  // hashes stay text: matched as written, never rounded
    c.s[row] =
        v && (v->type == jtype::number || v->type == jtype::string) ? c.dict.code(v->text) : -1;
    return;
  }
  uint8_t kind = k_missing;
  int64_t iv = 0;
  if (v && v->type == jtype::number) {
    if (dftrace::detail::value_is_integer(*v) && dftrace::detail::value_i64(*v, &iv)) {
      kind = k_int;
    } else {
      kind = k_float;
      const double d = std::strtod(std::string(v->text).c_str(), nullptr);
      std::memcpy(&iv, &d, 8);
    }
  } else if (v &&
             (v->type == jtype::string || v->type == jtype::object || v->type == jtype::array)) {
    kind = k_text;  // strings as they are meant (escapes decoded); objects and arrays as JSON text
    iv = c.dict.code(dftrace::detail::string_text(*v, scratch));
  } else if (v && v->type == jtype::boolean) {
    kind = k_int;
    iv = v->text == "true";
  }
  c.kind[row] = kind;
  c.v[row] = iv;
}

// A trigger or trigger_end line's fields, kept (times in ns: the file's unit is known here).
void keep_window(const parsed_line &pl, std::string_view kind, time_unit unit, columns &r) {
  window_line w;
  w.kind = std::string(kind);
  w.pid = int_or(pl.pid, -1);
  auto text = [&pl](const char *key, std::string *out) {
    if (const jvalue *v = pl.arg_value(key))
      *out = v->type == jtype::string ? dftrace::detail::decoded(*v) : std::string(v->text);
  };
  auto time = [&pl, unit](const char *key, int64_t *out) {
    uint64_t ns = 0;
    const jvalue *v = pl.arg_value(key);
    if (v && dftrace::detail::value_ns(*v, unit, &ns)) *out = static_cast<int64_t>(ns);
  };
  text("name", &w.source);
  text("value", &w.reason);
  text("after", &w.after);
  time("time", &w.time_ns);
  time("from", &w.from_ns);
  time("to", &w.to_ns);
  r.windows.push_back(std::move(w));
}

// A metadata line's hash definition (HH, FH, SH), rank (PR) or flight-recorder window, kept.
void keep_metadata(const parsed_line &pl, columns &r, time_unit unit) {
  const jvalue *n = pl.arg_value("name");
  const jvalue *v = pl.arg_value("value");
  std::string buf;
  const std::string_view t = dftrace::detail::string_text(pl.name, &buf);
  if (n && v && (t == "HH" || t == "FH" || t == "SH") && n->type == jtype::string) {
    // the hash as written (references match it so), the string as it is meant
    r.hashes.emplace_back(std::string(v->text), dftrace::detail::decoded(*n));
    r.hash_types.emplace_back(t);
  } else if (n && v && t == "PR" && dftrace::detail::text_equals(*n, "rank")) {
    r.ranks.emplace_back(int_or(pl.pid, -1), int_or(*v, -1));
  } else if (t == "trigger" || t == "trigger_end") {
    keep_window(pl, t, unit, r);
  }
}

// Calls fn(pos) for each position of mark (at least 6 bytes) in text, in order. Two of its
// bytes that rarely stand at that distance in a trace (its second and its last) are looked
// for 16 positions at a time; only where both are is the whole mark compared.
template <typename Fn>
void find_each(std::string_view text, std::string_view mark, Fn &&fn) {
  const size_t last = mark.size() - 1;
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i a = _mm_set1_epi8(mark[1]), z = _mm_set1_epi8(mark[last]);
  for (; i + last + 16 <= text.size(); i += 16) {
    const char *p = text.data() + i;
    unsigned both = static_cast<unsigned>(_mm_movemask_epi8(_mm_and_si128(
        _mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)), a),
        _mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p + last - 1)), z))));
    for (; both; both &= both - 1) {
      const size_t at = i + static_cast<size_t>(__builtin_ctz(both));
      if (at > 0 && text.compare(at - 1, mark.size(), mark) == 0) fn(at - 1);
    }
  }
  if (i > 0) --i;  // a mark that starts one byte before the rest
#endif
  for (; i + mark.size() <= text.size(); ++i)
    if (text.compare(i, mark.size(), mark) == 0) fn(i);
}

// dftrace.dask's first pass: only the metadata lines, found by searching the block for their
// phase ("ph":"M", or DFTracer 2.x's "ph":4) instead of going line by line.
void scan_metadata(std::string_view text, time_unit unit, columns &r) {
  std::vector<size_t> starts;  // of the lines that hold either
  for (const std::string_view mark :
       {std::string_view("\"ph\":\"M\""), std::string_view("\"ph\":4")})
    find_each(text, mark, [&](size_t pos) {
      const size_t nl = text.rfind('\n', pos);
      starts.push_back(nl == std::string_view::npos ? 0 : nl + 1);
    });
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  parsed_line pl;
  for (const size_t start : starts) {
    const size_t nl = text.find('\n', start);
    const std::string_view line =
        text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    if (!dftrace::detail::parse_line(line, pl)) {
      ++r.invalid;
    } else if (dftrace::detail::phase(pl) == 'M') {
      keep_metadata(pl, r, unit);
    }
  }
}

// keys_only: the line's argument keys (decoded) not seen before, in order; an aggregated
// record's calls count as its dft_cnt.
[[gnu::noinline]] void collect_keys(const parsed_line &pl, bool folded,
                                    std::unordered_set<std::string> &seen, columns &r) {
  std::string buf;
  for (int a = 0; a < pl.nargs; ++a) {
    const std::string_view key = dftrace::detail::string_text(pl.args_kv[a].key, &buf);
    if (seen.insert(std::string(key)).second) r.arg_keys.emplace_back(key);
  }
  if (folded && seen.insert("dft_cnt").second) r.arg_keys.emplace_back("dft_cnt");
}

// An aggregated record without dft_cnt (DFTracer 2.0.2's counter form): a requested dft_cnt
// is the calls it folds, derived.
[[gnu::noinline]] void derive_calls(const what &w, uint64_t calls, const jvalue **found,
                                    std::string *text, jvalue *value) {
  for (size_t q = 0; q < w.args.size(); ++q)
    if (!found[q] && w.args[q] == "dft_cnt") {
      *text = std::to_string(calls);
      *value = jvalue{jtype::number, *text};
      found[q] = value;
    }
}

// The scan of one block's lines into its columns: the line's filters (line()), then its row
// (row()). The requested arguments of a line are found in one pass and put back to null as
// they are written.
struct block_scan {
  const what &w;
  const time_unit unit;
  columns &r;
  const dftrace::detail::dt_field *dt;  // the member's DT field when it is checked, else null
  const char *limit;                    // the block's end (numbers are read inline up to it)
  const size_t nargs;
  std::vector<const jvalue *> found_of;
  const jvalue **const found;  // found_of's items: the requested arguments of this line
  const key_sig level_sig = sig_of("level"), p_idx_sig = sig_of("p_idx");
  cached_int pid, tid;
  parsed_line pl;
  std::string name_buf, cat_buf, ph_buf, key_buf;
  std::string calls_text;  // an aggregated record's calls, as a number's text
  jvalue calls_value;
  std::unordered_set<std::string> seen_keys;

  block_scan(const what &w_, time_unit unit_, columns &r_, const dftrace::detail::dt_field *dt_,
             const char *limit_)
      : w(w_),
        unit(unit_),
        r(r_),
        dt(dt_),
        limit(limit_),
        nargs(w_.args.size()),
        found_of(nargs),
        found(found_of.data()) {}

  bool line(std::string_view line) {
    ++r.lines;
    size_t k = 0;
    while (k < line.size() && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r')) ++k;
    if (k == line.size() || line[k] == '[' || line[k] == ']') return true;
    if (!dftrace::detail::parse_line(line, pl)) {
      ++r.invalid;
      return true;
    }
    char ph = dftrace::detail::phase(pl);
    if (ph == 'M') {
      keep_metadata(pl, r, unit);
      return true;
    }
    uint64_t ts = 0, dur = 0;
    if (!pl.ts.present() || !dftrace::detail::value_ns(pl.ts, unit, &ts)) {
      ++r.skipped;  // not an event with a time
      return true;
    }
    if (dt && (ts / 1000 < dt->ts_min || ts / 1000 > dt->ts_max)) ++r.outside_dt;
    if ((w.has_start && ts < w.start) || (w.has_end && ts >= w.end)) return true;
    // names and categories as they are meant (escapes decoded; without a backslash, no copy)
    if (!w.cats.empty() && !w.cats.count(dftrace::detail::string_text(pl, pl.cat, &cat_buf)))
      return true;
    if (!w.names.empty() && !w.names.count(dftrace::detail::string_text(pl, pl.name, &name_buf)))
      return true;
    if (pl.dur.present()) dftrace::detail::value_ns(pl.dur, unit, &dur);
    // An aggregated record ("A", or DFTracer 2.0.2's counter form) is a row of ph "A" whose dur
    // is its calls' total time; the calls are its dft_cnt argument.
    uint64_t calls = 0;
    bool folded = false;
    if (ph == 'A' || (ph == 'C' && dftrace::detail::is_counter_aggregate(pl))) {
      folded = dftrace::detail::aggregated_calls(pl, unit, &calls, &dur);
      ph = 'A';
    }
    if (w.keys_only) {
      collect_keys(pl, folded, seen_keys, r);
      return true;
    }
    row(ph, ts, dur, folded, calls);
    return true;
  }

  void row(char ph, uint64_t ts, uint64_t dur, bool folded, uint64_t calls) {
    if (r.rows == r.cap) r.room(r.cap + 1);
    const size_t row = r.rows++;
    r.name[row] = r.names.code(dftrace::detail::string_text(pl, pl.name, &name_buf));
    r.cat[row] = r.cats.code(dftrace::detail::string_text(pl, pl.cat, &cat_buf));
    // a phase of one character holds no escape: only longer ones ("\u0058") are decoded
    const std::string_view ph_text =
        pl.ph.type != jtype::string || ph == 'A' ? std::string_view(&ph, 1)
        : pl.ph.text.size() == 1                 ? pl.ph.text
                                                 : dftrace::detail::string_text(pl.ph, &ph_buf);
    if (ph_text.size() == 1) {  // a letter (mostly "X"): its code looked up once per block
      int32_t &c = r.letter_code[static_cast<unsigned char>(ph_text[0])];
      r.ph[row] = c >= 0 ? c : (c = r.phs.code(ph_text));
    } else {
      r.ph[row] = r.phs.code(ph_text);
    }
    // One pass over the arguments finds level, p_idx and the requested keys (by signature).
    const jvalue *lv = nullptr, *pi = nullptr;
    for (int a = 0; a < pl.nargs; ++a) {
      std::string_view key = pl.args_kv[a].key;
      if (!pl.no_escapes) key = dftrace::detail::string_text(key, &key_buf);  // as meant
      const key_sig ks = sig_of(key);
      if (ks == level_sig) {
        lv = &pl.args_kv[a].value;
      } else if (ks == p_idx_sig) {
        pi = &pl.args_kv[a].value;
      } else {
        for (size_t q = 0; q < nargs; ++q)
          if (!found[q] && ks == w.arg_sigs[q] && (ks.n <= 8 || key == w.args[q]))
            found[q] = &pl.args_kv[a].value;
      }
    }
    r.ints[0][row] = pid.get(pl.pid);  // the text stays valid: the block outlives the scan
    r.ints[1][row] = tid.get(pl.tid);
    constexpr uint64_t k_max = INT64_MAX;  // held there: a wrap would read as a negative time
    if (ts > k_max || dur > k_max) ++r.past_int64;
    r.ints[2][row] = static_cast<int64_t>(std::min(ts, k_max));
    r.ints[3][row] = static_cast<int64_t>(std::min(dur, k_max));
    r.ints[4][row] = lv ? small_int_or(*lv, -1, limit) : -1;
    r.ints[5][row] = pi ? small_int_or(*pi, -1, limit) : -1;
    r.ints[6][row] = small_int_or(pl.id, -1, limit);
    if (folded) derive_calls(w, calls, found, &calls_text, &calls_value);
    for (size_t q = 0; q < nargs; ++q) {
      put_arg(r.args[q], found[q], row, &key_buf);
      found[q] = nullptr;
    }
  }
};

}  // namespace

void scan(dftrace::detail::text_block &b, const what &w, time_unit unit, column_pool &pool) {
  std::unique_ptr<columns> r = pool.take();
  r->reset(w);
  if (w.metadata_only) {
    scan_metadata(b.whole_lines(), unit, *r);
    b.result = std::move(r);
    return;
  }
  r->room(b.text.size() / 128 + 16);  // lines of a typical event's length
  const std::string_view text = b.whole_lines();
  // DT times are epoch microseconds
  const dftrace::detail::dt_field *dt =
      w.check_dt && b.part && b.part->kind == dftrace::detail::planned_part::member ? &b.part->dt
                                                                                    : nullptr;
  block_scan s(w, unit, *r, dt, text.data() + text.size());
  dftrace::detail::for_each_line(text, [&s](std::string_view line) { return s.line(line); });
  b.result = std::move(r);
}

// Codes of a block's dictionary as codes of the read's (-1 stays -1), written to out.
void recode(const std::vector<int32_t> &codes, size_t n, const dictionary &local,
            dictionary &global, int32_t *out) {
  std::vector<int32_t> map(local.values.size());
  for (size_t k = 0; k < local.values.size(); ++k) map[k] = global.code(local.values[k]);
  const int32_t *c = codes.data();
  for (size_t r = 0; r < n; ++r) out[r] = c[r] < 0 ? -1 : map[static_cast<size_t>(c[r])];
}

void result::add(columns &b) {
  const size_t n = b.rows;
  recode(b.name, n, b.names, names, name.extend(n));
  recode(b.cat, n, b.cats, cats, cat.extend(n));
  recode(b.ph, n, b.phs, phs, ph.extend(n));
  ints.reserve(rows + n);
  for (int k = 0; k < k_ints; ++k)
    if (n) std::memcpy(ints.col(k) + rows, b.ints[k].data(), n * 8);
  ints.n = rows + n;
  for (size_t a = 0; a < args.size(); ++a) {
    arg_column &c = b.args[a];
    result_arg &out = args[a];
    if (c.hash) {
      recode(c.s, n, c.dict, out.dict, out.s.extend(n));
      continue;
    }
    if (n) std::memcpy(out.kind.extend(n), c.kind.data(), n);
    int64_t *v = out.v.extend(n);
    std::vector<int32_t> map(c.dict.values.size());
    for (size_t k = 0; k < map.size(); ++k) map[k] = out.dict.code(c.dict.values[k]);
    for (size_t r = 0; r < n; ++r)
      v[r] = c.kind[r] == k_text ? map[static_cast<size_t>(c.v[r])] : c.v[r];
  }
  for (size_t h = 0; h < b.hashes.size(); ++h) {
    hashes.push_back(std::move(b.hashes[h]));
    hash_types.push_back(std::move(b.hash_types[h]));
  }
  ranks.insert(ranks.end(), b.ranks.begin(), b.ranks.end());
  for (auto &x : b.windows) windows.push_back(std::move(x));
  for (auto &k : b.arg_keys)
    if (seen_keys.insert(k).second) arg_keys.push_back(std::move(k));
  invalid += b.invalid;
  skipped += b.skipped;
  outside_dt += b.outside_dt;
  past_int64 += b.past_int64;
  lines += b.lines;
  rows += n;
}

}  // namespace dftrace::pyreader
