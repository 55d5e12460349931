// gpu_translate_test.cpp: CUPTI activity records built here -> the trace lines the GPU
// component writes, read back from the real trace file (no GPU, no CUPTI library needed).
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "base/gpu_kinds.hpp"
#include "dftrace/dftrace.h"
#include "plugins/gpu/activity_record.hpp"
#include "plugins/gpu/translate.hpp"

namespace {

using namespace dftrace::gpu;

std::string g_path;

void start_tracing() {
  if (!g_path.empty()) return;
  std::string dir = std::filesystem::temp_directory_path() / "dftrace-gpu-test-XXXXXX";
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  g_path = dir + "/trace.pfw.gz";
  dftrace_options_t o;
  dftrace_options_init(&o);
  o.enable = 1;
  o.output_file = g_path.c_str();
  ASSERT_EQ(dftrace_init(&o), DFTRACE_OK);
}

// One parsed trace line (kept as text; parsed again on demand).
struct line {
  std::string text;
};

// Flushes and reads every JSON object line written so far.
std::vector<std::string> read_lines() {
  EXPECT_EQ(dftrace_flush(), DFTRACE_OK);
  std::vector<std::string> out;
  gzFile f = gzopen(g_path.c_str(), "rb");
  EXPECT_NE(f, nullptr);
  if (!f) return out;
  std::string all;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) all.append(buf, static_cast<size_t>(n));
  gzclose(f);
  size_t s = 0;
  while (s < all.size()) {
    size_t e = all.find('\n', s);
    if (e == std::string::npos) e = all.size();
    if (e > s && all[s] == '{') out.push_back(all.substr(s, e - s));
    s = e + 1;
  }
  return out;
}

simdjson::dom::parser &parser() {
  static simdjson::dom::parser p;
  return p;
}

// Events (ph X) of a given name and category, as parsed documents (copied to strings so that
// they outlive the parser's buffer).
std::vector<std::string> events(const std::vector<std::string> &lines, const std::string &name,
                                const std::string &cat) {
  std::vector<std::string> out;
  for (const auto &l : lines) {
    simdjson::dom::element e;
    if (parser().parse(l).get(e)) {
      ADD_FAILURE() << "not JSON: " << l;
      continue;
    }
    std::string_view ph, nm, ct;
    if (e["ph"].get(ph) || ph != "X" || e["name"].get(nm) || e["cat"].get(ct)) continue;
    if (nm == name && ct == cat) out.push_back(l);
  }
  return out;
}

int64_t get_int(const std::string &l, const char *a, const char *b = nullptr) {
  simdjson::dom::element e;
  EXPECT_FALSE(parser().parse(l).get(e));
  simdjson::dom::element v = e[a];
  if (b) v = v[b];
  int64_t i = 0;
  if (v.get(i)) {
    uint64_t u = 0;
    if (v.get(u)) {
      ADD_FAILURE() << "no integer " << a << (b ? "." : "") << (b ? b : "") << " in " << l;
      return -999;
    }
    return static_cast<int64_t>(u);
  }
  return i;
}

bool has(const std::string &l, const char *a, const char *b) {
  simdjson::dom::element e;
  EXPECT_FALSE(parser().parse(l).get(e));
  simdjson::dom::element v;
  return !e[a][b].get(v);
}

std::string get_str(const std::string &l, const char *a, const char *b = nullptr) {
  simdjson::dom::element e;
  EXPECT_FALSE(parser().parse(l).get(e));
  simdjson::dom::element v = e[a];
  if (b) v = v[b];
  std::string_view s;
  if (v.get(s)) {
    ADD_FAILURE() << "no string " << a << "." << (b ? b : "") << " in " << l;
    return {};
  }
  return std::string(s);
}

// thread_name lines for a tid.
std::vector<std::string> thread_names(const std::vector<std::string> &lines, int64_t tid) {
  std::vector<std::string> out;
  for (const auto &l : lines) {
    simdjson::dom::element e;
    if (parser().parse(l).get(e)) continue;
    std::string_view ph, nm;
    int64_t t;
    if (e["ph"].get(ph) || ph != "M" || e["name"].get(nm) || nm != "thread_name") continue;
    if (e["tid"].get(t) || t != tid) continue;
    std::string_view n;
    if (!e["args"]["name"].get(n)) out.emplace_back(n);
  }
  return out;
}

// gpu.kinds as it reaches the translator: the configuration's words to bits (the core), the bits
// to kinds (this library: dftrace_cupti_start).
bool parse_kinds(const std::string &text, kinds *out, std::string *error) {
  unsigned bits = 0;
  if (!dftrace::detail::parse_gpu_kinds(text, &bits, nullptr, error)) return false;
  *out = kinds_of(bits);
  return true;
}

kinds all_kinds() {
  kinds k;
  EXPECT_TRUE(parse_kinds("all", &k, nullptr));
  return k;
}

const char *test_names(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) return "cudaLaunchKernel_v7000";
    if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020) return "cudaGetDevice_v3020";
    if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020) return "cudaMemcpy_v3020";
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2)
    return "cuMemcpyHtoD_v2";
  return nullptr;
}

// Places a record on a device's stream.
template <typename R>
void on_stream(R &r, uint32_t device, uint32_t stream) {
  r.deviceId = device;
  r.streamId = stream;
}

CUpti_ActivityKernel10 kernel_record(uint32_t device, uint32_t stream, uint32_t correlation,
                                     uint64_t start, uint64_t end) {
  auto r = activity<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, correlation,
                                            start, end);
  r.name = "_Z10vector_addPKfS0_Pfi";
  r.gridX = 4096;
  r.gridY = 2;
  r.gridZ = 1;
  r.blockX = 256;
  r.blockY = 1;
  r.blockZ = 1;
  r.deviceId = device;
  r.contextId = 11 + device;
  r.streamId = stream;
  r.staticSharedMemory = 1024;
  r.dynamicSharedMemory = 512;
  r.registersPerThread = 32;
  return r;
}

const CUpti_Activity *A(const void *r) { return static_cast<const CUpti_Activity *>(r); }

class GpuTranslate : public ::testing::Test {
 protected:
  void SetUp() override { start_tracing(); }
};

TEST_F(GpuTranslate, KernelBecomesEventOnItsStreamTrackTiedToHostRegion) {
  correlation_ring ring;
  translator tr(&ring, test_names, all_kinds());
  const int64_t offset = -1234567890123;  // CUPTI clock = tracer clock - offset
  tr.set_clock_offset(offset);

  // A host region, and a kernel launched inside it (correlation 501), timed inside it.
  dftrace_node_t *forward = dftrace_node_find("compute.forward");
  ASSERT_NE(forward, nullptr);
  const dftrace_region_t region = dftrace_region_begin(forward);
  ASSERT_NE(region, 0u);
  ring.remember(501, dftrace_region_current());
  const uint64_t t0 = dftrace_now_ns();
  ::usleep(2000);
  const uint64_t t1 = dftrace_now_ns();
  dftrace_region_end(region);
  const auto gpu = [&](uint64_t mono) { return mono - static_cast<uint64_t>(offset); };
  auto k1 = kernel_record(0, 7, 501, gpu(t0 + 100000), gpu(t1 - 100000));
  auto k2 = kernel_record(0, 7, 502, gpu(t1 - 50000), gpu(t1 - 40000));  // no remembered region
  EXPECT_TRUE(tr.translate(A(&k1)));
  EXPECT_TRUE(tr.translate(A(&k2)));
  EXPECT_EQ(tr.translated(), 2u);

  const auto lines = read_lines();
  const auto kernels = events(lines, "kernel", "device");
  ASSERT_EQ(kernels.size(), 2u);
  const auto regions = events(lines, "forward", "compute");
  ASSERT_EQ(regions.size(), 1u);
  const std::string &k = kernels[0];
  const int64_t track = stream_track(0, 7);
  EXPECT_EQ(track, (int64_t{1} << 30) + 7);
  EXPECT_EQ(get_int(k, "tid"), track);
  EXPECT_EQ(get_int(k, "pid"), get_int(regions[0], "pid"));
  EXPECT_EQ(get_str(k, "args", "kernel"), "vector_add(float const*, float const*, float*, int)");
  EXPECT_EQ(get_str(k, "args", "grid"), "4096,2,1");
  EXPECT_EQ(get_str(k, "args", "block"), "256,1,1");
  EXPECT_EQ(get_int(k, "args", "device"), 0);
  EXPECT_EQ(get_int(k, "args", "stream"), 7);
  EXPECT_EQ(get_int(k, "args", "shared_bytes"), 1536);
  EXPECT_EQ(get_int(k, "args", "registers"), 32);
  EXPECT_EQ(get_int(k, "args", "correlation_id"), 501);
  EXPECT_EQ(get_int(k, "args", "host_region"), get_int(regions[0], "id"));
  EXPECT_EQ(get_int(k, "args", "level"), 1);
  EXPECT_EQ(get_int(k, "args", "p_idx"), -1);
  EXPECT_FALSE(has(kernels[1], "args", "host_region"));
  // Times: converted to the tracer's clock, so the kernel lies inside the region.
  const int64_t rts = get_int(regions[0], "ts"), rdur = get_int(regions[0], "dur");
  const int64_t kts = get_int(k, "ts"), kdur = get_int(k, "dur");
  EXPECT_GE(kts, rts + 99);
  EXPECT_LE(kts + kdur, rts + rdur);
  const int64_t want_dur = static_cast<int64_t>((t1 - 100000) - (t0 + 100000)) / 1000;
  EXPECT_NEAR(kdur, want_dur, 1);
  // One name for the track, however many events it carries.
  const auto names = thread_names(lines, track);
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0], "GPU 0 stream 7");
}

TEST_F(GpuTranslate, CopiesCarryKindBytesAndMemoryKinds) {
  translator tr(nullptr, test_names, all_kinds());
  const uint64_t t = dftrace_now_ns();
  const struct {
    uint8_t kind;
    const char *name;
    uint64_t bytes;
  } cases[] = {{CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, "HtoD", 4096},
               {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, "DtoH", 8192},
               {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, "DtoD", 1u << 30}};
  uint32_t corr = 600;
  for (const auto &c : cases) {
    ++corr;
    auto r = activity<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY, corr, t + corr * 1000,
                                             t + corr * 1000 + 3000);
    r.copyKind = c.kind;
    r.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    r.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    r.bytes = c.bytes;
    r.deviceId = 1;
    r.streamId = 3;
    r.runtimeCorrelationId = corr + 1000;
    EXPECT_TRUE(tr.translate(A(&r)));
  }
  const auto copies = events(read_lines(), "transfer", "device");
  std::vector<std::string> mine;
  for (const auto &c : copies)
    if (get_int(c, "args", "stream") == 3 && get_int(c, "args", "device") == 1) mine.push_back(c);
  ASSERT_EQ(mine.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(get_str(mine[i], "args", "kind"), cases[i].name);
    EXPECT_EQ(get_int(mine[i], "args", "bytes"), static_cast<int64_t>(cases[i].bytes));
    EXPECT_EQ(get_str(mine[i], "args", "src_kind"), "pinned");
    EXPECT_EQ(get_str(mine[i], "args", "dst_kind"), "device");
    EXPECT_EQ(get_int(mine[i], "args", "correlation_id"), 601 + static_cast<int64_t>(i));
    EXPECT_EQ(get_int(mine[i], "args", "runtime_correlation_id"), 1601 + static_cast<int64_t>(i));
    EXPECT_EQ(get_int(mine[i], "tid"), stream_track(1, 3));
    EXPECT_EQ(get_int(mine[i], "dur"), 3);
  }
  // In record order, 1 us apart.
  EXPECT_EQ(get_int(mine[1], "ts") - get_int(mine[0], "ts"), 1);
}

TEST_F(GpuTranslate, PeerCopyMemsetAndSync) {
  translator tr(nullptr, test_names, all_kinds());
  const uint64_t t = dftrace_now_ns();
  // A kernel teaches the translator that context 13 is device 2.
  auto k = kernel_record(2, 9, 700, t, t + 1000);
  EXPECT_TRUE(tr.translate(A(&k)));

  auto p =
      activity<CUpti_ActivityMemcpyPtoP4>(CUPTI_ACTIVITY_KIND_MEMCPY2, 701, t + 2000, t + 3000);
  p.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  p.bytes = 12345;
  on_stream(p, 2, 9);
  p.srcDeviceId = 2;
  p.dstDeviceId = 3;
  EXPECT_TRUE(tr.translate(A(&p)));

  auto m = activity<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET, 702, t + 4000, t + 5000);
  m.bytes = 777;
  m.value = 255;
  on_stream(m, 2, 9);
  m.contextId = 13;
  EXPECT_TRUE(tr.translate(A(&m)));

  auto s = activity<CUpti_ActivitySynchronization2>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, 703,
                                                    t + 6000, t + 9000);
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  s.contextId = 13;
  s.streamId = 9;
  s.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  EXPECT_TRUE(tr.translate(A(&s)));
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
  s.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  s.correlationId = 704;
  EXPECT_TRUE(tr.translate(A(&s)));

  const auto lines = read_lines();
  std::string peer;
  for (const auto &c : events(lines, "transfer", "device"))
    if (get_int(c, "args", "correlation_id") == 701) peer = c;
  ASSERT_FALSE(peer.empty());
  EXPECT_EQ(get_str(peer, "args", "kind"), "PtoP");
  EXPECT_EQ(get_int(peer, "args", "bytes"), 12345);
  EXPECT_EQ(get_int(peer, "args", "src_device"), 2);
  EXPECT_EQ(get_int(peer, "args", "dst_device"), 3);

  const auto sets = events(lines, "memset", "device");
  ASSERT_EQ(sets.size(), 1u);
  EXPECT_EQ(get_int(sets[0], "args", "bytes"), 777);
  EXPECT_EQ(get_int(sets[0], "args", "value"), 255);
  EXPECT_EQ(get_int(sets[0], "tid"), stream_track(2, 9));

  const auto syncs = events(lines, "sync", "device");
  ASSERT_EQ(syncs.size(), 2u);
  EXPECT_EQ(get_str(syncs[0], "args", "type"), "stream_synchronize");
  EXPECT_EQ(get_int(syncs[0], "args", "device"), 2);
  EXPECT_EQ(get_int(syncs[0], "args", "stream"), 9);
  EXPECT_EQ(get_int(syncs[0], "tid"), stream_track(2, k_no_stream));
  EXPECT_EQ(get_int(syncs[0], "dur"), 3);
  EXPECT_EQ(get_str(syncs[1], "args", "type"), "context_synchronize");
  EXPECT_FALSE(has(syncs[1], "args", "stream"));
  EXPECT_EQ(get_int(syncs[1], "tid"), stream_track(2, k_no_stream));
  const auto names = thread_names(lines, stream_track(2, k_no_stream));
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0], "GPU 2 sync");
}

TEST_F(GpuTranslate, ApiCallsGoOnTheCallingThreadAndAreFiltered) {
  correlation_ring ring;
  kinds k;
  ASSERT_TRUE(parse_kinds("runtime,driver", &k, nullptr));
  translator tr(&ring, test_names, k);
  const uint64_t t = dftrace_now_ns();
  auto api = [&](CUpti_ActivityKind kind, CUpti_CallbackId cbid, uint32_t corr) {
    auto r = activity<CUpti_ActivityAPI>(kind, corr, t + corr, t + corr + 2000);
    r.cbid = cbid;
    r.processId = static_cast<uint32_t>(::getpid());
    r.threadId = 4242;
    return r;
  };
  ring.remember(801, 99);
  auto launch =
      api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 801);
  auto get_device =
      api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 802);
  auto htod = api(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, 803);
  htod.returnValue = 700;
  auto kernel = kernel_record(0, 1, 801, t, t + 10);
  EXPECT_TRUE(tr.translate(A(&launch)));
  EXPECT_FALSE(tr.translate(A(&get_device)));  // issues no GPU work: not recorded by default
  EXPECT_TRUE(tr.translate(A(&htod)));
  EXPECT_FALSE(tr.translate(A(&kernel)));  // "kernel" is not in the kinds

  const auto lines = read_lines();
  const auto launches = events(lines, "cudaLaunchKernel", "cuda");
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(get_int(launches[0], "tid"), 4242);
  EXPECT_EQ(get_int(launches[0], "args", "correlation_id"), 801);
  EXPECT_EQ(get_int(launches[0], "args", "host_region"), 99);
  EXPECT_FALSE(has(launches[0], "args", "return_value"));
  EXPECT_EQ(get_int(launches[0], "dur"), 2);
  EXPECT_TRUE(events(lines, "cudaGetDevice", "cuda").empty());
  const auto copies = events(lines, "cuMemcpyHtoD", "cuda");
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(get_int(copies[0], "args", "return_value"), 700);
  for (const auto &e : events(lines, "kernel", "device"))
    EXPECT_NE(get_int(e, "args", "correlation_id"), 801);
  // The node is a real tree node: it can be found and switched like any other.
  EXPECT_NE(dftrace_node_find("cuda.cudaLaunchKernel"), nullptr);

  kinds every;
  ASSERT_TRUE(parse_kinds("runtime,api_all", &every, nullptr));
  translator all(&ring, test_names, every);
  auto get_device2 =
      api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 804);
  EXPECT_TRUE(all.translate(A(&get_device2)));
  EXPECT_EQ(events(read_lines(), "cudaGetDevice", "cuda").size(), 1u);
}

TEST_F(GpuTranslate, DisabledNodeAndUntimedRecordsWriteNothing) {
  translator tr(nullptr, test_names, all_kinds());
  const uint64_t t = dftrace_now_ns();
  auto untimed = kernel_record(0, 5, 900, 0, 0);
  EXPECT_FALSE(tr.translate(A(&untimed)));
  EXPECT_EQ(tr.skipped(), 1u);
  auto backwards = kernel_record(0, 5, 901, t + 10, t);
  EXPECT_FALSE(tr.translate(A(&backwards)));
  dftrace_node_disable(dftrace_node_find("device.memset"));
  auto m = activity<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET, 902, t, t + 1);
  m.bytes = 1;
  m.streamId = 5;
  tr.translate(A(&m));
  dftrace_node_enable(dftrace_node_find("device.memset"));
  const auto lines = read_lines();
  for (const auto &e : events(lines, "kernel", "device")) {
    EXPECT_NE(get_int(e, "args", "correlation_id"), 900);
    EXPECT_NE(get_int(e, "args", "correlation_id"), 901);
  }
  EXPECT_TRUE(events(lines, "memset", "device").empty());
  CUpti_Activity other;
  other.kind = CUPTI_ACTIVITY_KIND_MARKER;
  EXPECT_FALSE(tr.translate(&other));
  EXPECT_FALSE(tr.translate(nullptr));
}

TEST(GpuCorrelation, RingFindsRecentIdsAndNeverAStaleOne) {
  correlation_ring ring;
  EXPECT_EQ(ring.lookup(5), 0u);
  ring.remember(5, 55);
  EXPECT_EQ(ring.lookup(5), 55u);
  ring.remember(5 + correlation_ring::k_slots, 66);  // same slot, newer id
  EXPECT_EQ(ring.lookup(5), 0u);
  EXPECT_EQ(ring.lookup(5 + correlation_ring::k_slots), 66u);
  EXPECT_EQ(ring.lookup(0), 0u);

  // Writers on several threads, a reader checking that a found region belongs to its id.
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> wrong{0}, found{0};
  std::thread reader([&] {
    while (!stop.load()) {
      for (uint32_t id = 1; id < 200000; id += 97) {
        const uint64_t r = ring.lookup(id);
        if (r == 0) continue;
        ++found;
        if (r != uint64_t{id} * 3) ++wrong;
      }
    }
  });
  std::vector<std::thread> writers;
  for (uint32_t w = 0; w < 3; ++w)
    writers.emplace_back([&, w] {
      for (int round = 0; round < 20; ++round)
        for (uint32_t id = 1 + w; id < 200000; id += 3) ring.remember(id, uint64_t{id} * 3);
    });
  for (auto &t : writers) t.join();
  stop = true;
  reader.join();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_GT(found.load(), 0u);
}

// PyTorch makes far more CUDA calls that issue no work (cuGetProcAddress, module loads,
// cudaGetDevice) than launches: each takes a correlation id, and if each were stored the
// launch's slot would be reused before its kernel record is translated.
TEST(GpuCorrelation, OnlyCallsThatIssueWorkAreRemembered) {
  const char *names[] = {"cudaGetDevice_v3020",
                         "cudaLaunchKernel_v7000",
                         "cuGetProcAddress_v2",
                         "cuLaunchKernel",
                         nullptr,
                         "cudaMemcpyAsync_v3020",
                         "cuStreamSynchronize",
                         "cuModuleGetFunction"};
  const uint32_t n = sizeof names / sizeof *names;
  auto name = [&](uint32_t id) { return names[id]; };
  EXPECT_EQ(remembered_calls(n, false, name),
            (std::vector<bool>{false, true, false, true, false, true, true, false}));
  EXPECT_EQ(remembered_calls(n, true, name), std::vector<bool>(n, true));  // api_all

  const std::vector<bool> remembered = remembered_calls(n, false, name);
  correlation_ring ring;
  remember_call(ring, remembered, 1, 10, 77);  // cudaLaunchKernel inside region 77
  uint32_t id = 11;
  for (; id < 10 + 3 * correlation_ring::k_slots; ++id)  // three rings' worth of other calls
    remember_call(ring, remembered, id % 2 ? 0 : 7, id, 5);
  EXPECT_EQ(ring.lookup(10), 77u);
  EXPECT_EQ(ring.lookup(11), 0u);
  remember_call(ring, remembered, 99, id, 5);  // a callback id past the table: not stored
  EXPECT_EQ(ring.lookup(id), 0u);
  remember_call(ring, remembered, 3, 10 + 4 * correlation_ring::k_slots, 88);  // a launch reuses it
  EXPECT_EQ(ring.lookup(10), 0u);
  EXPECT_EQ(ring.lookup(10 + 4 * correlation_ring::k_slots), 88u);
}

TEST(GpuKinds, ParsesListsAndRejectsUnknownWords) {
  kinds k;
  std::string err;
  ASSERT_TRUE(parse_kinds("kernel, memcpy", &k, &err));
  EXPECT_TRUE(k.kernel && k.memcpy);
  EXPECT_FALSE(k.memset || k.sync || k.runtime || k.driver || k.api_all);
  ASSERT_TRUE(parse_kinds("[Sync, runtime]", &k, &err));
  EXPECT_TRUE(k.sync && k.runtime && !k.kernel);
  ASSERT_TRUE(parse_kinds("all", &k, &err));
  EXPECT_TRUE(k.kernel && k.memcpy && k.memset && k.sync && k.runtime && k.driver && k.api_all);
  EXPECT_FALSE(parse_kinds("kernel,kernels", &k, &err));
  EXPECT_NE(err.find("kernels"), std::string::npos);
}

TEST(GpuNames, ApiBaseNamesAndTracks) {
  EXPECT_EQ(api_base_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(api_base_name("cuMemcpyHtoD_v2"), "cuMemcpyHtoD");
  EXPECT_EQ(api_base_name("cudaMemcpy_ptds_v7000"), "cudaMemcpy");
  EXPECT_EQ(api_base_name("cuLaunchKernel"), "cuLaunchKernel");
  EXPECT_EQ(api_base_name("cudaMalloc_vx"), "cudaMalloc_vx");
  EXPECT_TRUE(api_issues_work("cudaLaunchKernel"));
  EXPECT_TRUE(api_issues_work("cudaStreamSynchronize"));
  EXPECT_TRUE(api_issues_work("cuMemcpyDtoHAsync"));
  EXPECT_FALSE(api_issues_work("cudaGetDevice"));
  EXPECT_FALSE(api_issues_work("cudaMalloc"));
  // Tracks are distinct per device and stream, above every Linux tid, within 32 bits.
  EXPECT_NE(stream_track(0, 1), stream_track(1, 1));
  EXPECT_NE(stream_track(0, 1), stream_track(0, 2));
  EXPECT_GT(stream_track(0, 0), int64_t{1} << 22);
  EXPECT_LT(stream_track(1023, k_no_stream), int64_t{1} << 31);
  EXPECT_EQ(track_label(3, 14), "GPU 3 stream 14");
}

}  // namespace
