/* nvtx_recorder.c: an NVTX tool of the test's own. NVTX loads it from NVTX_INJECTION64_PATH
 * and calls InitializeInjectionNvtx2, where it fills the NVTX domain entry points it records.
 * Each call becomes one line in the file named by NVTX_RECORD_FILE ("<tid> <what> ..."), written
 * with one write(2) so that threads do not interleave within a line. Without NVTX_RECORD_FILE
 * the calls are only counted (the benchmark's "a tool is attached"). With
 * NVTX_RECORD_SWITCH_OFF_AT=MESSAGE, the push of a range of that message switches dftrace off
 * (dftrace_set_enabled, found in the process) before it returns: a switch that comes between
 * dftrace's check that it records and the region's clock read, as another thread's may. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

static int g_fd = -1;
static atomic_ulong g_calls;
static const char *g_switch_off_at; /* NVTX_RECORD_SWITCH_OFF_AT, read once */

static void record(const char *fmt, const char *what, unsigned a, const char *text) {
  atomic_fetch_add_explicit(&g_calls, 1, memory_order_relaxed);
  if (g_fd < 0) return;
  char line[1024];
  int n = snprintf(line, sizeof line, "%ld ", (long)syscall(SYS_gettid));
  n += snprintf(line + n, sizeof line - (size_t)n, fmt, what, a, text ? text : "");
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  if (write(g_fd, line, (size_t)n) < 0) abort();
}

/* A registered string handle is the string itself, copied. */
static const char *message_of(const nvtxEventAttributes_t *a) {
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_REGISTERED: return (const char *)a->message.registered;
    case NVTX_MESSAGE_TYPE_ASCII: return a->message.ascii;
    default: return "?";
  }
}

static nvtxDomainHandle_t domain_create(const char *name) {
  record("%s %u %s", "domain", 0, name);
  return (nvtxDomainHandle_t)strdup(name);
}
static nvtxStringHandle_t register_string(nvtxDomainHandle_t d, const char *s) {
  (void)d;
  record("%s %u %s", "string", 0, s);
  return (nvtxStringHandle_t)strdup(s);
}
static void name_category(nvtxDomainHandle_t d, uint32_t id, const char *name) {
  (void)d;
  record("%s %u %s", "category", id, name);
}
static int range_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  (void)d;
  record("%s %u %s", "push", a->category, message_of(a));
  if (g_switch_off_at && strcmp(g_switch_off_at, message_of(a)) == 0) {
    void (*set_enabled)(bool) = (void (*)(bool))dlsym(RTLD_DEFAULT, "dftrace_set_enabled");
    if (!set_enabled) abort();
    set_enabled(false);
    record("%s %u %s", "switched-off", 0, "");
  }
  return 0;
}
static int range_pop(nvtxDomainHandle_t d) {
  (void)d;
  record("%s %u %s", "pop", 0, "");
  return 0;
}
static void mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  (void)d;
  record("%s %u %s", "mark", a->category, message_of(a));
}

static void set_slot(NvtxFunctionTable table, unsigned size, unsigned id, NvtxFunctionPointer f) {
  if (id < size && table[id]) *table[id] = f;
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  const char *path = getenv("NVTX_RECORD_FILE");
  if (path && *path) g_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  g_switch_off_at = getenv("NVTX_RECORD_SWITCH_OFF_AT");
  const NvtxExportTableCallbacks *cb =
      (const NvtxExportTableCallbacks *)get_export_table(NVTX_ETID_CALLBACKS);
  NvtxFunctionTable table = 0;
  unsigned size = 0;
  if (!cb || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) || !table) return 0;
  set_slot(table, size, NVTX_CBID_CORE2_DomainCreateA, (NvtxFunctionPointer)domain_create);
  set_slot(table, size, NVTX_CBID_CORE2_DomainRegisterStringA,
           (NvtxFunctionPointer)register_string);
  set_slot(table, size, NVTX_CBID_CORE2_DomainNameCategoryA, (NvtxFunctionPointer)name_category);
  set_slot(table, size, NVTX_CBID_CORE2_DomainRangePushEx, (NvtxFunctionPointer)range_push);
  set_slot(table, size, NVTX_CBID_CORE2_DomainRangePop, (NvtxFunctionPointer)range_pop);
  set_slot(table, size, NVTX_CBID_CORE2_DomainMarkEx, (NvtxFunctionPointer)mark);
  record("%s %u %s", "init", 0, "");
  return 1;
}

/* For the benchmark: how many calls the tool received. */
__attribute__((visibility("default"))) unsigned long nvtx_recorder_calls(void) {
  return atomic_load(&g_calls);
}
