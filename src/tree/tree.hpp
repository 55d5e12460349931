// tree.hpp: the process-wide tree of named nodes (docs/ai-tree.md): names, categories, enable
// state and inherited arguments. Lookups and changes take one mutex; the event path reads a
// node only through its atomic `active` flag and its lock-free argument store.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dftrace::detail {

// A node's arguments as one pre-formatted JSON fragment ("epoch":1,"step":40), readable
// without a lock: a sequence lock over a word array, replaced (never freed before exit) when
// it must grow.
class arg_store {
 public:
  arg_store();
  // Readers: copies the fragment into dst if it fits in room (whole 8-byte words are stored,
  // so up to 7 bytes past the fragment may be overwritten); returns its length, or -(room
  // needed) when room is too small. Never blocks for long.
  inline long copy_to(char *dst, size_t room) const;
  size_t size_hint() const { return len_.load(std::memory_order_relaxed); }
  // Writer (holding the tree mutex).
  void store(std::string_view fragment);

 private:
  struct block {
    size_t words;
    std::unique_ptr<std::atomic<uint64_t>[]> data;
  };
  std::atomic<uint32_t> seq_{0};
  std::atomic<uint32_t> len_{0};
  std::atomic<block *> block_;
  std::vector<std::unique_ptr<block>> blocks_;  // all ever used: readers may still hold one
};

// The seqlock's ordering. Normally: relaxed data accesses between fences (the fences cost
// nothing on x86). ThreadSanitizer does not model standalone fences (GCC warns
// "'atomic_thread_fence' is not supported with '-fsanitize=thread'" and TSan could report false
// races), so a sanitizer build uses the fence-free form instead: release stores and acquire loads
// of every data word, which order the same things.
#if defined(__SANITIZE_THREAD__)
#define DFTRACE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DFTRACE_TSAN 1
#endif
#endif
#ifdef DFTRACE_TSAN
inline constexpr std::memory_order k_seq_data_load = std::memory_order_acquire;
inline constexpr std::memory_order k_seq_data_store = std::memory_order_release;
#else
inline constexpr std::memory_order k_seq_data_load = std::memory_order_relaxed;
inline constexpr std::memory_order k_seq_data_store = std::memory_order_relaxed;
#endif

// Inline: on every event's path.
inline long arg_store::copy_to(char *dst, size_t room) const {
  for (;;) {
    const uint32_t s1 = seq_.load(std::memory_order_acquire);
    if (s1 & 1u) continue;
    const block *b = block_.load(std::memory_order_acquire);
    const uint32_t n = len_.load(k_seq_data_load);
    if ((n + 7u) / 8u * 8u > room) {  // whole words are stored: room for the rounding too
      if (seq_.load(std::memory_order_acquire) == s1) return -static_cast<long>((n + 7u) / 8u * 8u);
      continue;
    }
    const size_t words = std::min<size_t>((n + 7) / 8, b->words);
    for (size_t i = 0; i < words; ++i) {
      const uint64_t w = b->data[i].load(k_seq_data_load);
      std::memcpy(dst + 8 * i, &w, 8);  // fixed size: a store, not a call
    }
#ifndef DFTRACE_TSAN
    std::atomic_thread_fence(std::memory_order_acquire);
#endif
    if (seq_.load(std::memory_order_relaxed) == s1) return static_cast<long>(n);
  }
}

struct node {
  std::atomic<bool> active{false};  // user_enabled && the process is recording && in scope
  // Its complete events are folded into aggregated records (aggregation.*), not written one
  // by one; read on the event path.
  std::atomic<bool> aggregate{false};
  bool user_enabled = true;
  node *parent = nullptr;
  std::string key;   // path segment under the parent
  std::string name;  // event name
  std::string cat;
  std::string path;
  bool hidden = false;   // custom iter/block names: not found by path
  std::string name_cat;  // ,"name":"<name>","cat":"<cat>"  (escaped)
  arg_store args;        // this node's fragment (when it has its own list)
  // Where events of this node read their arguments: &args, or for a node that shares its
  // parent's arguments, the parent's source (so that update() of a subtree stores one fragment
  // per node that holds a list, not one per node). Changed under the tree mutex.
  std::atomic<const arg_store *> args_src{nullptr};
  // Ordered arguments (escaped key, JSON value), the source of `args`. Tree mutex.
  // Only meaningful when !same_args_as_parent: a node that holds exactly its parent's
  // arguments (inherited, and every later update reached both) keeps no list of its own and
  // takes its parent's fragment on update; it gets a list when it is updated on its own.
  std::vector<std::pair<std::string, std::string>> arg_list;
  bool same_args_as_parent = true;
  uint32_t lists_in_subtree = 0;  // nodes with a list of their own here and below (tree mutex)
  std::vector<std::unique_ptr<node>> children;
  // The runtime's per-node forwarding data (runtime/nvtx_forward: the NVTX message and
  // category), made on the node's first forwarded event and never freed; opaque here.
  std::atomic<void *> forward{nullptr};
  std::atomic<node *> iter_node{nullptr};
  std::atomic<node *> block_node{nullptr};
};

class tree {
 public:
  tree();
  node *root() { return root_.get(); }
  node *find(std::string_view path);
  node *category(std::string_view name);
  node *child(node *parent, std::string_view name);
  node *derive(node *parent, std::string_view name);
  // A hidden child whose event name is `event_name` verbatim (custom iter/block names).
  node *verbatim(node *parent, std::string_view event_name);
  // "<n>.iter" / "<n>.block" nodes of an iter loop, cached on the node.
  node *iter_of(node *n);
  node *block_of(node *n);

  void set_enabled(node *n, bool on);
  // Sets (value = JSON text) or removes (nullopt) an argument on n and its subtree.
  void update(node *n, std::string_view key, std::optional<std::string_view> json_value);
  // Several at once, one pass over the subtree. Keys are raw (escaped here).
  using change = std::pair<std::string, std::optional<std::string>>;
  void update_many(node *n, const std::vector<change> &changes);
  // The process starts or stops recording: recomputes every node's `active`.
  void set_recording(bool on);
  // Only the nodes of these categories (top-level names) can be active; empty: every node
  // (dftrace attach --level io|torch). Recomputes every node's `active`.
  void set_scope(std::vector<std::string> categories);
  // Category rules from the configuration, most specific path last.
  void set_rules(std::vector<std::pair<std::string, bool>> rules);
  // Which nodes' events are aggregated: `all` for every node, then rules by path (true:
  // aggregate, false: keep every event), most specific wins; nodes made later follow them.
  void set_aggregation(bool all, std::vector<std::pair<std::string, bool>> rules);

  std::mutex &mutex() { return mu_; }

 private:
  // The node derived from n with `suffix`, made once and kept in `slot`.
  node *derived_once(std::atomic<node *> &slot, node *n, std::string_view suffix);
  node *make_child(node *parent, std::string_view key, std::string event_name, bool hidden);
  node *find_locked(std::string_view path);
  void refresh_active(node *n);
  void set_enabled_locked(node *n, bool on);
  // top: n is the node update() was called on (the others are its descendants).
  void update_locked(node *n, const std::vector<change> &changes, bool top);
  // The arguments n holds (its own list, or the nearest ancestor's that it shares).
  static const std::vector<std::pair<std::string, std::string>> &effective_args(const node *n);
  void rebuild_args(node *n, std::string &frag);
  // Points n's sharing descendants at n's source (after n's source changed).
  static void repoint_sharing(node *n);
  static void rebuild_args_into(const std::vector<std::pair<std::string, std::string>> &list,
                                std::string &frag);
  std::string frag_;  // reused by rebuild_args (tree mutex)

  std::mutex mu_;
  std::unique_ptr<node> root_;
  bool recording_ = false;
  std::vector<std::string> scope_;  // set_scope's categories (empty: all)
  bool in_scope(const node *n) const;
  bool should_be_active(const node *n) const {
    return n->user_enabled && recording_ && (scope_.empty() || in_scope(n));
  }
  std::vector<std::pair<std::string, bool>> rules_;
  std::vector<std::pair<std::string, bool>> agg_rules_;
  bool agg_all_ = false;
  void apply_aggregation_locked(node *n, bool inherited);
};

// The key as stored: reserved keys (is_reserved_arg_key, base/format.hpp) get "user_" before them.
std::string safe_arg_key(std::string_view key);
// The escaped form of a key, without quotes.
std::string escape_key(std::string_view key);

}  // namespace dftrace::detail
