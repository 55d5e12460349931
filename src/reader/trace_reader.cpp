// trace_reader.cpp: mapping a trace file, planning its members through their DT fields, and
// inflating one member (block_reader.cpp delivers the blocks).
#include "reader/trace_reader.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>

#ifdef DFTRACE_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif
#ifdef DFTRACE_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

namespace dftrace::detail {

namespace {

constexpr size_t k_plain_slice = 4u << 20;

std::string errno_text(int e) { return std::string(std::strerror(e)); }

std::atomic<size_t> g_max_text{size_t{1} << 30};

// Deflate cannot expand its input by more than about 1032 to 1 (a 258-byte match per two
// bits): what a member of n bytes can hold at most.
uint64_t deflate_bound(size_t n) { return static_cast<uint64_t>(n) * 1032 + 1024; }

uint32_t le32(const uint8_t *p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

// Inflates with zlib, appending to out until the end of the first gzip member, damage, or
// limit bytes of output. Returns true on a clean end; *used is the compressed bytes consumed.
bool zlib_inflate_member(const uint8_t *p, size_t n, std::string &out, size_t *used,
                         std::string *why, size_t limit) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) {
    *why = "zlib initialisation failed";
    return false;
  }
  zs.next_in = const_cast<Bytef *>(p);
  zs.avail_in = static_cast<uInt>(std::min<size_t>(n, 0xFFFFFFFFu));
  size_t have = out.size();
  limit = std::max(limit, have);
  if (out.size() < have + 65536) out.resize(std::min(have + 65536, limit));
  bool ok = false;
  for (;;) {
    if (have == out.size()) {
      if (out.size() >= limit) {
        *why = "it inflates to more than " + std::to_string(limit) +
               " bytes (the reader's limit for one member)";
        break;
      }
      out.resize(std::min(out.size() * 2, limit));
    }
    zs.next_out = reinterpret_cast<Bytef *>(&out[have]);
    zs.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - have, 0xFFFFFFFFu));
    const uInt before = zs.avail_out;
    const int r = inflate(&zs, Z_NO_FLUSH);
    have += before - zs.avail_out;
    if (r == Z_STREAM_END) {
      ok = true;
      break;
    }
    if (r == Z_OK) continue;
    if (r == Z_BUF_ERROR && zs.avail_in == 0) {
      *why = "the member is cut short (the file ends inside it)";
      break;
    }
    if (r == Z_BUF_ERROR) continue;
    *why = std::string("corrupt deflate data (") + (zs.msg ? zs.msg : "zlib error") + ")";
    break;
  }
  *used = static_cast<size_t>(zs.next_in - p);
  out.resize(have);
  inflateEnd(&zs);
  return ok;
}

#ifdef DFTRACE_HAVE_LIBDEFLATE
struct decompressor_holder {
  libdeflate_decompressor *d = libdeflate_alloc_decompressor();
  ~decompressor_holder() {
    if (d) libdeflate_free_decompressor(d);
  }
};
#endif

// Inflates the gzip member p[0..n) in one call into out, which has room for hint + 1 bytes:
// ISA-L's inflate where it is built in (the fastest here), else libdeflate. False when neither
// is there or the member does not inflate cleanly into hint bytes (zlib then says why).
bool inflate_sized(const uint8_t *p, size_t n, char *out, size_t hint, size_t *in_used,
                   size_t *out_used) {
#ifdef DFTRACE_HAVE_ISAL
  if (n < (1u << 31) && hint < (1u << 31)) {
    thread_local inflate_state st;
    isal_inflate_init(&st);
    st.crc_flag = ISAL_GZIP;
    st.next_in = const_cast<uint8_t *>(p);
    st.avail_in = static_cast<uint32_t>(n);
    st.next_out = reinterpret_cast<uint8_t *>(out);
    st.avail_out = static_cast<uint32_t>(hint + 1);  // one more: a member longer than hint fails
    if (isal_inflate(&st) == ISAL_DECOMP_OK && st.block_state == ISAL_BLOCK_FINISH &&
        st.avail_out > 0) {
      *in_used = n - st.avail_in;
      *out_used = hint + 1 - st.avail_out;
      return true;
    }
  }
#endif
#ifdef DFTRACE_HAVE_LIBDEFLATE
  thread_local decompressor_holder holder;
  if (holder.d && libdeflate_gzip_decompress_ex(holder.d, p, n, out, hint, in_used, out_used) ==
                      LIBDEFLATE_SUCCESS)
    return true;
#endif
  (void)p, (void)n, (void)out, (void)hint, (void)in_used, (void)out_used;
  return false;
}

}  // namespace

size_t max_text_bytes() {
  // DFTRACE_READER_MAX_TEXT (bytes) changes the default once, for the whole process.
  static const bool from_env = [] {
    if (const char *e = std::getenv("DFTRACE_READER_MAX_TEXT")) {
      char *end = nullptr;
      const unsigned long long v = std::strtoull(e, &end, 10);
      if (end != e && *end == 0 && v > 0) set_max_text_bytes(static_cast<size_t>(v));
    }
    return true;
  }();
  (void)from_env;
  return g_max_text.load(std::memory_order_relaxed);
}

void set_max_text_bytes(size_t n) {
  g_max_text.store(std::max<size_t>(n, 4096), std::memory_order_relaxed);
}

bool inflate_member(const uint8_t *p, size_t n, const dt_field &dt, std::unique_ptr<char[]> &out,
                    size_t *len, std::vector<read_issue> &issues, uint64_t offset) {
  *len = 0;
  // The DT field's length is a hint: it sizes the buffer only when the member could hold
  // that much, it is under the limit, and the gzip trailer (ISIZE) says the same. Otherwise
  // the member is inflated the slow way, into a buffer that grows up to what it can hold.
  const uint64_t limit = std::min<uint64_t>(deflate_bound(n), max_text_bytes());
  const uint64_t hint = dt.uncompressed_len;
  const bool hint_ok = hint <= limit && n >= 18 && le32(p + n - 4) == dt.uncompressed_len;
  if (hint_ok) {
    out.reset(new char[static_cast<size_t>(hint) + 1]);
    size_t in_used = 0, out_used = 0;
    if (inflate_sized(p, n, out.get(), static_cast<size_t>(hint), &in_used, &out_used)) {
      *len = out_used;
      if (out_used != hint)
        issues.push_back({true, offset,
                          "DT field says " + std::to_string(hint) +
                              " uncompressed bytes, the member holds " + std::to_string(out_used)});
      if (in_used != n)
        issues.push_back({true, offset,
                          "DT field says the member is " + std::to_string(n) +
                              " bytes long, its deflate data ends after " +
                              std::to_string(in_used)});
      return true;
    }
    // Damaged, or longer than the DT field says: let zlib say what and salvage the lines.
  }
  std::string text;
  if (hint_ok) text.reserve(static_cast<size_t>(hint));
  size_t used = 0;
  std::string why;
  const bool ok = zlib_inflate_member(p, n, text, &used, &why, static_cast<size_t>(limit));
  out.reset(new char[text.size() + 1]);
  std::memcpy(out.get(), text.data(), text.size());
  *len = text.size();
  if (!ok) {
    issues.push_back({true, offset,
                      "damaged gzip member: " + why + "; kept " + std::to_string(text.size()) +
                          " bytes before it"});
    return false;
  }
  if (text.size() != hint)
    issues.push_back({true, offset,
                      "DT field says " + std::to_string(hint) +
                          " uncompressed bytes, the member holds " + std::to_string(text.size())});
  if (used != n)
    issues.push_back({true, offset,
                      "DT field says the member is " + std::to_string(n) +
                          " bytes long, its deflate data ends after " + std::to_string(used)});
  return true;
}

trace_file::~trace_file() {
  if (mapped_ && data_) munmap(const_cast<uint8_t *>(data_), size_);
}

bool trace_file::open(const std::string &path, std::string *why) {
  path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = errno_text(errno);
    return false;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    *why = errno_text(errno);
    ::close(fd);
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    *why = "is a directory";
    ::close(fd);
    return false;
  }
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    void *m = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (m != MAP_FAILED) {
      data_ = static_cast<const uint8_t *>(m);
      size_ = static_cast<uint64_t>(st.st_size);
      mapped_ = true;
      madvise(m, size_, MADV_SEQUENTIAL);
    }
  }
  if (!mapped_) {  // a pipe or something that does not map: read it whole
    char buf[1 << 16];
    for (;;) {
      const ssize_t r = ::read(fd, buf, sizeof buf);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {
        *why = errno_text(errno);
        ::close(fd);
        return false;
      }
      if (r == 0) break;
      heap_.insert(heap_.end(), buf, buf + r);
    }
    data_ = reinterpret_cast<const uint8_t *>(heap_.data());
    size_ = heap_.size();
  }
  ::close(fd);
  if (size_ == 0) {
    *why = "empty file, not a trace";
    return false;
  }
  gzip_ = size_ >= 2 && data_[0] == 0x1f && data_[1] == 0x8b;
  if (!gzip_) {
    size_t i = 0;
    while (i < size_ && i < 4096 &&
           (data_[i] == ' ' || data_[i] == '\n' || data_[i] == '\r' || data_[i] == '\t'))
      ++i;
    if (i >= size_ || (data_[i] != '[' && data_[i] != '{')) {
      *why = "not a trace (neither gzip data nor JSON lines)";
      return false;
    }
  }
  plan();
  return true;
}

void trace_file::release(uint64_t offset, uint64_t length) const {
  if (!mapped_ || offset >= size_) return;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t end = std::min(size_, offset + length);
  const uint64_t first = (offset + page - 1) / page * page;
  const uint64_t last = end / page * page;
  if (last <= first) return;
  ::madvise(const_cast<uint8_t *>(data_) + first, static_cast<size_t>(last - first), MADV_DONTNEED);
}

void trace_file::plan() {
  parts_.clear();
  dt_members_ = 0;
  if (!gzip_) {
    uint64_t pos = 0;
    while (pos < size_) {
      uint64_t end = std::min<uint64_t>(size_, pos + k_plain_slice);
      if (end < size_) {
        const void *nl = std::memchr(data_ + end, '\n', size_ - end);
        end = nl ? static_cast<uint64_t>(static_cast<const uint8_t *>(nl) - data_) + 1 : size_;
      }
      planned_part part;
      part.kind = planned_part::plain;
      part.offset = pos;
      part.length = end - pos;
      parts_.push_back(part);
      pos = end;
    }
    return;
  }
  uint64_t pos = 0;
  while (pos < size_) {
    dt_field dt;
    if (!parse_dt_field(data_ + pos, static_cast<size_t>(std::min<uint64_t>(size_ - pos, 1u << 17)),
                        &dt))
      break;
    if (dt.version != k_dt_version) break;  // a layout this reader does not know: stream it
    const uint64_t len = dt.compressed_len;
    if (len < 18 + 4 || pos + len > size_) break;  // cut short: the stream reports it
    const uint64_t next = pos + len;
    if (next != size_ && !(next + 1 < size_ && data_[next] == 0x1f && data_[next + 1] == 0x8b)) {
      plan_issues_.push_back({true, pos,
                              "DT field says the member is " + std::to_string(len) +
                                  " bytes long, but no gzip member follows it"});
      break;
    }
    planned_part part;
    part.kind = planned_part::member;
    part.offset = pos;
    part.length = len;
    part.dt = dt;
    parts_.push_back(part);
    ++dt_members_;
    pos = next;
  }
  if (pos < size_) {
    planned_part part;
    part.kind = planned_part::stream;
    part.offset = pos;
    part.length = size_ - pos;
    parts_.push_back(part);
  }
}

}  // namespace dftrace::detail
