// bind.cpp: the application mode (README.md, "Two ways in"): a process that initialises dftrace
// without preloading this library gets its calls routed here by rewriting the entries of every
// loaded object's global offset table that name an interposed function, as the dynamic linker
// would have bound them had the library been preloaded. Libraries loaded later (dlopen) are
// bound when they load.
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "plugins/io/interpose.hpp"
#include "plugins/io/paths.hpp"

using namespace dftrace::io;

namespace {

#if defined(__x86_64__)
constexpr uint32_t k_jump_slot = R_X86_64_JUMP_SLOT, k_glob_dat = R_X86_64_GLOB_DAT,
                   k_abs64 = R_X86_64_64;
#elif defined(__aarch64__)
constexpr uint32_t k_jump_slot = R_AARCH64_JUMP_SLOT, k_glob_dat = R_AARCH64_GLOB_DAT,
                   k_abs64 = R_AARCH64_ABS64;
#else
#define DFTRACE_IO_NO_BIND 1
#endif

// Objects never rebound: the C library and the loader (whose own calls are internal), the
// kernel's vDSO, and dftrace's own libraries (their I/O is the trace's).
bool skipped(std::string_view name) {
  const std::string_view base =
      name.substr(name.rfind('/') == std::string_view::npos ? 0 : name.rfind('/') + 1);
  for (const char *prefix : {"libc.so", "ld-linux", "ld64.so", "linux-vdso", "linux-gate",
                             "libdftrace", "libdl.so", "libpthread.so"})
    if (base.substr(0, std::strlen(prefix)) == prefix) return true;
  return false;
}

// Where the entries naming a function go (`to`), and the address the loader gave them (`from`:
// the definition a global lookup finds; null when unknown). Never destroyed (as the rules are
// not): a dlopen made by an exit handler or a destructor still finds them.
struct target {
  void *to;
  void *from;
};
std::unordered_map<std::string_view, target> &targets() {
  static auto *t = new std::unordered_map<std::string_view, target>;
  return *t;
}

// An object's writable segments (PT_LOAD with PF_W; RELRO lies in one): an absolute
// relocation is rewritten only there (a text relocation's page stays as the loader left it).
struct writable_ranges {
  uintptr_t start[8] = {}, end[8] = {};
  int n = 0;
  bool contain(uintptr_t a) const {
    for (int i = 0; i < n; ++i)
      if (a >= start[i] && a + sizeof(void *) <= end[i]) return true;
    return false;
  }
};

std::mutex g_bind_mutex;
// (load address, program headers) of the objects bound; never destroyed either
std::set<std::pair<uintptr_t, const void *>> &bound() {
  static auto *b = new std::set<std::pair<uintptr_t, const void *>>;
  return *b;
}
unsigned long long g_subs = 0;  // objects unloaded, as last seen

// The relocated address a dynamic entry points at (glibc relocates them in place on most
// architectures; others leave them relative to the load address).
uintptr_t dyn_address(uintptr_t base, uintptr_t value) {
  return value < base ? value + base : value;
}

// Writes `to` into the entry at `slot`, making its page writable for the moment when the entry
// lies in the part the loader made read-only after relocation (RELRO). The loader protects
// only RELRO's whole pages: its last, partial page (on AArch64 with 16 or 64 KiB pages, often
// all of it) shares a page with writable data and stays writable, so it is written as it is.
void write_slot(void **slot, void *to, uintptr_t relro_start, uintptr_t relro_end) {
  if (*slot == to) return;
  const auto a = reinterpret_cast<uintptr_t>(slot);
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  if (a >= relro_start && a < (relro_end & ~(page - 1))) {
    void *start = reinterpret_cast<void *>(a & ~(page - 1));
    if (::mprotect(start, page, PROT_READ | PROT_WRITE) != 0) return;  // left as it was
    *slot = to;
    ::mprotect(start, page, PROT_READ);
  } else {
    *slot = to;
  }
}

// Rewrites the entries of one object's relocation table `rela` (n entries): its global offset
// table's (JUMP_SLOT, GLOB_DAT), and the absolute addresses of interposed functions in its data
// (R_X86_64_64, R_AARCH64_ABS64: a table of function pointers, as SQLite's aSyscall[]). An
// absolute one is rewritten only when it holds exactly the function's address as the loader
// bound it (addend 0), in a writable segment: data the application has changed since, or a
// pointer into the middle of a function, stays as it is.
void bind_relocations(uintptr_t base, const ElfW(Rela) * rela, size_t n, const ElfW(Sym) * symtab,
                      const char *strtab, uintptr_t relro_start, uintptr_t relro_end,
                      const writable_ranges &writable) {
#ifndef DFTRACE_IO_NO_BIND
  for (size_t i = 0; i < n; ++i) {
    const uint32_t type = ELF64_R_TYPE(rela[i].r_info);
    if (type != k_jump_slot && type != k_glob_dat && type != k_abs64) continue;
    const size_t sym = ELF64_R_SYM(rela[i].r_info);
    if (sym == 0) continue;
    const auto it = targets().find(strtab + symtab[sym].st_name);
    if (it == targets().end()) continue;
    const uintptr_t where = base + rela[i].r_offset;
    if (type == k_abs64) {
      if (rela[i].r_addend != 0 || !it->second.from || !writable.contain(where) ||
          *reinterpret_cast<void *const *>(where) != it->second.from)
        continue;
    }
    write_slot(reinterpret_cast<void **>(where), it->second.to, relro_start, relro_end);
  }
#else
  (void)base, (void)rela, (void)n, (void)symtab, (void)strtab, (void)relro_start, (void)relro_end,
      (void)writable;
#endif
}

int bind_object(struct dl_phdr_info *info, size_t, void *) {
  const std::string_view name = info->dlpi_name ? info->dlpi_name : "";
  if (skipped(name)) return 0;
  if (!bound().insert({info->dlpi_addr, info->dlpi_phdr}).second) return 0;
  const uintptr_t base = info->dlpi_addr;
  const ElfW(Dyn) *dyn = nullptr;
  uintptr_t relro_start = 0, relro_end = 0;
  writable_ranges writable;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W) && writable.n < 8) {
      writable.start[writable.n] = base + ph.p_vaddr;
      writable.end[writable.n++] = base + ph.p_vaddr + ph.p_memsz;
    }
    if (ph.p_type == PT_DYNAMIC) dyn = reinterpret_cast<const ElfW(Dyn) *>(base + ph.p_vaddr);
    if (ph.p_type == PT_GNU_RELRO) {
      relro_start = base + ph.p_vaddr;
      relro_end = relro_start + ph.p_memsz;
    }
  }
  if (!dyn) return 0;
  const ElfW(Sym) *symtab = nullptr;
  const char *strtab = nullptr;
  const ElfW(Rela) *jmprel = nullptr, *rela = nullptr;
  size_t jmprel_size = 0, rela_size = 0;
  bool plt_is_rela = true;
  for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB:
        symtab = reinterpret_cast<const ElfW(Sym) *>(dyn_address(base, d->d_un.d_ptr));
        break;
      case DT_STRTAB:
        strtab = reinterpret_cast<const char *>(dyn_address(base, d->d_un.d_ptr));
        break;
      case DT_JMPREL:
        jmprel = reinterpret_cast<const ElfW(Rela) *>(dyn_address(base, d->d_un.d_ptr));
        break;
      case DT_PLTRELSZ: jmprel_size = d->d_un.d_val; break;
      case DT_PLTREL: plt_is_rela = d->d_un.d_val == DT_RELA; break;
      case DT_RELA:
        rela = reinterpret_cast<const ElfW(Rela) *>(dyn_address(base, d->d_un.d_ptr));
        break;
      case DT_RELASZ: rela_size = d->d_un.d_val; break;
      default: break;
    }
  }
  if (!symtab || !strtab) return 0;
  if (jmprel && plt_is_rela)
    bind_relocations(base, jmprel, jmprel_size / sizeof(ElfW(Rela)), symtab, strtab, relro_start,
                     relro_end, writable);
  if (rela)
    bind_relocations(base, rela, rela_size / sizeof(ElfW(Rela)), symtab, strtab, relro_start,
                     relro_end, writable);
  return 0;
}

int count_subs(struct dl_phdr_info *info, size_t size, void *data) {
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
    *static_cast<unsigned long long *>(data) = info->dlpi_subs;
  return 1;  // one object tells
}

// Binds every loaded object not bound yet (all of them again once any was unloaded: a new one
// may sit at an old one's address).
void bind_loaded() {
  std::lock_guard<std::mutex> lock(g_bind_mutex);
  unsigned long long subs = 0;
  ::dl_iterate_phdr(count_subs, &subs);
  if (subs != g_subs) {
    bound().clear();
    g_subs = subs;
  }
  ::dl_iterate_phdr(bind_object, nullptr);
}

using dlopen_fn = void *(*)(const char *, int);

// dlopen searches for a bare name in its caller's RPATH/RUNPATH directories; called from here it
// would search this library's. So a bare name not loaded yet is looked up in the caller's search
// path (dlinfo's RTLD_DI_SERINFO for the caller's object) and opened by its full path.
void *open_as_caller(void *caller, const char *name, int flags, dlopen_fn real) {
  if (void *loaded = real(name, RTLD_NOLOAD | (flags & (RTLD_LAZY | RTLD_NOW)))) {
    ::dlclose(loaded);  // loaded already: found by name, wherever it is
    return real(name, flags);
  }
  Dl_info info;
  struct link_map *map = nullptr;
  if (!::dladdr1(caller, &info, reinterpret_cast<void **>(&map), RTLD_DL_LINKMAP) || !map)
    return nullptr;
  Dl_serinfo size;
  if (::dlinfo(map, RTLD_DI_SERINFOSIZE, &size) != 0) return nullptr;
  std::vector<char> buffer(size.dls_size);
  auto *paths = reinterpret_cast<Dl_serinfo *>(buffer.data());
  paths->dls_size = size.dls_size;
  paths->dls_cnt = size.dls_cnt;
  if (::dlinfo(map, RTLD_DI_SERINFO, paths) != 0) return nullptr;
  for (unsigned i = 0; i < paths->dls_cnt; ++i) {
    const std::string candidate = std::string(paths->dls_serpath[i].dls_name) + "/" + name;
    if (::syscall(SYS_faccessat, AT_FDCWD, candidate.c_str(), F_OK) == 0)
      return real(candidate.c_str(), flags);
  }
  return nullptr;
}

// dlopen, as the application's objects call it once bound: the library loads as it would have,
// then it is bound too.
__attribute__((noinline)) void *io_dlopen(const char *name, int flags) {
  static const auto real = reinterpret_cast<dlopen_fn>(::dlsym(RTLD_NEXT, "dlopen"));
  void *caller = __builtin_return_address(0);
  void *h = nullptr;
  {
    inside g;  // the loader's own file accesses are not the application's
    errno_keeper keep;
    if (name && !std::strchr(name, '/')) h = open_as_caller(caller, name, flags, real);
  }
  if (!h) h = real(name, flags);
  if (h) {
    inside g;
    errno_keeper keep;
    bind_loaded();
  }
  return h;
}

// Whether a libdftrace_io is preloaded (this copy, or another one: an installed one beside a
// built one): the loader binds every call to it. The global scope is searched through the
// program's own handle (RTLD_DEFAULT, from here, would also search this copy's local scope).
bool preloaded() {
  void *program = ::dlopen(nullptr, RTLD_LAZY);
  const bool found = program && ::dlsym(program, "dftrace_io_bind");
  if (program) ::dlclose(program);
  return found;
}

// Sets the targets once (`to(s)`: where the entries naming s->name go, null to leave them;
// `from(s)`: the address the loader bound them to) and binds every loaded object to them;
// objects loaded later are bound by io_dlopen.
template <typename To, typename From>
void bind_all(To to, From from) {
  {
    std::lock_guard<std::mutex> lock(g_bind_mutex);
    if (targets().empty()) {
      for (symbol *s = symbol_list(); s; s = s->next)
        if (void *f = to(s)) targets()[s->name] = target{f, from(s)};
      targets()["dlopen"] = target{reinterpret_cast<void *>(&io_dlopen), nullptr};
    }
  }
  inside g;
  errno_keeper keep;
  bind_loaded();
}

// Whether the entries naming `name` stay this library's when the rest are given back: the calls
// that leave the process (the table's EXIT_OWN rows), so that the trace is still finalized.
bool stays_bound(const char *name) {
  static const char *const k_leaving[] = {
#define DFTRACE_IO_CALL(cat, symbol, event, shape, cls, bytes, types) \
  std::string_view(#shape) == "EXIT_OWN" ? #symbol : nullptr,
#include "dftrace/io_calls.def"
  };
  for (const char *n : k_leaving)
    if (n && std::strcmp(n, name) == 0) return true;
  return false;
}

}  // namespace

// The application mode's entry, called by libdftrace when it initialises with I/O tracing on
// (src/runtime/extensions.cpp): the rules, then every loaded object bound. 0: bound; 1: a
// libdftrace_io is preloaded (the loader binds it); -1: this architecture can not be bound.
extern "C" int dftrace_io_bind(const char *data_dirs, const char *exclude) {
  set_rules(data_dirs ? data_dirs : "", exclude ? exclude : "");
  if (preloaded()) return 1;
#ifdef DFTRACE_IO_NO_BIND
  return -1;
#else
  // The loader bound the objects' references to the global definition (the C library's), which
  // the program's handle finds (RTLD_DEFAULT, from here, would also search this copy).
  void *program = ::dlopen(nullptr, RTLD_LAZY);
  bind_all([](symbol *s) { return s->function; },
           [program](symbol *s) -> void * {
             void *global = program ? ::dlsym(program, s->name) : nullptr;
             return global == s->function ? nullptr : global;
           });
  if (program) ::dlclose(program);
  return 0;
#endif
}

// The opposite, for a preloaded libdftrace_io in a process whose I/O tracing is off by its
// configuration (src/runtime/extensions.cpp): every loaded object's entries of the I/O calls go
// back to the functions the loader would have bound without this library (the next definition:
// the C library's, HDF5's), so that a call costs nothing more than without dftrace. _exit and
// _Exit stay (stays_bound: the trace is finalized even so). Objects loaded later are unbound as
// they load. 0: unbound; 1: this copy is not preloaded (nothing to undo); -1: this architecture
// can not be.
extern "C" int dftrace_io_unbind(void) {
  if (!preloaded()) return 1;
#ifdef DFTRACE_IO_NO_BIND
  return -1;
#else
  bind_all(
      [](symbol *s) -> void * {
        if (stays_bound(s->name)) return nullptr;
        void *next = ::dlsym(RTLD_NEXT, s->name);  // null: HDF5's, not loaded (left as it is)
        return next == s->function ? nullptr : next;
      },
      [](symbol *s) { return s->function; });  // preloaded: the loader bound them here
  return 0;
#endif
}
