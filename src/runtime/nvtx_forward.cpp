// nvtx_forward.cpp: the NVTX side of nvtx.forward (nvtx_forward.hpp). NVTX v3 is header-only:
// nothing is linked; at the first NVTX call, NVTX loads the tool named by NVTX_INJECTION64_PATH
// (Nsight Systems sets it) and, when there is none, every NVTX entry point becomes a no-op.
#include "runtime/nvtx_forward.hpp"

#include "base/log.hpp"

#if DFTRACE_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "tree/tree.hpp"
#endif

namespace dftrace::detail::nvtx_forward {

#if DFTRACE_HAVE_NVTX
namespace {

nvtxDomainHandle_t g_domain = nullptr;

// What a node's ranges carry, registered once per node.
struct node_handles {
  nvtxStringHandle_t message;  // the node's path (compute.forward)
  uint32_t category;           // one NVTX category per dftrace category, named after it
  uint32_t color;              // ARGB, by category
};

std::mutex g_mutex;  // categories, and handles being made
std::unordered_map<std::string, uint32_t> g_categories;

uint32_t color_of(const std::string &cat, uint32_t id) {
  static const std::pair<const char *, uint32_t> known[] = {
      {"compute", 0xFF4CAF50u},  {"data", 0xFF2196F3u},   {"dataloader", 0xFF00BCD4u},
      {"comm", 0xFFFF9800u},     {"device", 0xFFF44336u}, {"checkpoint", 0xFF9C27B0u},
      {"pipeline", 0xFFFFEB3Bu}, {"POSIX", 0xFF795548u},  {"STDIO", 0xFF607D8Bu}};
  for (const auto &k : known)
    if (cat == k.first) return k.second;
  static const uint32_t others[] = {0xFF8BC34Au, 0xFF3F51B5u, 0xFFE91E63u, 0xFF009688u};
  return others[id % (sizeof others / sizeof others[0])];
}

const node_handles &make_handles(node *n) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (void *p = n->forward.load(std::memory_order_acquire)) return *static_cast<node_handles *>(p);
  auto it = g_categories.find(n->cat);
  if (it == g_categories.end()) {
    const uint32_t id = static_cast<uint32_t>(g_categories.size() + 1);  // 0 means none
    it = g_categories.emplace(n->cat, id).first;
    nvtxDomainNameCategoryA(g_domain, id, n->cat.c_str());
  }
  const std::string &text = n->path.empty() ? n->name : n->path;
  auto *h = new node_handles{nvtxDomainRegisterStringA(g_domain, text.c_str()), it->second,
                             color_of(n->cat, it->second)};
  n->forward.store(h, std::memory_order_release);  // never freed: nodes live until exit
  return *h;
}

inline const node_handles &handles(node *n) {
  void *p = n->forward.load(std::memory_order_acquire);
  return __builtin_expect(p != nullptr, 1) ? *static_cast<const node_handles *>(p)
                                           : make_handles(n);
}

inline nvtxEventAttributes_t attributes(node *n) {
  const node_handles &h = handles(n);
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.category = h.category;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = h.color;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = h.message;
  return a;
}

}  // namespace

bool start(bool wanted) {
  if (!wanted) return false;
  static std::once_flag once;
  std::call_once(once, [] { g_domain = nvtxDomainCreateA("dftrace"); });
  if (!g_domain) {
    log_once(log_level::info, "nvtx-no-tool",
             "nvtx.forward: no NVTX tool is attached (none named by NVTX_INJECTION64_PATH); "
             "regions are not forwarded");
    return false;
  }
  return true;
}

void push(node *n) {
  const nvtxEventAttributes_t a = attributes(n);
  nvtxDomainRangePushEx(g_domain, &a);
}

void pop() { nvtxDomainRangePop(g_domain); }

void mark(node *n) {
  const nvtxEventAttributes_t a = attributes(n);
  nvtxDomainMarkEx(g_domain, &a);
}

#else  // built without the NVTX headers

bool start(bool wanted) {
  if (wanted)
    log_once(log_level::warn, "nvtx-no-headers",
             "nvtx.forward is set, but this dftrace was built without the NVTX v3 headers (the "
             "CUDA toolkit's nvtx3/); regions are not forwarded");
  return false;
}
void push(node *) {}
void pop() {}
void mark(node *) {}

#endif

}  // namespace dftrace::detail::nvtx_forward
