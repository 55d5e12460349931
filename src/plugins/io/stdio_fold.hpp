// stdio_fold.hpp: the character and line calls of a stream (fgetc, fputs, getline, fprintf...)
// folded into one event per stream and call between flushes: a call made once per character
// costs a few instructions, not an event (README.md, "Folded calls").
#pragma once

#include <stdio.h>

#include <atomic>
#include <cstdint>

#include "plugins/io/interpose.hpp"

namespace dftrace::io {

// One stream's calls of one kind (node) on one thread since the last emission. `fhash` 0: the
// stream is not traced; the slot only remembers that until its interval ends.
struct fold_slot {
  FILE *f = nullptr;  // null: free
  dftrace_node_t *node = nullptr;
  uint64_t fhash = 0;
  uint64_t start_ns = 0;  // the first call's time (dftrace_now_ns)
  bool reads = false;     // a reading call (fgetc, fgets, getline...)
  bool unread = false;    // bytes are pushed back on f (the block's unread_f)
  // The call count at which fold_check runs: every 256th, and the next one while `unread`.
  uint64_t check_at = 256;
  // Written by the owning thread only; atomics (relaxed: plain loads and stores) because the
  // finalisation reads the slots of threads still running.
  std::atomic<uint64_t> calls{0}, bytes{0};
};

constexpr int k_fold_slots = 8;
// Streams with bytes pushed back (ungetc) and not yet read again: read again, they are not
// counted again (README.md, "Pushed-back bytes").
constexpr int k_unread_streams = 4;
// A thread's slots: allocated at its first traced call, reused by a later thread once it ends.
struct fold_block {
  fold_slot slots[k_fold_slots];
  FILE *unread_f[k_unread_streams] = {};
  int unread_fd[k_unread_streams] = {};  // its descriptor then (a reused pointer: another)
  uint64_t unread_n[k_unread_streams] = {};
  uint32_t unread_any = 0;  // streams in unread_f
  uint32_t epoch = 0;       // g_fold_epoch when the slots were last checked
  uint32_t victim = 0;
  int64_t tid = 0;
  std::atomic<bool> owned{false};
  fold_block *next = nullptr;
};

inline thread_local fold_block *t_fold __attribute__((tls_model("initial-exec"))) = nullptr;
// Moved on by every fclose and freopen while more than one thread has slots: a stream pointer
// may then name another file, so each thread emits and forgets its slots at its next call.
inline std::atomic<uint32_t> g_fold_epoch{0};

// The slow half: decides whether the stream is traced, takes a slot (emitting the one it
// replaces). Null when the call is not to be counted (not recording, dftrace's own I/O).
fold_slot *fold_open(dftrace_node_t *node, FILE *f, bool reads);
// After the call that counted `last` bytes, every 256 calls of a slot and after each call
// while bytes are pushed back on its stream: those it read again are taken off its count;
// once its interval is over, emits it without that call, which begins the next interval in a
// slot decided anew (an fread after an ungetc then still finds the byte in an open slot)
// (errno kept).
void fold_check(fold_slot *s, uint64_t last);
// The calling thread's slots of `f` (every stream: null) emitted and freed, and the bytes
// pushed back on it forgotten: fflush, fclose, freopen, fseek. `closing`: the stream pointer
// ends, so other threads' slots of it must go too.
void fold_flush_stream(FILE *f, bool closing);
// A byte pushed back on `f` (a successful ungetc): remembered on this thread, so that the
// reading call that reads it again does not count it again (README.md, "Pushed-back bytes").
void fold_unread(FILE *f);
// The stream's pushback discarded (fseek, rewind, fsetpos): the bytes remembered forgotten
// (they stay counted once, as read before).
void fold_forget_unread(FILE *f);
// An fread on `f` returned `n` bytes: those pushed back that it read again are taken off the
// thread's open reading slots of `f` (its event says what it returned).
void fold_fread_unread(FILE *f, uint64_t n);
// Whether bytes are pushed back on some stream of this thread (one load; the fread path).
inline bool fold_any_unread() {
  const fold_block *b = t_fold;
  return b && b->unread_any;
}

// A character or line call on stream f: the call, then its bytes (bytes(ret)) counted in the
// stream's slot. The application sees the real call's result and errno. `Reads`: a reading
// call, whose bytes pushed back by ungetc and read again are not counted twice.
template <bool Reads, typename Call, typename Bytes>
inline auto folded(dftrace_node_t *node, FILE *f, Call call, Bytes bytes) -> decltype(call()) {
  fold_slot *s = nullptr;
  fold_block *b = t_fold;
  if (__builtin_expect(b != nullptr && !t_inside, 1) &&
      __builtin_expect(b->epoch == g_fold_epoch.load(std::memory_order_relaxed), 1)) {
    for (fold_slot &x : b->slots)
      if (x.f == f && x.node == node) {
        s = &x;
        break;
      }
  }
  if (__builtin_expect(s == nullptr, 0)) s = fold_open(node, f, Reads);
  const auto ret = call();
  if (s) {
    const uint64_t c = s->calls.load(std::memory_order_relaxed) + 1;
    s->calls.store(c, std::memory_order_relaxed);
    const uint64_t n = bytes(ret);
    s->bytes.store(s->bytes.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    if (__builtin_expect(c >= s->check_at, 0)) fold_check(s, n);
  }
  return ret;
}

}  // namespace dftrace::io
