// stdio_fold.cpp: the slots of folded character and line calls: which stream is traced, the
// emission of a slot as one event, and the points where slots are emitted (README.md).
#include "plugins/io/stdio_fold.hpp"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>

#include "plugins/io/descriptors.hpp"

namespace dftrace::io {

namespace {

// A slot is emitted at the latest this long after its first call (checked every 256 calls),
// and at the stream's fflush, fclose or freopen, the thread's end and dftrace's finalisation.
constexpr uint64_t k_fold_interval_ns = 1000000000ull;

std::mutex g_blocks_mutex;                    // adoption and release of blocks
std::atomic<fold_block *> g_blocks{nullptr};  // every block ever made (never freed)
std::atomic<int> g_blocks_owned{0};
pthread_key_t g_fold_key;
pthread_once_t g_fold_once = PTHREAD_ONCE_INIT;

// Whether the slot is to be written: a traced stream, calls, and its node still records (not
// after dftrace finalized: no clock read or event may then start dftrace again).
bool to_write(const fold_slot &s) {
  return s.fhash && s.calls.load(std::memory_order_relaxed) && dftrace_node_active_fast(s.node);
}

// One slot's calls as one event: fhash, calls, bytes, from its first call to `end_ns`, on the
// thread that made them. The slot is freed.
void emit(fold_slot &s, int64_t tid, uint64_t end_ns) {
  const uint64_t calls = s.calls.load(std::memory_order_relaxed);
  if (to_write(s)) {
    inside g;
    const dftrace_arg_t args[3] = {arg_u("fhash", s.fhash), arg_u("calls", calls),
                                   arg_u("bytes", s.bytes.load(std::memory_order_relaxed))};
    dftrace_event_complete(s.node, s.start_ns, end_ns, tid, args, 3);
  }
  s.calls.store(0, std::memory_order_relaxed);
  s.bytes.store(0, std::memory_order_relaxed);
  s.fhash = 0;
  s.node = nullptr;
  s.f = nullptr;
  s.reads = false;
  s.unread = false;
  s.check_at = 256;
}

// The slots of `f` (every stream: null) told whether bytes are pushed back on it.
void mark_unread(fold_block *b, FILE *f, bool unread) {
  for (fold_slot &x : b->slots) {
    if (!x.f || (f && x.f != f) || !x.reads) continue;
    x.unread = unread;
    if (unread) x.check_at = 0;  // fold_check after its next call
  }
}

// The bytes remembered as pushed back on `f` (every stream: null) forgotten.
void forget_unread(fold_block *b, FILE *f) {
  for (int i = 0; i < k_unread_streams; ++i) {
    if (!b->unread_f[i] || (f && b->unread_f[i] != f)) continue;
    b->unread_f[i] = nullptr;
    b->unread_n[i] = 0;
    --b->unread_any;
  }
  mark_unread(b, f, false);
}

// Whether bytes are remembered as pushed back on `f`.
bool has_unread(const fold_block *b, FILE *f) {
  if (b->unread_any)
    for (int i = 0; i < k_unread_streams; ++i)
      if (b->unread_f[i] == f) return true;
  return false;
}

uint64_t now_ns() {
  inside g;
  return dftrace_now_ns();
}

void emit_block(fold_block *b, FILE *only) {
  uint64_t end = 0;
  for (fold_slot &s : b->slots) {
    if (!s.f || (only && s.f != only)) continue;
    if (!end && to_write(s)) end = now_ns();
    emit(s, b->tid, end);
  }
}

// A thread ends: its slots are emitted on it, and its block is free for another thread.
void thread_ends(void *p) {
  auto *b = static_cast<fold_block *>(p);
  errno_keeper keep;
  emit_block(b, nullptr);
  forget_unread(b, nullptr);
  if (t_fold == b) t_fold = nullptr;
  std::lock_guard<std::mutex> lock(g_blocks_mutex);
  b->owned.store(false, std::memory_order_relaxed);
  g_blocks_owned.fetch_sub(1, std::memory_order_relaxed);
}

// A forked child: its parent's counts are the parent's to emit; the other threads' blocks
// have no thread any more. The forking thread's pushed-back bytes stay remembered: the
// parent counted them, the child's copy of the stream returns them again.
void fork_child() {
  for (fold_block *b = g_blocks.load(); b; b = b->next) {
    if (b != t_fold) forget_unread(b, nullptr);
    for (fold_slot &s : b->slots) {
      s.calls.store(0, std::memory_order_relaxed);
      s.bytes.store(0, std::memory_order_relaxed);
      s.f = nullptr;
      s.node = nullptr;
      s.fhash = 0;
      s.reads = s.unread = false;
      s.check_at = 256;
    }
    if (b != t_fold && b->owned.load(std::memory_order_relaxed)) {
      b->owned.store(false, std::memory_order_relaxed);
      g_blocks_owned.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  if (t_fold) t_fold->tid = static_cast<int64_t>(::syscall(SYS_gettid));
}

fold_block *adopt_block() {
  pthread_once(&g_fold_once, [] {
    pthread_key_create(&g_fold_key, thread_ends);
    pthread_atfork(nullptr, nullptr, fork_child);
  });
  fold_block *b = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_blocks_mutex);
    for (fold_block *x = g_blocks.load(); x && !b; x = x->next)
      if (!x->owned.load(std::memory_order_relaxed)) b = x;
    if (!b) {
      b = new (std::nothrow) fold_block;
      if (!b) return nullptr;
      b->next = g_blocks.load();
      g_blocks.store(b);
    }
    b->owned.store(true, std::memory_order_relaxed);
    g_blocks_owned.fetch_add(1, std::memory_order_relaxed);
  }
  b->tid = static_cast<int64_t>(::syscall(SYS_gettid));
  b->epoch = g_fold_epoch.load(std::memory_order_relaxed);
  t_fold = b;
  pthread_setspecific(g_fold_key, b);
  return b;
}

// `n` bytes read from `f`, less the remembered ones they include (those are forgotten).
uint64_t take_unread(fold_block *b, FILE *f, uint64_t n);

}  // namespace

fold_slot *fold_open(dftrace_node_t *node, FILE *f, bool reads) {
  errno_keeper keep;
  if (!f || !recording(node)) return nullptr;
  fold_block *b = t_fold ? t_fold : adopt_block();
  if (!b) return nullptr;
  const uint32_t epoch = g_fold_epoch.load(std::memory_order_relaxed);
  if (b->epoch != epoch) {  // a stream was closed (maybe one of these): all are decided anew
    emit_block(b, nullptr);
    b->epoch = epoch;
  }
  const int fd = ::fileno_unlocked(f);  // (fmemopen's stream has none: -1)
  uint64_t h = 0;
  if (fd < 0 || fd_untraced(fd) || !fd_hash(fd, &h)) h = 0;
  fold_slot *s = nullptr;
  for (fold_slot &x : b->slots)
    if (!x.f) {
      s = &x;
      break;
    }
  if (!s) {  // every slot taken: the oldest taken one is emitted
    s = &b->slots[b->victim];
    b->victim = (b->victim + 1) % k_fold_slots;
    emit(*s, b->tid, now_ns());
  }
  s->f = f;
  s->node = node;
  s->reads = reads;
  s->unread = reads && has_unread(b, f);
  s->check_at = s->unread ? 0 : 256;
  s->fhash = h;
  s->calls.store(0, std::memory_order_relaxed);
  s->bytes.store(0, std::memory_order_relaxed);
  s->start_ns = now_ns();
  return s;
}

void fold_check(fold_slot *s, uint64_t last) {
  errno_keeper keep;
  fold_block *b = t_fold;
  if (!b) return;
  const uint64_t calls = s->calls.load(std::memory_order_relaxed);
  if (s->unread) {  // the bytes pushed back that this call read again: counted already
    const uint64_t again = last - take_unread(b, s->f, last);
    s->bytes.store(s->bytes.load(std::memory_order_relaxed) - again, std::memory_order_relaxed);
    last -= again;
  }
  s->check_at = s->unread ? calls + 1 : (calls | 255) + 1;
  if ((calls & 255) != 0) return;            // (the interval every 256 calls)
  if (!dftrace_node_active_fast(s->node)) {  // (finalized, or switched off): dropped
    emit(*s, b->tid, 0);
    return;
  }
  const uint64_t now = now_ns();
  if (now - s->start_ns < k_fold_interval_ns) return;
  dftrace_node_t *const node = s->node;
  FILE *const f = s->f;
  const bool reads = s->reads;
  s->calls.store(calls - 1, std::memory_order_relaxed);
  s->bytes.store(s->bytes.load(std::memory_order_relaxed) - last, std::memory_order_relaxed);
  emit(*s, b->tid, now);
  if (fold_slot *next = fold_open(node, f, reads)) {
    next->calls.store(1, std::memory_order_relaxed);
    next->bytes.store(last, std::memory_order_relaxed);
  }
}

void fold_flush_stream(FILE *f, bool closing) {
  if (fold_block *b = t_fold) {
    errno_keeper keep;
    emit_block(b, f);
    if (f && b->unread_any) forget_unread(b, f);  // (fflush(NULL) leaves input streams alone)
  }
  if (closing && g_blocks_owned.load(std::memory_order_relaxed) > 1)
    g_fold_epoch.fetch_add(1, std::memory_order_relaxed);
}

void fold_unread(FILE *f) {
  errno_keeper keep;
  fold_block *b = t_fold;
  if (!b) {
    if (dftrace_thread_is_internal()) return;
    b = adopt_block();
    if (!b) return;
  }
  const int fd = ::fileno_unlocked(f);  // (a stream without a descriptor: -1)
  int free_i = -1;
  for (int i = 0; i < k_unread_streams; ++i) {
    if (b->unread_f[i] == f) {
      if (b->unread_fd[i] != fd) {  // the pointer names another stream now: begun anew
        b->unread_fd[i] = fd;
        b->unread_n[i] = 0;
      }
      ++b->unread_n[i];
      mark_unread(b, f, true);
      return;
    }
    if (!b->unread_f[i] && free_i < 0) free_i = i;
  }
  if (free_i < 0) return;  // a 5th stream with bytes pushed back at once: counted again
  b->unread_f[free_i] = f;
  b->unread_fd[free_i] = fd;
  b->unread_n[free_i] = 1;
  ++b->unread_any;
  mark_unread(b, f, true);
}

void fold_forget_unread(FILE *f) {
  if (fold_block *b = t_fold; b && b->unread_any) forget_unread(b, f);
}

namespace {

// `n` bytes read from `f`, less the remembered ones they include (those are forgotten).
uint64_t take_unread(fold_block *b, FILE *f, uint64_t n) {
  errno_keeper keep;  // (fileno of a stream without a descriptor sets it)
  for (int i = 0; i < k_unread_streams && n; ++i) {
    if (b->unread_f[i] != f) continue;
    uint64_t taken = 0;
    if (b->unread_fd[i] == ::fileno_unlocked(f)) {
      taken = b->unread_n[i] < n ? b->unread_n[i] : n;
      b->unread_n[i] -= taken;
    } else {
      b->unread_n[i] = 0;  // the pointer names another stream now
    }
    if (b->unread_n[i] == 0) {
      b->unread_f[i] = nullptr;
      --b->unread_any;
      mark_unread(b, f, false);
    }
    return n - taken;
  }
  return n;
}

}  // namespace

void fold_fread_unread(FILE *f, uint64_t n) {
  fold_block *b = t_fold;
  if (!b || !b->unread_any) return;
  uint64_t again = n - take_unread(b, f, n);  // bytes it read again, counted by its event
  if (b->epoch != g_fold_epoch.load(std::memory_order_relaxed)) return;
  for (fold_slot &x : b->slots) {  // taken off the reading calls that counted them first
    if (!again) break;
    if (x.f != f || !x.reads) continue;
    const uint64_t have = x.bytes.load(std::memory_order_relaxed);
    const uint64_t off = have < again ? have : again;
    x.bytes.store(have - off, std::memory_order_relaxed);
    again -= off;
  }
}

}  // namespace dftrace::io

// Called by libdftrace as it finalises (before the end line): every thread's slots emitted.
// The calling thread's exactly; a thread still running may add to its slots meanwhile (its
// later calls are then not in the trace, as any event after finalisation).
extern "C" void dftrace_io_flush_folded(void) {
  using namespace dftrace::io;
  errno_keeper keep;
  uint64_t end = 0;
  for (fold_block *b = g_blocks.load(); b; b = b->next) {
    if (!b->owned.load(std::memory_order_relaxed)) continue;
    for (fold_slot &s : b->slots) {
      if (!s.f) continue;
      if (!end && to_write(s)) end = now_ns();
      emit(s, b->tid, end);
    }
  }
}
