// tree.cpp: node creation, lookup, enable state and argument propagation.
#include "tree/tree.hpp"

#include <algorithm>
#include <cstring>

#include "base/format.hpp"

namespace dftrace::detail {

// ---------------------------------------------------------------- arg_store

arg_store::arg_store() {
  auto b = std::make_unique<block>();
  b->words = 8;
  b->data.reset(new std::atomic<uint64_t>[b->words]);
  for (size_t i = 0; i < b->words; ++i) b->data[i].store(0, std::memory_order_relaxed);
  block_.store(b.get(), std::memory_order_relaxed);
  blocks_.push_back(std::move(b));
}

void arg_store::store(std::string_view fragment) {
  const size_t need = (fragment.size() + 7) / 8;
  block *b = block_.load(std::memory_order_relaxed);
  const uint32_t s = seq_.load(std::memory_order_relaxed);
  seq_.store(s + 1, std::memory_order_relaxed);
#ifndef DFTRACE_TSAN
  std::atomic_thread_fence(std::memory_order_release);
#endif
  if (need > b->words) {
    auto nb = std::make_unique<block>();
    nb->words = std::max(need, b->words * 2);
    nb->data.reset(new std::atomic<uint64_t>[nb->words]);
    for (size_t i = 0; i < nb->words; ++i) nb->data[i].store(0, std::memory_order_relaxed);
    b = nb.get();
    blocks_.push_back(std::move(nb));
    block_.store(b, std::memory_order_release);
  }
  const size_t full = fragment.size() / 8;
  for (size_t i = 0; i < full; ++i) {
    uint64_t w;
    std::memcpy(&w, fragment.data() + i * 8, 8);  // fixed size: a load, not a call
    b->data[i].store(w, k_seq_data_store);
  }
  if (full < need) {
    uint64_t w = 0;
    std::memcpy(&w, fragment.data() + full * 8, fragment.size() - full * 8);
    b->data[full].store(w, k_seq_data_store);
  }
  len_.store(static_cast<uint32_t>(fragment.size()), k_seq_data_store);
  seq_.store(s + 2, std::memory_order_release);
}

// ---------------------------------------------------------------- tree

std::string escape_key(std::string_view key) {
  for (unsigned char c : key)
    if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') {
      const std::string q = json_quote(key);
      return q.substr(1, q.size() - 2);
    }
  return std::string(key);  // the common case: nothing to escape
}

std::string safe_arg_key(std::string_view key) {
  if (is_reserved_arg_key(key)) return std::string(k_reserved_arg_prefix) + std::string(key);
  return std::string(key);
}

namespace {

std::string make_name_cat(const std::string &name, const std::string &cat) {
  return ",\"name\":" + json_quote(name) + ",\"cat\":" + json_quote(cat);
}

// Splits "a.b.c" into segments; empty segments make the path invalid.
bool split_path(std::string_view path, std::vector<std::string_view> *out) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    if (dot == std::string_view::npos) dot = path.size();
    if (dot == start) return false;
    out->push_back(path.substr(start, dot - start));
    start = dot + 1;
  }
  return true;
}

}  // namespace

tree::tree() {
  root_ = std::make_unique<node>();
  root_->args_src.store(&root_->args, std::memory_order_release);
  root_->name = "ai_root";
  root_->cat = "ai_root";
  root_->name_cat = make_name_cat(root_->name, root_->cat);
  // The built-in tree, from its one table (include/dftrace/ai_tree.def), in the table's order.
  node *cat = nullptr;
#define DFTRACE_AI_CATEGORY(c, py_enum) cat = make_child(root_.get(), #c, #c, false);
#define DFTRACE_AI_EVENT(c, e) make_child(cat, #e, #e, false);
#include "dftrace/ai_tree.def"
}

node *tree::make_child(node *parent, std::string_view key, std::string event_name, bool hidden) {
  auto n = std::make_unique<node>();
  n->parent = parent;
  n->key = std::string(key);
  n->name = std::move(event_name);
  n->cat = parent == root_.get() ? std::string(key) : parent->cat;
  n->path = parent == root_.get() ? std::string(key) : parent->path + "." + std::string(key);
  n->hidden = hidden;
  n->name_cat = make_name_cat(n->name, n->cat);
  n->user_enabled = parent->user_enabled;
  for (const auto &r : rules_)
    if (r.first == n->path) n->user_enabled = r.second;
  bool agg = parent->aggregate.load(std::memory_order_relaxed);
  for (const auto &r : agg_rules_)
    if (r.first == n->path) agg = r.second;
  n->aggregate.store(agg, std::memory_order_relaxed);
  n->same_args_as_parent = true;  // children start with exactly their parent's arguments
  n->args_src.store(parent->args_src.load(std::memory_order_relaxed), std::memory_order_release);
  n->active.store(should_be_active(n.get()), std::memory_order_relaxed);
  node *raw = n.get();
  parent->children.push_back(std::move(n));
  return raw;
}

namespace {

// The node under n at `rest`, a dotted path. A derived node's key may hold dots (a module path
// "transformer.h.0" derived from compute.forward): a child matches when its key is the rest up
// to a dot, or the whole rest; shorter keys are tried first, then longer ones.
node *find_under(node *n, std::string_view rest) {
  for (size_t end = rest.find('.');; end = rest.find('.', end + 1)) {
    const std::string_view key = rest.substr(0, end);
    for (auto &c : n->children) {
      if (c->hidden || c->key != key) continue;
      if (end == std::string_view::npos) return c.get();
      if (node *hit = find_under(c.get(), rest.substr(end + 1))) return hit;
    }
    if (end == std::string_view::npos) return nullptr;
  }
}

}  // namespace

node *tree::find_locked(std::string_view path) {
  if (path.empty() || path == "ai") return root_.get();
  if (path.size() > 3 && path.substr(0, 3) == "ai.") path.remove_prefix(3);
  std::vector<std::string_view> parts;
  if (!split_path(path, &parts)) return nullptr;  // an empty segment
  return find_under(root_.get(), path);
}

node *tree::find(std::string_view path) {
  std::lock_guard<std::mutex> lock(mu_);
  return find_locked(path);
}

node *tree::category(std::string_view name) {
  if (name.empty()) return nullptr;
  return child(root_.get(), name);
}

node *tree::child(node *parent, std::string_view name) {
  if (!parent || name.empty()) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto &c : parent->children)
    if (!c->hidden && c->key == name) return c.get();
  return make_child(parent, name, std::string(name), false);
}

node *tree::derive(node *parent, std::string_view name) {
  if (!parent || name.empty()) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto &c : parent->children)
    if (!c->hidden && c->key == name) return c.get();
  std::string event =
      parent == root_.get() ? std::string(name) : parent->name + "." + std::string(name);
  return make_child(parent, name, std::move(event), false);
}

node *tree::verbatim(node *parent, std::string_view event_name) {
  if (!parent || event_name.empty()) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto &c : parent->children)
    if (c->hidden && c->name == event_name) return c.get();
  return make_child(parent, "#" + std::string(event_name), std::string(event_name), true);
}

node *tree::derived_once(std::atomic<node *> &slot, node *n, std::string_view suffix) {
  node *d = slot.load(std::memory_order_acquire);
  if (!d) {
    d = derive(n, suffix);
    slot.store(d, std::memory_order_release);
  }
  return d;
}

node *tree::iter_of(node *n) { return derived_once(n->iter_node, n, "iter"); }

node *tree::block_of(node *n) { return derived_once(n->block_node, n, "block"); }

bool tree::in_scope(const node *n) const {
  return std::find(scope_.begin(), scope_.end(), n->cat) != scope_.end();
}

void tree::refresh_active(node *n) {
  n->active.store(should_be_active(n), std::memory_order_relaxed);
  for (auto &c : n->children) refresh_active(c.get());
}

void tree::set_enabled_locked(node *n, bool on) {
  n->user_enabled = on;
  n->active.store(should_be_active(n), std::memory_order_relaxed);
  for (auto &c : n->children) set_enabled_locked(c.get(), on);
}

void tree::set_enabled(node *n, bool on) {
  if (!n) return;
  std::lock_guard<std::mutex> lock(mu_);
  set_enabled_locked(n, on);
}

void tree::set_recording(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  recording_ = on;
  refresh_active(root_.get());
}

void tree::set_scope(std::vector<std::string> categories) {
  std::lock_guard<std::mutex> lock(mu_);
  scope_ = std::move(categories);
  refresh_active(root_.get());
}

void tree::set_aggregation(bool all, std::vector<std::pair<std::string, bool>> rules) {
  std::lock_guard<std::mutex> lock(mu_);
  agg_all_ = all;
  agg_rules_.clear();
  for (auto &r : rules) {  // paths as nodes name them ("ai." dropped)
    std::string p = r.first;
    if (p.size() > 3 && p.compare(0, 3, "ai.") == 0) p.erase(0, 3);
    agg_rules_.emplace_back(std::move(p), r.second);
  }
  apply_aggregation_locked(root_.get(), all);
}

void tree::apply_aggregation_locked(node *n, bool inherited) {
  bool agg = inherited;
  for (const auto &r : agg_rules_)
    if (r.first == n->path) agg = r.second;  // later rules win
  n->aggregate.store(agg, std::memory_order_relaxed);
  for (auto &c : n->children) apply_aggregation_locked(c.get(), agg);
}

void tree::set_rules(std::vector<std::pair<std::string, bool>> rules) {
  // Most specific last, so that "-comm,+comm.all_reduce" leaves all_reduce on whatever the
  // order in the file; rules of equal depth keep their order (later wins).
  std::stable_sort(rules.begin(), rules.end(), [](const auto &a, const auto &b) {
    return std::count(a.first.begin(), a.first.end(), '.') <
           std::count(b.first.begin(), b.first.end(), '.');
  });
  std::lock_guard<std::mutex> lock(mu_);
  rules_ = rules;
  for (const auto &r : rules_) {
    node *n = find_locked(r.first);
    if (!n) {
      // A category or node the application has not created yet: create it, so that the
      // rule holds when the application reaches it.
      std::vector<std::string_view> parts;
      std::string_view p = r.first;
      if (p.size() > 3 && p.substr(0, 3) == "ai.") p.remove_prefix(3);
      if (!split_path(p, &parts)) continue;
      n = root_.get();
      for (auto part : parts) {
        node *next = nullptr;
        for (auto &c : n->children)
          if (!c->hidden && c->key == part) next = c.get();
        if (!next) next = make_child(n, part, std::string(part), false);
        n = next;
      }
    }
    set_enabled_locked(n, r.second);
  }
}

void tree::rebuild_args_into(const std::vector<std::pair<std::string, std::string>> &list,
                             std::string &frag) {
  frag.clear();  // capacity kept: no allocation once warm
  for (const auto &kv : list) {
    if (!frag.empty()) frag += ',';
    frag += '"';
    frag += kv.first;
    frag += "\":";
    frag += kv.second;
  }
}

void tree::rebuild_args(node *n, std::string &frag) {
  rebuild_args_into(n->arg_list, frag);
  n->args.store(frag);
}

const std::vector<std::pair<std::string, std::string>> &tree::effective_args(const node *n) {
  while (n->same_args_as_parent && n->parent) n = n->parent;
  return n->arg_list;
}

void tree::update_locked(node *n, const std::vector<change> &changes, bool top) {
  if (!top && n->same_args_as_parent) {
    // Same arguments as the parent, which was just updated: its events read the parent's
    // source; only descendants with lists of their own need work.
    for (auto &c : n->children)
      if (c->lists_in_subtree) update_locked(c.get(), changes, false);
    return;
  }
  for (const auto &change : changes) {
    // (Not a structured binding: clang 14, which builds the fuzz targets, can not capture one.)
    const auto &key = change.first;
    const auto &value = change.second;
    auto it = std::find_if(n->arg_list.begin(), n->arg_list.end(),
                           [&](const auto &kv) { return kv.first == key; });
    if (value) {
      if (it != n->arg_list.end())
        it->second.assign(*value);  // reuses the capacity
      else
        n->arg_list.emplace_back(key, *value);
    } else if (it != n->arg_list.end()) {
      n->arg_list.erase(it);
    }
  }
  rebuild_args(n, frag_);
  for (auto &c : n->children)
    if (c->lists_in_subtree) update_locked(c.get(), changes, false);
}

void tree::update_many(node *n, const std::vector<change> &changes) {
  if (!n || changes.empty()) return;
  std::vector<change> escaped;
  escaped.reserve(changes.size());
  for (const auto &c : changes) {
    if (c.first.empty()) continue;
    escaped.emplace_back(escape_key(safe_arg_key(c.first)), c.second);  // stored escaped, unquoted
  }
  std::lock_guard<std::mutex> lock(mu_);
  // The updated node now differs from its parent (unless it is the root); its descendants
  // keep their relation to their own parents, since all of them get the same changes.
  const bool becomes_own = n->same_args_as_parent && n->parent;
  if (becomes_own) {
    n->arg_list = effective_args(n->parent);  // it gets a list of its own now
    n->same_args_as_parent = false;
    for (node *x = n; x; x = x->parent) ++x->lists_in_subtree;
  }
  update_locked(n, escaped, true);
  if (becomes_own) {  // its fragment is complete: events of n and its sharers now read it
    n->args_src.store(&n->args, std::memory_order_release);
    repoint_sharing(n);
  }
}

void tree::repoint_sharing(node *n) {
  const arg_store *src = n->args_src.load(std::memory_order_relaxed);
  for (auto &c : n->children) {
    if (!c->same_args_as_parent) continue;
    c->args_src.store(src, std::memory_order_release);
    repoint_sharing(c.get());
  }
}

void tree::update(node *n, std::string_view key, std::optional<std::string_view> json_value) {
  if (!n || key.empty()) return;
  std::vector<change> one;
  one.emplace_back(std::string(key), json_value
                                         ? std::optional<std::string>(std::string(*json_value))
                                         : std::nullopt);
  update_many(n, one);
}

}  // namespace dftrace::detail
