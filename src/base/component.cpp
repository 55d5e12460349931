// component.cpp: dlopen() of a private helper library from libdftrace's own folder.
#include "base/component.hpp"

#include <dlfcn.h>

namespace dftrace::detail {

void *open_component(const char *name, std::string *why) {
  try {
    Dl_info info{};
    std::string path = name;
    if (::dladdr(reinterpret_cast<void *>(&open_component), &info) != 0 && info.dli_fname) {
      const std::string self = info.dli_fname;
      const auto slash = self.rfind('/');
      if (slash != std::string::npos) path = self.substr(0, slash + 1) + name;
    }
    if (void *lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
    const char *e = ::dlerror();
    *why = e ? e : path + ": could not be loaded";
  } catch (...) {
    *why = "out of memory";
  }
  return nullptr;
}

void *component_symbol(void *component, const char *symbol, std::string *why) {
  if (void *s = ::dlsym(component, symbol)) return s;
  try {
    *why = std::string("no ") + symbol + " in the component";
  } catch (...) {
  }
  return nullptr;
}

void *component_entry::get(std::string *why) {
  std::call_once(once_, [this] {
    if (void *lib = open_component(name_, &failure_))
      address_ = component_symbol(lib, symbol_, &failure_);
  });
  if (!address_) *why = failure_;
  return address_;
}

}  // namespace dftrace::detail
