/* nvml_stub.c: a stand-in for libnvidia-ml with the entry points the telemetry probe uses: two
 * devices whose readings are fixed (device i: utilisation 70 + i %, memory 10 + 2i %, 80 GiB of
 * which 2 + i GiB used). Only for tests/unit/telemetry on machines without NVIDIA's library. */
typedef struct {
  unsigned gpu, memory;
} stub_utilization;
typedef struct {
  unsigned long long total, free, used;
} stub_memory;

static int devices[2];

int nvmlInit_v2(void) { return 0; }
int nvmlShutdown(void) { return 0; }
int nvmlDeviceGetCount_v2(unsigned *n) {
  *n = 2;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **dev) {
  if (i >= 2) return 2;
  *dev = &devices[i];
  return 0;
}
int nvmlDeviceGetUtilizationRates(void *dev, stub_utilization *u) {
  const unsigned i = (unsigned)((int *)dev - devices);
  u->gpu = 70 + i;
  u->memory = 10 + 2 * i;
  return 0;
}
int nvmlDeviceGetMemoryInfo(void *dev, stub_memory *m) {
  const unsigned long long i = (unsigned long long)((int *)dev - devices);
  m->total = 80ull << 30;
  m->used = (2 + i) << 30;
  m->free = m->total - m->used;
  return 0;
}
