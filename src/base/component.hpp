// component.hpp: loading a private helper library (a "component") that libdftrace keeps out of
// every process's start: it is opened only when its job comes up (a YAML file to parse, a host
// where hwloc is needed).
#pragma once

#include <mutex>
#include <string>

namespace dftrace::detail {

// dlopen()s `name` (RTLD_NOW | RTLD_LOCAL) from the folder of the object this code is linked
// into (libdftrace's own folder: the component built or installed beside it, never another copy
// on the loader's path); only where that folder can not be told does the loader's path decide.
// Null with *why set ("libdftrace_yaml.so: cannot open shared object file ...") when it can not
// be loaded. Never throws.
void *open_component(const char *name, std::string *why);

// The address of `symbol` in a component opened by open_component, or null with *why set.
void *component_symbol(void *component, const char *symbol, std::string *why);

// One entry point of a component, opened and looked up the first time get() is called (once,
// thread-safe); later calls return the same address, or null with the same *why.
class component_entry {
 public:
  component_entry(const char *name, const char *symbol) : name_(name), symbol_(symbol) {}
  void *get(std::string *why);

 private:
  const char *name_, *symbol_;
  std::once_flag once_;
  void *address_ = nullptr;
  std::string failure_;
};

}  // namespace dftrace::detail
