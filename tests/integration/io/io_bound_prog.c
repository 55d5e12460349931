/* io_bound_prog.c: where this program's calls of pread and _exit go, read from its own global
 * offset table (a PLT's JUMP_SLOT entry and the GLOB_DAT entry of a function pointer) and
 * from a library it dlopens afterwards (io_bound_lib.c): "libc" (the C library's function),
 * "interposer" (libdftrace_io's) or "unresolved" (a lazy PLT entry not called yet). Preloaded
 * with libdftrace_io and I/O tracing off, the I/O calls go back to libc and _exit stays
 * (test_io.py). Usage: io_bound_prog DIR LIB */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *jump_slot; /* the address the PLT entry of `wanted` jumps to */
static const char *wanted;

static int find_slot(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size, (void)data;
  if (info->dlpi_name && info->dlpi_name[0]) return 0; /* the program itself comes first */
  const ElfW(Dyn) *dyn = NULL;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  const ElfW(Sym) *sym = NULL;
  const char *str = NULL;
  const ElfW(Rela) *rel = NULL;
  size_t n = 0;
  for (; dyn && dyn->d_tag != DT_NULL; ++dyn) {
    if (dyn->d_tag == DT_SYMTAB) sym = (const ElfW(Sym) *)dyn->d_un.d_ptr;
    if (dyn->d_tag == DT_STRTAB) str = (const char *)dyn->d_un.d_ptr;
    if (dyn->d_tag == DT_JMPREL) rel = (const ElfW(Rela) *)dyn->d_un.d_ptr;
    if (dyn->d_tag == DT_PLTRELSZ) n = dyn->d_un.d_val / sizeof(ElfW(Rela));
  }
  for (size_t i = 0; sym && str && rel && i < n; ++i)
    if (strcmp(str + sym[ELF64_R_SYM(rel[i].r_info)].st_name, wanted) == 0)
      jump_slot = *(void **)(info->dlpi_addr + rel[i].r_offset);
  return 1;
}

static void *plt_target(const char *name) {
  wanted = name;
  jump_slot = NULL;
  dl_iterate_phdr(find_slot, NULL);
  return jump_slot;
}

static const char *who(void *f, const char *name) {
  void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
  void *io = dlsym(RTLD_DEFAULT, name); /* the preloaded interposer comes first */
  const char *w = !f                       ? "none"
                  : f == dlsym(libc, name) ? "libc"
                  : f == io                ? "interposer"
                                           : "unresolved";
  dlclose(libc);
  return w;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  char path[4096], buf[16];
  snprintf(path, sizeof path, "%s/file", argv[1]);
  int fd = open(path, O_CREAT | O_RDWR, 0644); /* the first call on a file initialises dftrace */
  if (fd < 0 || pwrite(fd, "0123456789", 10, 0) != 10 || pread(fd, buf, 4, 2) != 4) return 1;
  close(fd);
  /* pwrite is only called (a PLT entry, JUMP_SLOT); pread's address is also taken (GLOB_DAT) */
  printf("program pwrite jump_slot %s\n", who(plt_target("pwrite"), "pwrite"));
  ssize_t (*volatile pread_ptr)(int, void *, size_t, off_t) = pread;
  printf("program pread pointer %s\n", who((void *)pread_ptr, "pread"));
  void (*volatile exit_ptr)(int) = _exit;
  printf("program _exit pointer %s\n", who((void *)exit_ptr, "_exit"));
  void *lib = dlopen(argv[2], RTLD_NOW);
  void *(*pread_of)(void) = lib ? (void *(*)(void))dlsym(lib, "io_bound_lib_pread") : NULL;
  if (!pread_of) return 1;
  printf("library pread pointer %s\n", who(pread_of(), "pread"));
  fflush(stdout);
  _exit(0);
}
