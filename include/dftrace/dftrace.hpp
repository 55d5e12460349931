// dftrace.hpp: the header-only C++ face of dftrace, written only against dftrace.h.
//
//   dftrace::init();                                   // or DFTRACE_ENABLE=1 in the environment
//   { auto s = dftrace::ai.compute.forward.scope(); }  // one "forward" event (cat compute)
//   dftrace::ai.update("epoch", 3);                     // every node's events carry epoch=3
//   for (auto &batch : dftrace::ai.dataloader.fetch.iter(loader)) { ... }  // fetch.iter/.block
//   for (int epoch : dftrace::ai.pipeline.epoch.iter(3)) { ... }             // 0, 1, 2 (range)
//   auto fwd = dftrace::ai.compute.forward.wrap(my_forward);                // decorator-like
//   DFTRACE_REGION("compute.forward");                  // macro form; compiled out below
//   DFTRACE_FUNCTION("APP");                            // an event named after the function
//
// The tree mirrors Python's `from dftrace import ai`: dftrace::ai.compute.forward is the same
// node as ai.compute.forward there and "compute.forward" in C and Fortran.
// Thread safety: everything here may be used from any thread; a scope must end on the thread
// that began it. With -DDFTRACE_DISABLE every call compiles to nothing and the library is
// not needed at link time.
#ifndef DFTRACE_DFTRACE_HPP
#define DFTRACE_DFTRACE_HPP

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dftrace/dftrace.h"

namespace dftrace {

// ---------------------------------------------------------------- the calls, or nothing
namespace detail {
#ifndef DFTRACE_DISABLE
inline bool active(dftrace_node_t *n) { return dftrace_node_active_fast(n); }
inline dftrace_node_t *find(const char *path) { return dftrace_node_find(path); }
inline dftrace_node_t *category(const char *name) { return dftrace_category(name); }
inline dftrace_node_t *child(dftrace_node_t *p, const char *name) {
  return dftrace_node_child(p, name);
}
inline dftrace_node_t *derive(dftrace_node_t *p, const char *name) {
  return dftrace_node_derive(p, name);
}
// The disabled path is the one laid out straight (the enabled one makes a call anyway).
inline dftrace_region_t begin(dftrace_node_t *n) {
  return __builtin_expect(active(n), 0) ? dftrace_region_begin(n) : 0;
}
inline dftrace_region_t begin_ex(dftrace_node_t *n, int enable, const dftrace_arg_t *a, size_t k) {
  return dftrace_region_begin_ex(n, enable, a, k);
}
inline void end(dftrace_region_t r) {
  if (r) dftrace_region_end(r);
}
inline void start(dftrace_node_t *n) {
  if (__builtin_expect(active(n), 0)) dftrace_node_start(n);
}
inline void stop(dftrace_node_t *n) { dftrace_node_stop(n); }
#else
inline bool active(dftrace_node_t *) { return false; }
inline dftrace_node_t *find(const char *) { return nullptr; }
inline dftrace_node_t *category(const char *) { return nullptr; }
inline dftrace_node_t *child(dftrace_node_t *, const char *) { return nullptr; }
inline dftrace_node_t *derive(dftrace_node_t *, const char *) { return nullptr; }
inline dftrace_region_t begin(dftrace_node_t *) { return 0; }
inline dftrace_region_t begin_ex(dftrace_node_t *, int, const dftrace_arg_t *, size_t) { return 0; }
inline void end(dftrace_region_t) {}
inline void start(dftrace_node_t *) {}
inline void stop(dftrace_node_t *) {}
#endif
}  // namespace detail

// ---------------------------------------------------------------- set-up

// Starts tracing (see dftrace_init). Returns the C status code (0 = ok).
inline int init(bool enable = true, const char *output_file = nullptr) {
#ifndef DFTRACE_DISABLE
  dftrace_options_t o;
  dftrace_options_init(&o);
  o.enable = enable ? 1 : 0;
  o.output_file = output_file;
  return dftrace_init(&o);
#else
  (void)enable;
  (void)output_file;
  return 0;
#endif
}
// 0, or DFTRACE_ERR_IO when the file could not be written and events were lost
// (dftrace_finalize).
inline int finalize() {
#ifndef DFTRACE_DISABLE
  return dftrace_finalize();
#else
  return 0;
#endif
}
// From a signal handler: what is recorded, and with `ending` the end line
// (dftrace_flush_from_signal).
inline void flush_from_signal(bool ending) noexcept {
#ifndef DFTRACE_DISABLE
  dftrace_flush_from_signal(ending);
#else
  (void)ending;
#endif
}
// A trigger of the flight recorder (see dftrace_trigger): true when taken.
inline bool trigger(const char *reason = "") {
#ifndef DFTRACE_DISABLE
  return dftrace_trigger(reason) == 1;
#else
  (void)reason;
  return false;
#endif
}
// The end of a training step (see dftrace_step): true when an active window of the schedule
// just closed and its events are in the file.
inline bool step() {
#ifndef DFTRACE_DISABLE
  return dftrace_step() == 1;
#else
  return false;
#endif
}

// ---------------------------------------------------------------- arguments

// One per-use argument: {"layer", 3}, {"name", "conv1"}, {"lr", 0.1}, {"warm", true}.
struct arg {
  dftrace_arg_t value;
  template <typename T,
            typename std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  arg(const char *k, T v) : value{k, DFTRACE_ARG_INT, {}} {
    value.value.i = static_cast<int64_t>(v);
  }
  template <typename T, typename std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  arg(const char *k, T v) : value{k, DFTRACE_ARG_DOUBLE, {}} {
    value.value.d = static_cast<double>(v);
  }
  arg(const char *k, bool v) : value{k, DFTRACE_ARG_BOOL, {}} { value.value.b = v; }
  arg(const char *k, const char *v) : value{k, DFTRACE_ARG_STRING, {}} { value.value.s = v; }
  arg(const char *k, const std::string &v) : arg(k, v.c_str()) {}
};
static_assert(sizeof(arg) == sizeof(dftrace_arg_t), "arg is a dftrace_arg_t");

// Per-use enable override: force a use on or off whatever the node's state.
enum class use {
  node_state = DFTRACE_USE_NODE_STATE,
  force_off = DFTRACE_FORCE_OFF,
  force_on = DFTRACE_FORCE_ON
};

// ---------------------------------------------------------------- scopes

// One region: begins when constructed, ends (writes its event) when destroyed. Move-only.
class scope {
 public:
  scope() = default;
  explicit scope(dftrace_node_t *n) : r_(detail::begin(n)) {}
  scope(dftrace_node_t *n, std::initializer_list<arg> args, use enable = use::node_state)
      : r_(detail::begin_ex(n, static_cast<int>(enable),
                            args.size() ? &args.begin()->value : nullptr, args.size())) {}
  scope(const scope &) = delete;
  scope &operator=(const scope &) = delete;
  scope(scope &&o) noexcept : r_(std::exchange(o.r_, 0)) {}
  scope &operator=(scope &&o) noexcept {
    if (this != &o) {
      detail::end(r_);
      r_ = std::exchange(o.r_, 0);
    }
    return *this;
  }
  ~scope() { detail::end(r_); }

  // Adds or replaces a per-use argument while the region is the innermost one.
  template <typename T>
  scope &arg(const char *key, T v) {
#ifndef DFTRACE_DISABLE
    if (!r_) return *this;
    if constexpr (std::is_same_v<T, bool>)
      dftrace_region_arg_bool(r_, key, v);
    else if constexpr (std::is_integral_v<T>)
      dftrace_region_arg_int(r_, key, static_cast<int64_t>(v));
    else if constexpr (std::is_floating_point_v<T>)
      dftrace_region_arg_double(r_, key, static_cast<double>(v));
    else
      dftrace_region_arg_string(r_, key, std::string(v).c_str());
#else
    (void)key;
    (void)v;
#endif
    return *this;
  }
  // Ends now instead of at destruction.
  void end() { detail::end(std::exchange(r_, 0)); }
  // Drops the region without writing it.
  void cancel() {
#ifndef DFTRACE_DISABLE
    if (r_) dftrace_region_cancel(std::exchange(r_, 0));
#endif
  }
  bool recording() const { return r_ != 0; }
  dftrace_region_t id() const { return r_; }

 private:
  dftrace_region_t r_ = 0;
};

// ---------------------------------------------------------------- iteration

struct iter_options {
  bool include_iter = true;
  bool include_block = true;
  const char *iter_name = nullptr;   // verbatim replacement of "<n>.iter"
  const char *block_name = nullptr;  // verbatim replacement of "<n>.block"
  use enable = use::node_state;
};

// Wraps a range: per item one "<n>.iter" event (obtaining it) and one "<n>.block" event (the
// loop body), with count = 1, 2, ... Leaving the loop early (break, return, exception) ends
// the open block; a fetch that produced no item is not written.
template <typename Range>
class iter_range {
 public:
  iter_range(dftrace_node_t *n, Range &&r, iter_options o) : range_(std::forward<Range>(r)) {
#ifndef DFTRACE_DISABLE
    const uint32_t no_iter = DFTRACE_ITER_NO_ITER, no_block = DFTRACE_ITER_NO_BLOCK;
    uint32_t flags = (o.include_iter ? 0u : no_iter) | (o.include_block ? 0u : no_block);
    dftrace_iter_begin(&state_, n, flags, o.iter_name, o.block_name, static_cast<int>(o.enable));
#else
    (void)n;
    (void)o;
#endif
  }
  iter_range(const iter_range &) = delete;
  iter_range &operator=(const iter_range &) = delete;
  ~iter_range() { finish(); }

  using base_iterator = decltype(std::begin(std::declval<std::remove_reference_t<Range> &>()));
  using base_sentinel = decltype(std::end(std::declval<std::remove_reference_t<Range> &>()));

  class iterator {
   public:
    iterator(iter_range *owner, base_iterator it) : owner_(owner), it_(std::move(it)) {}
    decltype(auto) operator*() {
      owner_->body();
      return *it_;
    }
    iterator &operator++() {
      owner_->fetch();
      ++it_;
      return *this;
    }
    bool operator!=(const base_sentinel &end) {
      if (it_ != end) return true;
      owner_->finish();
      return false;
    }

   private:
    iter_range *owner_;
    base_iterator it_;
  };

  iterator begin() {
    fetch();
    return iterator(this, std::begin(range_));
  }
  base_sentinel end() { return std::end(range_); }

 private:
  void fetch() {
#ifndef DFTRACE_DISABLE
    dftrace_iter_fetch(&state_);
    in_body_ = false;
#endif
  }
  void body() {
#ifndef DFTRACE_DISABLE
    if (!in_body_) {
      dftrace_iter_body(&state_);
      in_body_ = true;
    }
#endif
  }
  void finish() {
#ifndef DFTRACE_DISABLE
    dftrace_iter_end(&state_);
#endif
  }

  Range range_;
#ifndef DFTRACE_DISABLE
  dftrace_iter_t state_{};
  bool in_body_ = false;
#endif
};

// Python's range(count) for node.iter(count): 0, 1, ..., count - 1; nothing when count <= 0.
template <typename Int>
class count_range {
 public:
  class iterator {
   public:
    constexpr explicit iterator(Int i) : i_(i) {}
    constexpr Int operator*() const { return i_; }
    constexpr iterator &operator++() {
      ++i_;
      return *this;
    }
    constexpr bool operator!=(const iterator &o) const { return i_ != o.i_; }
    constexpr bool operator==(const iterator &o) const { return i_ == o.i_; }

   private:
    Int i_;
  };
  constexpr explicit count_range(Int count) : count_(count > Int(0) ? count : Int(0)) {}
  constexpr iterator begin() const { return iterator(Int(0)); }
  constexpr iterator end() const { return iterator(count_); }

 private:
  Int count_;
};

namespace detail {
template <typename T>
constexpr bool is_count_v =
    std::is_integral_v<std::decay_t<T>> && !std::is_same_v<std::decay_t<T>, bool>;
}  // namespace detail

// ---------------------------------------------------------------- nodes

// A node of the tree, named by its dotted path and looked up on first use (so that static
// instances cost nothing before dftrace is loaded). Cheap to copy.
class node {
 public:
  constexpr explicit node(const char *path) : path_(path) {}
  explicit node(dftrace_node_t *h) : path_(nullptr) { handle_.store(h, std::memory_order_relaxed); }
  node(const node &o) : path_(o.path_) { handle_.store(o.handle_.load(std::memory_order_relaxed)); }
  node &operator=(const node &o) {
    path_ = o.path_;
    handle_.store(o.handle_.load(std::memory_order_relaxed));
    return *this;
  }

  dftrace_node_t *handle() const {
    dftrace_node_t *h = handle_.load(std::memory_order_acquire);
    if (__builtin_expect(h != nullptr, 1)) return h;
    return resolve();
  }

  // A region on this node: `auto s = node.scope();` or with per-use arguments and override.
  [[nodiscard]] dftrace::scope scope() const { return dftrace::scope(handle()); }
  [[nodiscard]] dftrace::scope scope(std::initializer_list<arg> args,
                                     use enable = use::node_state) const {
    return dftrace::scope(handle(), args, enable);
  }
  [[nodiscard]] dftrace::scope scope(use enable) const {
    return dftrace::scope(handle(), {}, enable);
  }

  // Range adaptor: for (auto &x : node.iter(range)) ...
  template <typename Range, typename = std::enable_if_t<!detail::is_count_v<Range>>>
  iter_range<Range> iter(Range &&r, iter_options o = {}) const {
    return iter_range<Range>(handle(), std::forward<Range>(r), o);
  }
  // A count, as Python's range(count): for (int epoch : node.iter(3)) gives 0, 1, 2.
  template <typename Int, typename = std::enable_if_t<detail::is_count_v<Int>>, typename = void>
  iter_range<count_range<std::decay_t<Int>>> iter(Int count, iter_options o = {}) const {
    return iter_range<count_range<std::decay_t<Int>>>(handle(),
                                                      count_range<std::decay_t<Int>>(count), o);
  }

  // Decorator-like wrapper: returns a callable that runs f inside a region on this node.
  template <typename F>
  auto wrap(F f) const {
    node self = *this;
    return [self, f = std::move(f)](auto &&...a) -> decltype(auto) {
      auto s = self.scope();
      return f(std::forward<decltype(a)>(a)...);
    };
  }

  // start()/stop() pairs for hooks that can not hold a scope, on the runtime's stack of the
  // calling thread (dftrace_node_start/_stop): stop() ends the innermost open region of this
  // node on the calling thread; without one it does nothing.
  void start() const { detail::start(handle()); }
  void stop() const { detail::stop(handle()); }

  // Metadata (streaming) mode: CM lines "<n>.start" / "<n>.end" instead of an event.
  void mark_start() const {
#ifndef DFTRACE_DISABLE
    dftrace_node_mark_start(handle());
#endif
  }
  void mark_end() const {
#ifndef DFTRACE_DISABLE
    dftrace_node_mark_end(handle());
#endif
  }

  node child(const char *name) const { return node(detail::child(handle(), name)); }
  node derive(const char *name) const { return node(detail::derive(handle(), name)); }
  // The "<n>.init" node (constructors, set-up phases).
  node init_node() const { return derive("init"); }

  void enable() const {
#ifndef DFTRACE_DISABLE
    dftrace_node_enable(handle());
#endif
  }
  void disable() const {
#ifndef DFTRACE_DISABLE
    dftrace_node_disable(handle());
#endif
  }
  bool enabled() const { return detail::active(handle()); }

  // Sets an argument on this node's whole subtree; nullptr string removes it.
  template <typename T>
  const node &update(const char *key, T v) const {
    if constexpr (std::is_same_v<std::decay_t<T>, std::nullptr_t>)
      return update({arg(key, static_cast<const char *>(nullptr))});
    else if constexpr (std::is_arithmetic_v<T>)
      return update({arg(key, v)});
    else
      return update({arg(key, std::string(v))});
  }
  // Several arguments in one pass: ai.update({{"epoch", e}, {"step", s}}).
  const node &update(std::initializer_list<arg> args) const {
#ifndef DFTRACE_DISABLE
    dftrace_node_update_args(handle(), args.size() ? &args.begin()->value : nullptr, args.size());
#else
    (void)args;
#endif
    return *this;
  }
  const node &remove(const char *key) const {
#ifndef DFTRACE_DISABLE
    dftrace_node_update_remove(handle(), key);
#else
    (void)key;
#endif
    return *this;
  }

  const char *path() const { return path_; }

 private:
  // First use: look the path up (or create it), out of line so that the use site stays short.
  __attribute__((noinline, cold)) dftrace_node_t *resolve() const {
    dftrace_node_t *h = path_ ? detail::find(path_) : nullptr;
    if (!h && path_) h = make(path_);
    if (h) handle_.store(h, std::memory_order_release);
    return h;
  }
  // A path not in the built-in tree: create its category and children on first use.
  static dftrace_node_t *make(const char *path) {
#ifndef DFTRACE_DISABLE
    std::string p(path);
    size_t dot = p.find('.');
    dftrace_node_t *n = dftrace_category(p.substr(0, dot).c_str());
    while (n && dot != std::string::npos) {
      size_t next = p.find('.', dot + 1);
      n = dftrace_node_child(
          n, p.substr(dot + 1, next == std::string::npos ? std::string::npos : next - dot - 1)
                 .c_str());
      dot = next;
    }
    return n;
#else
    (void)path;
    return nullptr;
#endif
  }

  const char *path_;
  mutable std::atomic<dftrace_node_t *> handle_{nullptr};
};

// ---------------------------------------------------------------- the AI tree

// Mirrors pydftracer's `ai`: dftrace::ai.compute.forward, dftrace::ai.comm.all_reduce, ...
// Each member is a node; categories are nodes too (dftrace::ai.compute.scope()). One struct
// `<cat>_t` per category with one member per built-in event, expanded from the tree's one table
// (dftrace/ai_tree.def, which lists every name).
struct ai_tree : node {
#define DFTRACE_AI_CATEGORY(c, py_enum) \
  struct c##_t : node {                 \
    constexpr c##_t() : node(#c) {}
#define DFTRACE_AI_EVENT(c, e) node e{#c "." #e};
#define DFTRACE_AI_CATEGORY_END(c) \
  }                                \
  c;
#include "dftrace/ai_tree.def"
  constexpr ai_tree() : node("ai") {}
};

// The root; ai.update(...) reaches every node, ai.disable() switches everything off.
inline ai_tree ai;

}  // namespace dftrace

// ---------------------------------------------------------------- macros

#define DFTRACE_CAT_(a, b) a##b
#define DFTRACE_CAT(a, b) DFTRACE_CAT_(a, b)

#ifndef DFTRACE_DISABLE
// A region on the node at `path` until the end of the enclosing block.
#define DFTRACE_REGION(path)                                               \
  static const ::dftrace::node DFTRACE_CAT(dftrace_node_, __LINE__){path}; \
  ::dftrace::scope DFTRACE_CAT(dftrace_scope_,                             \
                               __LINE__)(DFTRACE_CAT(dftrace_node_, __LINE__).handle())
// A region named after the enclosing function, in category `cat`.
#define DFTRACE_FUNCTION(cat)                                       \
  static dftrace_node_t *const DFTRACE_CAT(dftrace_fn_, __LINE__) = \
      dftrace_node_child(dftrace_category(cat), __func__);          \
  ::dftrace::scope DFTRACE_CAT(dftrace_scope_, __LINE__)(DFTRACE_CAT(dftrace_fn_, __LINE__))
#else
#define DFTRACE_REGION(path) \
  do {                       \
  } while (0)
#define DFTRACE_FUNCTION(cat) \
  do {                        \
  } while (0)
#endif

#endif  // DFTRACE_DFTRACE_HPP
