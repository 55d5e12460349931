// record_format.cpp: one binary record -> one JSON line, on the writer thread.
#include <cstring>

#include "dftrace/dftrace.h"

#include "base/clock.hpp"
#include "base/format.hpp"
#include "writer/record.hpp"

namespace dftrace::detail {

namespace {

template <size_t N>
inline char *put(char *p, const char (&lit)[N]) {
  std::memcpy(p, lit, N - 1);
  return p + N - 1;
}
inline char *put(char *p, std::string_view s) {
  copy_small(p, s.data(), s.size());
  return p + s.size();
}

// ,"pid":P,"tid":T,"ts":TS (all but TS copied from the cache while the thread stays the same)
inline char *put_pid_tid_ts(const line_format &f, char *p, int64_t tid, uint64_t mono) {
  format_cache *c = f.cache;
  if (!c || c->prefix_len == 0 || c->tid != tid || c->pid != f.pid) {
    char *const start = c ? c->prefix : p;
    char *q = put(start, ",\"pid\":");
    q = write_i64(q, f.pid);
    q = put(q, ",\"tid\":");
    q = write_i64(q, tid);
    q = put(q, ",\"ts\":");
    if (!c) return format_time(f, q, mono);
    c->pid = f.pid;
    c->tid = tid;
    c->prefix_len = static_cast<uint32_t>(q - start);
  }
  p = put(p, std::string_view(c->prefix, c->prefix_len));
  return format_time(f, p, mono);
}

// An unsigned number; the large ones (hashes) through the cache, where a file's hash is found
// again on every event on that file.
inline char *put_u64(const line_format &f, char *p, uint64_t v) {
  if (v < 10000000000ull || !f.cache) return write_u64(p, v);
  format_cache::number &n = f.cache->numbers[(v * 0x9E3779B97F4A7C15ull) >> 58];
  if (n.len == 0 || n.value != v) {
    n.value = v;
    n.len = static_cast<uint32_t>(write_u64(n.text, v) - n.text);
  }
  return put(p, std::string_view(n.text, n.len));
}

// The escaped key (reserved keys renamed user_<key>) into buf (room: 6 * key + 8).
static_assert(k_reserved_arg_prefix.size() <= 8, "the room callers give escaped_key");
size_t escaped_key(std::string_view key, char *buf) {
  char *p = buf;
  if (is_reserved_arg_key(key))
    p = static_cast<char *>(
            std::memcpy(p, k_reserved_arg_prefix.data(), k_reserved_arg_prefix.size())) +
        k_reserved_arg_prefix.size();
  return static_cast<size_t>(escape_json(p, key.data(), key.size()) - buf);
}

// True if a later entry of `use_args` has the same key as `key` (a view into use_args: the
// later entry wins).
bool superseded(std::string_view use_args, std::string_view key) {
  bool after = false, found = false;
  for_each_raw(use_args, [&](uint8_t, std::string_view k, std::string_view) {
    if (found) return;
    if (k.data() == key.data()) {
      after = true;
      return;
    }
    if (after && k == key) found = true;
  });
  return found;
}

// True if the node fragment has an entry whose key is `escaped`.
bool node_has_key(std::string_view node_args, std::string_view escaped) {
  bool found = false;
  for_each_entry(node_args, [&](std::string_view k, size_t, size_t) { found |= k == escaped; });
  return found;
}

// True if some per-use key is also a node key.
bool use_args_override_node(std::string_view node_args, std::string_view use_args) {
  char kbuf[6 * k_max_arg_key + 8];
  bool any = false;
  for_each_raw(use_args, [&](uint8_t, std::string_view key, std::string_view) {
    if (any) return;
    const size_t n = escaped_key(key, kbuf + 1);
    kbuf[0] = '"';
    kbuf[n + 1] = '"';
    kbuf[n + 2] = ':';
    if (node_args.find(std::string_view(kbuf, n + 3)) != std::string_view::npos)
      any = node_has_key(node_args, std::string_view(kbuf + 1, n));
  });
  return any;
}

// True if the escaped node key `k` is replaced by a per-use argument.
bool replaced_by_use_arg(std::string_view k, std::string_view use_args) {
  char kbuf[6 * k_max_arg_key + 8];
  bool hit = false;
  for_each_raw(use_args, [&](uint8_t, std::string_view key, std::string_view) {
    if (!hit) hit = std::string_view(kbuf, escaped_key(key, kbuf)) == k;
  });
  return hit;
}

char *put_value(char *p, uint8_t type, std::string_view value) {
  int64_t i;
  uint64_t u;
  double d;
  switch (type) {
    case 1: std::memcpy(&i, value.data(), 8); return write_i64(p, i);     // INT
    case 2: std::memcpy(&d, value.data(), 8); return write_double(p, d);  // DOUBLE
    case 3:                                                               // STRING
      *p++ = '"';
      p = escape_json(p, value.data(), value.size());
      *p++ = '"';
      return p;
    case 4: return put(p, value[0] ? std::string_view("true") : std::string_view("false"));  // BOOL
    case 5: std::memcpy(&u, value.data(), 8); return write_u64(p, u);                        // UINT
    default: return put(p, "null");
  }
}

// Whether two per-use entries share a key (rare: a region_arg replacing an earlier one). The
// keys are gathered once and compared by length first; more than k_keys entries: assume so.
bool has_repeated_key(std::string_view use_args) {
  constexpr size_t k_keys = 16;
  std::string_view keys[k_keys];
  size_t n = 0;
  bool repeated = false;
  for_each_raw(use_args, [&](uint8_t, std::string_view key, std::string_view) {
    if (repeated) return;
    if (n == k_keys) {
      repeated = true;
      return;
    }
    for (size_t i = 0; i < n; ++i)
      if (keys[i].size() == key.size() && keys[i] == key) {
        repeated = true;
        return;
      }
    keys[n++] = key;
  });
  return repeated;
}

// Writes the per-use entries as JSON (a later entry with the same key wins).
char *put_raw_args(char *p, bool comma, std::string_view use_args) {
  const bool repeated = has_repeated_key(use_args);
  for_each_raw(use_args, [&](uint8_t type, std::string_view key, std::string_view value) {
    if (repeated && superseded(use_args, key)) return;
    if (comma) *p++ = ',';
    comma = true;
    *p++ = '"';
    p += escaped_key(key, p);
    *p++ = '"';
    *p++ = ':';
    p = put_value(p, type, value);
  });
  return p;
}

size_t count_raw(std::string_view use_args) {
  size_t n = 0;
  for_each_raw(use_args, [&](uint8_t, std::string_view, std::string_view) { ++n; });
  return n;
}

uint64_t key_hash(const char *p, size_t n) {  // FNV-1a
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 1099511628211ull;
  return h;
}

// Table capacity (a power of two) for n entries, and the escaped keys' room.
size_t index_slots(size_t n) {
  size_t c = 32;
  while (c < 2 * n) c <<= 1;
  return c;
}
size_t index_key_room(std::string_view use_args, size_t n) {
  return 6 * use_args.size() + 8 * n + 6 * k_max_arg_key +
         16;  // every escaped key, and one more as scratch
}

char *put_value(char *p, uint8_t type, std::string_view value);

// The linear path for many per-use entries (arg_index): one pass builds the table of escaped
// keys (the later entry wins), node entries whose key is in it are left out, then each
// per-use entry is written if it is the winner of its key.
char *put_args_indexed(char *p, bool comma, std::string_view node_args, std::string_view use_args,
                       size_t n, arg_index &ix) {
  const size_t mask = index_slots(n) - 1;
  if (++ix.gen == 0) {  // wrapped: forget every slot
    for (auto &sl : ix.slots) sl.gen = 0;
    ix.gen = 1;
  }
  char *const keys = ix.keys.get();
  size_t used = 0;
  auto find = [&](const char *k, size_t len, uint64_t h) -> arg_index::slot & {
    size_t i = h & mask;
    for (;;) {
      arg_index::slot &sl = ix.slots[i];
      if (sl.gen != ix.gen) return sl;
      if (sl.hash == h && sl.key_len == len && std::memcmp(keys + sl.key_at, k, len) == 0)
        return sl;
      i = (i + 1) & mask;
    }
  };
  for_each_raw(use_args, [&](uint8_t, std::string_view key, std::string_view) {
    const uint32_t off = static_cast<uint32_t>(key.data() - sizeof(raw_arg) - use_args.data());
    char *k = keys + used;
    const size_t len = escaped_key(key, k);
    const uint64_t h = key_hash(k, len);
    arg_index::slot &sl = find(k, len, h);
    if (sl.gen == ix.gen) {
      sl.own_off = off;  // a later entry of the same key
      return;
    }
    sl = {h, static_cast<uint32_t>(used), static_cast<uint32_t>(len), off, ix.gen};
    used += len;
  });
  for_each_entry(node_args, [&](std::string_view k, size_t b, size_t e) {
    if (find(k.data(), k.size(), key_hash(k.data(), k.size())).gen == ix.gen) return;  // replaced
    if (comma) *p++ = ',';
    p = put(p, node_args.substr(b, e - b));
    comma = true;
  });
  for_each_raw(use_args, [&](uint8_t type, std::string_view key, std::string_view value) {
    const uint32_t off = static_cast<uint32_t>(key.data() - sizeof(raw_arg) - use_args.data());
    char *k = keys + used;  // scratch past the table's keys
    const size_t len = escaped_key(key, k);
    const arg_index::slot &sl = find(k, len, key_hash(k, len));
    if (sl.own_off != off) return;  // superseded
    if (comma) *p++ = ',';
    comma = true;
    *p++ = '"';
    p = put(p, std::string_view(keys + sl.key_at, sl.key_len));
    *p++ = '"';
    *p++ = ':';
    p = put_value(p, type, value);
  });
  return p;
}

// A prepared layout's arguments after the node's: each key's JSON is copied as prepare_args
// escaped it, and a node argument of the same key is left out (a node key that is also a
// layout key is rare: the whole fragment is copied when no key of the layout is in it).
char *put_prepared_args(const line_format &f, char *p, bool comma, std::string_view node_args,
                        std::string_view use_args) {
  const prepared_args &prep = prepared_of(use_args);
  const char *values = prepared_values(use_args);
  if (!node_args.empty()) {
    bool clash = false;
    for (const auto &k : prep.keys)
      if (k.written && node_args.find(std::string_view(prep.json.data() + k.at, k.len)) !=
                           std::string_view::npos) {
        clash = true;
        break;
      }
    if (!clash) {
      if (comma) *p++ = ',';
      p = put(p, node_args);
      comma = true;
    } else {
      for_each_entry(node_args, [&](std::string_view key, size_t b, size_t e) {
        for (const auto &k : prep.keys)  // `"key":` against the entry's key
          if (k.written && k.len == key.size() + 3 &&
              std::memcmp(prep.json.data() + k.at + 1, key.data(), key.size()) == 0)
            return;
        if (comma) *p++ = ',';
        p = put(p, node_args.substr(b, e - b));
        comma = true;
      });
    }
  }
  for (size_t i = 0; i < prep.keys.size(); ++i) {
    const auto &k = prep.keys[i];
    if (!k.written) continue;
    if (comma) *p++ = ',';
    comma = true;
    p = put(p, std::string_view(prep.json.data() + k.at, k.len));
    uint64_t v;
    std::memcpy(&v, values + 8 * i, 8);
    if (k.type == DFTRACE_ARG_INT)
      p = write_i64(p, static_cast<int64_t>(v));
    else if (k.type == DFTRACE_ARG_UINT)
      p = put_u64(f, p, v);
    else
      p = put_value(p, k.type, std::string_view(values + 8 * i, 8));
  }
  return p;
}

// The node's arguments, then the per-use ones, which replace node arguments of the same key.
char *put_args(const line_format &f, char *p, bool comma, std::string_view node_args,
               std::string_view use_args, args_kind kind) {
  arg_index *const ix = f.index;
  if (kind == args_kind::prepared) return put_prepared_args(f, p, comma, node_args, use_args);
  if (kind == args_kind::json) {  // counters: use_args is already JSON, and nodes add nothing
    if (!use_args.empty()) {
      if (comma) *p++ = ',';
      p = put(p, use_args);
    }
    return p;
  }
  if (ix && use_args.size() > arg_index::k_small * sizeof(raw_arg)) {
    const size_t n = count_raw(use_args);
    if (n > arg_index::k_small && ix->fit(use_args, false))
      return put_args_indexed(p, comma, node_args, use_args, n, *ix);
  }
  if (!node_args.empty()) {
    if (use_args.empty() || !use_args_override_node(node_args, use_args)) {
      if (comma) *p++ = ',';
      p = put(p, node_args);
      comma = true;
    } else {
      for_each_entry(node_args, [&](std::string_view key, size_t b, size_t e) {
        if (replaced_by_use_arg(key, use_args)) return;
        if (comma) *p++ = ',';
        p = put(p, node_args.substr(b, e - b));
        comma = true;
      });
    }
  }
  return put_raw_args(p, comma, use_args);
}

// The end of an event's line: its place in the tree (with metadata) and the closing braces.
inline char *put_line_end(char *p, bool metadata, const rec &r) {
  if (metadata) {
    p = put(p, ",\"level\":");
    p = write_u64(p, r.level);
    p = put(p, ",\"p_idx\":");
    p = write_i64(p, r.parent_id);
  }
  return put(p, "}}\n");
}

using line_template = format_cache::line_template;

// Builds t for the record r (a prepared leaf with no node arguments), keyed by what it bakes
// in; t.templated is false when the line is not made of the pieces a template holds (a key that
// is not an integer, too many keys, too long a text).
void build_template(const line_format &f, const rec &r, const prepared_args &prep,
                    line_template &t) {
  t.name_cat = r.name_cat;
  t.layout = &prep;
  t.hhash = f.hhash_field.data();
  t.hhash_len = f.hhash_field.size();
  t.pid = f.pid;
  t.tid = r.tid;
  t.metadata = f.metadata;
  t.templated = false;
  size_t n = 0;
  bool fits = true;
  auto add = [&](std::string_view s) {
    if (n + s.size() > format_cache::k_template_text) {
      fits = false;
      return;
    }
    std::memcpy(t.text + n, s.data(), s.size());
    n += s.size();
  };
  char num[24];
  add(*r.name_cat);
  add(",\"pid\":");
  add(std::string_view(num, static_cast<size_t>(write_i64(num, f.pid) - num)));
  add(",\"tid\":");
  add(std::string_view(num, static_cast<size_t>(write_i64(num, r.tid) - num)));
  add(",\"ts\":");
  const size_t head = n;
  add(",\"ph\":\"X\",\"args\":{");
  add(f.hhash_field);
  bool comma = !f.hhash_field.empty();
  size_t keys = 0, open = 0;
  for (size_t i = 0; i < prep.keys.size() && fits; ++i) {
    const auto &k = prep.keys[i];
    if (!k.written) continue;
    if ((k.type != DFTRACE_ARG_INT && k.type != DFTRACE_ARG_UINT) ||
        keys == format_cache::k_template_keys || i > 255 || k.len + 1 > 255)
      return;
    const size_t at = n;
    if (comma) add(",");
    add(std::string_view(prep.json.data() + k.at, k.len));
    comma = true;
    if (keys == 0) {
      open = n - head;
    } else {
      t.key_at[keys] = static_cast<uint16_t>(at);
      t.key_len[keys] = static_cast<uint8_t>(n - at);
    }
    t.slot[keys] = static_cast<uint8_t>(i);
    t.is_int[keys] = k.type == DFTRACE_ARG_INT;
    ++keys;
  }
  if (!fits) return;
  if (keys == 0) open = n - head;
  t.head_len = static_cast<uint16_t>(head);
  t.open_len = static_cast<uint16_t>(open);
  t.keys = static_cast<uint8_t>(keys);
  t.templated = true;
}

// The template of a prepared leaf record (from its cache set; built on a miss), or null when
// its line is formatted the general way.
const line_template *template_of(const line_format &f, const rec &r) {
  const prepared_args &prep = prepared_of(std::string_view(r.use_args(), r.use_args_len));
  const uint64_t h = reinterpret_cast<uintptr_t>(r.name_cat) * 0x9E3779B97F4A7C15ull ^
                     reinterpret_cast<uintptr_t>(&prep) * 0xC2B2AE3D27D4EB4Full ^
                     static_cast<uint64_t>(r.tid) * 0x165667B19E3779F9ull;
  format_cache &c = *f.cache;
  const size_t set = h >> 58;  // 64 sets
  static_assert(format_cache::k_template_sets == 64, "the set index takes 6 bits");
  for (size_t way = 0; way < 2; ++way) {
    const line_template &t = c.templates[set][way];
    if (t.name_cat == r.name_cat && t.layout == &prep && t.tid == r.tid && t.pid == f.pid &&
        t.hhash == f.hhash_field.data() && t.hhash_len == f.hhash_field.size() &&
        t.metadata == f.metadata) {
      c.recent[set] = static_cast<uint8_t>(way);
      return t.templated ? &t : nullptr;
    }
  }
  const size_t way = c.recent[set] ^ 1u;  // the way used less recently
  line_template &t = c.templates[set][way];
  build_template(f, r, prep, t);
  c.recent[set] = static_cast<uint8_t>(way);
  return t.templated ? &t : nullptr;
}

// A prepared leaf's line from its template: the numbers between the template's pieces.
char *format_templated(const line_format &f, const line_template &t, const rec &r, uint64_t start,
                       uint64_t end, uint64_t ts_us, char *p) {
  const char *values = prepared_values(std::string_view(r.use_args(), r.use_args_len));
  p = put(p, "{\"id\":");
  p = write_u64(p, r.id);
  p = put(p, std::string_view(t.text, t.head_len));
  p = format_time(f, p, start);
  p = put(p, ",\"dur\":");
  p = write_u64(p, f.ns_precision ? end - start : (end + f.epoch_offset_ns) / 1000 - ts_us);
  p = put(p, std::string_view(t.text + t.head_len, t.open_len));
  for (size_t k = 0; k < t.keys; ++k) {
    if (k) {
      copy_small(p, t.text + t.key_at[k], t.key_len[k]);
      p += t.key_len[k];
    }
    uint64_t v;
    std::memcpy(&v, values + 8 * size_t{t.slot[k]}, 8);
    p = t.is_int[k] ? write_i64(p, static_cast<int64_t>(v)) : put_u64(f, p, v);
  }
  return put_line_end(p, t.metadata, r);
}

}  // namespace

std::unique_ptr<prepared_args> prepare_args(std::string raw) {
  auto p = std::make_unique<prepared_args>();
  p->raw = std::move(raw);
  char kbuf[6 * k_max_arg_key + 8];
  for_each_raw(p->raw, [&](uint8_t type, std::string_view key, std::string_view value) {
    p->slots.push_back(static_cast<uint32_t>(value.data() - p->raw.data()));
    kbuf[0] = '"';
    const size_t n = escaped_key(key, kbuf + 1);
    kbuf[n + 1] = '"';
    kbuf[n + 2] = ':';
    const std::string_view json(kbuf, n + 3);
    for (auto &k : p->keys)  // the later entry of a key wins
      if (k.written && std::string_view(p->json.data() + k.at, k.len) == json) k.written = false;
    p->keys.push_back(
        {static_cast<uint32_t>(p->json.size()), static_cast<uint32_t>(json.size()), type, true});
    p->json.append(json);
    p->json_bound += json.size() + 1 + 32;  // ',', the key, a number (write_double: 32)
  });
  return p;
}

bool arg_index::fit(std::string_view use_args, bool may_grow) {
  const size_t n = count_raw(use_args);
  const size_t want = index_slots(n), room = index_key_room(use_args, n);
  if (slots.size() >= want && keys_cap >= room) return true;
  if (!may_grow) return false;
  if (slots.size() < want) {
    slots.assign(want, slot{});
    gen = 0;
  }
  if (keys_cap < room) {
    keys.reset(new char[room]);
    keys_cap = room;
  }
  return true;
}

char *format_record(const line_format &f, const rec &r, char *p, uint64_t *ts_us) {
  const std::string_view node_args(r.node_args(), r.node_args_len);
  const std::string_view use_args(r.use_args(), r.use_args_len);
  uint64_t start = r.start, end = r.end;
  if (r.ticked && f.ticks) {
    start = f.ticks->to_ns(start);
    end = r.end == r.start ? start : f.ticks->to_ns(end);
  }
  *ts_us = (start + f.epoch_offset_ns) / 1000;
  if (r.type ==
      rec_type::
          mark) {  // {"id":..,"name":"CM",..,"ph":"M","args":{"name":"x.start","value":"<ts>"}}
    p = put(p, "{\"id\":");
    p = write_u64(p, r.id);
    p = put(p, ",\"name\":\"CM\",\"cat\":\"dftracer\",\"pid\":");
    p = write_i64(p, f.pid);
    p = put(p, ",\"tid\":");
    p = write_i64(p, r.tid);
    p = put(p, ",\"ph\":\"M\",\"args\":{");
    if (!f.hhash_field.empty()) {
      p = put(p, f.hhash_field);
      *p++ = ',';
    }
    p = put(p, "\"name\":");
    p = put(p, use_args);
    p = put(p, ",\"value\":\"");
    p = format_time(f, p, start);
    return put(p, "\"}}\n");
  }
  if (r.type == rec_type::counter) {  // no id: Perfetto would make one track per sample
    *p++ = '{';
    p = put(p, std::string_view(*r.name_cat).substr(1));
    p = put_pid_tid_ts(f, p, r.tid, start);
    p = put(p, ",\"ph\":\"C\",\"args\":{");
    p = put(p, use_args);  // counters store their series as JSON
    return put(p, "}}\n");
  }
  if (r.type == rec_type::complete && r.use_args_kind == args_kind::prepared &&
      r.node_args_len == 0 && r.count == 0 && f.cache)
    if (const line_template *t = template_of(f, r))
      return format_templated(f, *t, r, start, end, *ts_us, p);
  p = put(p, "{\"id\":");
  p = write_u64(p, r.id);
  p = put(p, *r.name_cat);
  p = put_pid_tid_ts(f, p, r.tid, start);
  if (r.type == rec_type::complete) {
    p = put(p, ",\"dur\":");
    if (!f.ns_precision) {
      p = write_u64(p, (end + f.epoch_offset_ns) / 1000 - *ts_us);
    } else {
      p = write_u64(p, end - start);
    }
    p = put(p, ",\"ph\":\"X\",\"args\":{");
  } else {
    p = put(p, ",\"ph\":\"i\",\"s\":\"t\",\"args\":{");
  }
  p = put(p, f.hhash_field);
  p = put_args(f, p, !f.hhash_field.empty(), node_args, use_args, r.use_args_kind);
  if (r.count) {
    if (!f.hhash_field.empty() || !node_args.empty() || !use_args.empty()) *p++ = ',';
    p = put(p, "\"count\":");
    p = write_u64(p, r.count);
  }
  return put_line_end(p, f.metadata, r);
}

}  // namespace dftrace::detail
