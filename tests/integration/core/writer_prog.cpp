// writer_prog.cpp: one test program, several modes, each exercising the writer for real
// (threads, crashes, signals, fork, full disks). Usage: writer_prog MODE [N] [M]
#include <dftrace/dftrace.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dftrace/dftrace.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

namespace {

void spin(int n) {
  volatile double x = 0;
  for (int i = 0; i < n; ++i) x = x + i * 0.5;
}

dftrace_node_t *node(const char *path) { return dftrace_node_find(path); }

uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

void events(int n, dftrace_node_t *outer, dftrace_node_t *inner) {
  for (int i = 0; i < n; ++i) {
    dftrace_region_t a = dftrace_region_begin(outer);
    dftrace_region_t b = dftrace_region_begin(inner);
    dftrace_region_arg_int(b, "i", i);
    spin(50);
    dftrace_region_end(b);
    dftrace_region_end(a);
  }
}

int mode_basic() {
  // Every kind of line, with hostile strings.
  dftrace_node_t *fwd = node("compute.forward");
  const char *hostile =
      "quote\" backslash\\ newline\n tab\t nul-free ctrl\x01 bad-utf8\xff\xfe end";
  dftrace_node_update_string(dftrace_node_root(), "run", hostile);
  dftrace_node_update_int(dftrace_node_root(), "epoch", 2);
  dftrace_node_update_double(node("compute"), "lr", 0.25);
  dftrace_node_update_bool(node("compute"), "warm", true);
  dftrace_arg_t args[] = {DFTRACE_ARG_I("layer", -3),      DFTRACE_ARG_D("ratio", 1.5),
                          DFTRACE_ARG_S(hostile, hostile), DFTRACE_ARG_B("ok", false),
                          DFTRACE_ARG_I("epoch", 9),       DFTRACE_ARG_I("level", 77)};
  dftrace_region_t r = dftrace_region_begin_ex(fwd, DFTRACE_USE_NODE_STATE, args, 6);
  dftrace_region_end(r);
  std::string long_value(100000, 'v');
  dftrace_region_t r2 = dftrace_region_begin(node("compute.backward"));
  dftrace_region_arg_int(r2, "big", 7);  // replaced below: the later value wins, written once
  dftrace_region_arg_string(r2, "big", long_value.c_str());
  dftrace_region_arg_int(r2, std::string(3000, 'k').c_str(), 5);  // a key over the 1024-byte limit
  dftrace_region_end(r2);
  uint64_t fh = dftrace_hash_define(DFTRACE_HASH_FILE, "/data/file\"1.npy");
  dftrace_region_t r3 = dftrace_region_begin(node("data.item"));
  dftrace_region_arg_uint(r3, "fhash", fh);
  dftrace_region_end(r3);
  dftrace_instant(node("checkpoint.capture"), args, 2);
  dftrace_counter_int(dftrace_category("memory"), "bytes", 1048576);
  dftrace_counter_double(dftrace_category("memory"), "util", 0.5);
  dftrace_metadata("note", hostile);
  dftrace_process_property_json("core_affinity", "[0,1]");
  dftrace_process_property_json("bad_json", "[0,1");
  dftrace_process_property_json("pretty", "{\n  \"lr\": 0.1,\r\n  \"s\": \"a b\"\n}\n");
  dftrace_thread_name("main \"thread\"");
  return 0;
}

int mode_threads(int n) {
  dftrace_node_t *outer = node("pipeline.epoch"), *mid = node("compute.forward"),
                 *inner = node("comm.all_reduce");
  std::atomic<int> ready{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&] {
      ++ready;
      while (ready.load() < 4) {
      }
      for (int i = 0; i < n; ++i) {
        dftrace_region_t a = dftrace_region_begin(outer);  // the same nodes on every thread
        dftrace_region_t b = dftrace_region_begin(mid);
        dftrace_region_t c = dftrace_region_begin(inner);
        spin(20);
        dftrace_region_end(c);
        dftrace_region_end(b);
        dftrace_region_end(a);
      }
    });
  }
  for (auto &t : ts) t.join();
  return 0;
}

int mode_flushed(int batches, int per_batch) {
  dftrace_node_t *a = node("compute.forward"), *b = node("compute.backward");
  int total = 0;
  for (int i = 0; i < batches; ++i) {
    events(per_batch, a, b);
    total += 2 * per_batch;
    dftrace_flush();
    std::printf("flushed %d\n", total);
    std::fflush(stdout);
  }
  std::printf("done\n");
  std::fflush(stdout);
  for (;;) pause();
}

// A real invalid store (not raise()): exempt from UBSan, which would report it first.
__attribute__((no_sanitize("undefined"), noinline)) void crash_by_segv() {
  volatile int *volatile p = nullptr;  // both volatile: the optimiser keeps the store
  *p = 1;
}

// Crashes (segv, abort) `delay_ms` after the events, or waits for a signal (term).
int mode_signal(const char *how, int n, int delay_ms) {
  events(n, node("compute.forward"), node("compute.backward"));
  if (delay_ms > 0) usleep(static_cast<useconds_t>(delay_ms) * 1000);
  if (!std::strcmp(how, "segv")) {
    crash_by_segv();
  } else if (!std::strcmp(how, "abort")) {
    std::abort();
  } else {
    std::printf("ready\n");
    std::fflush(stdout);
    for (;;) pause();
  }
  return 0;
}

// A metadata line longer than the crash path's room (a property of n bytes with members of
// 4 KiB), one that fits, events, then a crash before the writer's next pass: the signal path
// must not allocate for the long line (it is lost), and writes the rest.
int mode_bigmeta(int n) {
  const std::string big = "\"" + std::string(static_cast<size_t>(n), 'b') + "\"";
  dftrace_process_property_json("big", big.c_str());
  dftrace_process_property_json("small", "[1,2]");
  events(10, node("compute.forward"), node("compute.backward"));
  crash_by_segv();
  return 0;
}

// The application's own SIGFPE handler, installed before tracing starts: dftrace's handler
// (chained for faults; a request to end that the application handles is left to it) writes
// what is buffered, then this one runs and the process goes on. n events, 1 s for the writer
// to take them, SIGFPE to itself, n more events, a normal exit.
volatile sig_atomic_t g_terms = 0;
int mode_survive(int n) {
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_terms = g_terms + 1; };
  sigemptyset(&sa.sa_mask);
  sigaction(SIGFPE, &sa, nullptr);
  events(n, node("compute.forward"), node("compute.backward"));
  usleep(1000000);
  raise(SIGFPE);
  events(n, node("compute.forward"), node("compute.backward"));
  std::printf("terms %d\n", static_cast<int>(g_terms));
  return 0;
}

int mode_fork(int n) {
  events(n, node("pipeline.epoch"), node("compute.forward"));
  dftrace_region_t open = dftrace_region_begin(node("pipeline.train"));  // open across fork
  std::fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    events(n, node("dataloader.fetch"), node("data.item"));
    dftrace_region_end(open);  // begun in the parent: not the child's to write
    std::printf("child %d %s\n", getpid(), dftrace_output_path() ? "" : "");
    std::fflush(stdout);
    std::exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  events(n, node("pipeline.epoch"), node("compute.forward"));
  dftrace_region_end(open);
  std::printf("parent %d child %d status %d\n", getpid(), child, status);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

// Rounds of t threads that trace while each of them forks once; every child traces a little and
// exits normally (finalize at exit). A child that has not exited within 30 s hangs: it is
// killed and counted. Prints "forks F hangs H".
int mode_fork_threads(int rounds, int t) {
  std::atomic<int> forks{0}, hangs{0}, bad{0};
  for (int r = 0; r < rounds; ++r) {
    std::vector<std::thread> threads;
    for (int k = 0; k < t; ++k) {
      threads.emplace_back([&, k] {
        events(20 + k, node("pipeline.epoch"), node("compute.forward"));
        pid_t child = fork();
        if (child == 0) {
          // A normal exit: the child finalizes at exit and must never hang.
          events(10, node("dataloader.fetch"), node("data.item"));
          std::exit(0);
        }
        if (child < 0) {
          bad.fetch_add(1);
          return;
        }
        forks.fetch_add(1);
        events(20, node("pipeline.epoch"), node("compute.forward"));
        int status = 0;
        for (int waited = 0;; ++waited) {
          const pid_t w = waitpid(child, &status, WNOHANG);
          if (w == child) break;
          if (waited == 30000) {  // 30 s in 1 ms steps
            kill(child, SIGKILL);
            waitpid(child, &status, 0);
            hangs.fetch_add(1);
            return;
          }
          usleep(1000);
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) bad.fetch_add(1);
      });
    }
    for (auto &th : threads) th.join();
  }
  std::printf("forks %d hangs %d bad %d\n", forks.load(), hangs.load(), bad.load());
  return hangs.load() == 0 && bad.load() == 0 ? 0 : 1;
}

// The file is opened, then a symbolic link is planted at the name the rank will give it
// (argv: the link's target), then the rank becomes known: the rename must not replace the link.
// Prints the link's path and the final path.
int mode_rank_clash(const char *target) {
  events(10, node("compute.forward"), node("compute.backward"));
  dftrace_flush();  // the file exists now, under its rank-less name
  std::string path = dftrace_output_path();
  const std::string tail = "-" + std::to_string(getpid()) + "-app";
  const size_t at = path.rfind(tail);
  if (at == std::string::npos) return 3;
  const std::string ranked = path.substr(0, at) + "-0" + path.substr(at);
  if (symlink(target, ranked.c_str()) != 0) return 4;
  dftrace_set_rank(0, 1);
  events(10, node("compute.forward"), node("compute.backward"));
  std::printf("link %s\nfinal %s\n", ranked.c_str(), dftrace_output_path());
  return 0;
}

// One event with n per-use arguments k0..k<n-1> (k3 given again at the end: the later wins),
// "epoch" and "k5" also node arguments (the per-use ones replace them), "hhash" reserved.
// Prints how long finalize (which formats the event) took, for bench/RESULTS.md.
int mode_args(int n) {
  dftrace_node_t *fwd = node("compute.forward");
  dftrace_node_update_int(fwd, "epoch", 1);
  dftrace_node_update_string(fwd, "k5", "node");
  std::vector<std::string> keys(static_cast<size_t>(n));
  std::vector<dftrace_arg_t> args;
  for (int i = 0; i < n; ++i) {
    keys[static_cast<size_t>(i)] = "k" + std::to_string(i);
    args.push_back(DFTRACE_ARG_I(keys[static_cast<size_t>(i)].c_str(), i));
  }
  args.push_back(DFTRACE_ARG_I("k3", -3));
  args.push_back(DFTRACE_ARG_I("epoch", 99));
  args.push_back(DFTRACE_ARG_S("hhash", "mine"));
  dftrace_region_end(
      dftrace_region_begin_ex(fwd, DFTRACE_USE_NODE_STATE, args.data(), args.size()));
  timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  dftrace_finalize();
  clock_gettime(CLOCK_MONOTONIC, &b);
  std::printf("args %d finalize_ms %.1f\n", n,
              (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6);
  return 0;
}

int mode_idle(int n) {
  // Events, then silence: only the time-based flush can put them in the file.
  events(n / 2, node("compute.forward"), node("compute.backward"));
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) pause();
}

int mode_many(int n) {
  events(n / 2, node("compute.forward"), node("compute.backward"));
  std::printf("application finished normally\n");
  return 0;
}

// Regions stamped by the event path's clock (the TSC where used), each bracketed by
// clock_gettime(CLOCK_MONOTONIC) readings (not dftrace_now_ns(), which is the event path's own
// clock) written as explicit-time events on track 7:
// the test checks that every region lies inside its bracket. Sleeps spread the n regions
// over about n milliseconds, so that the writer adds tick anchors in between.
int mode_bracket(int n) {
  dftrace_node_t *inner = node("compute.forward");
  dftrace_node_t *outer = node("compute.backward");
  for (int i = 0; i < n; ++i) {
    const uint64_t t0 = mono_ns();
    dftrace_region_t r = dftrace_region_begin(inner);
    spin(200 + (i % 7) * 100);
    dftrace_region_end(r);
    const uint64_t t1 = mono_ns();
    dftrace_arg_t a = DFTRACE_ARG_I("i", i);
    dftrace_event_complete(outer, t0, t1, 7, &a, 1);
    if (i % 10 == 0) usleep(10000);
  }
  std::printf("application finished normally\n");
  return 0;
}

// n steps, each a compute.step region with its index, ended with dftrace_step(); when a window
// of the schedule closes, counts the step events already in the file (they must be there).
int mode_schedule(int n) {
  dftrace_node_t *step = node("compute.step");
  for (int i = 0; i < n; ++i) {
    const int phase = dftrace_step_phase();
    dftrace_arg_t a = DFTRACE_ARG_I("i", i);
    dftrace_region_t r = dftrace_region_begin_ex(step, -1, &a, 1);
    spin(1000);
    dftrace_region_end(r);
    const int rc = dftrace_step();
    std::printf("step %d phase %d rc %d\n", i, phase, rc);
    if (rc == 1) {
      const char *path = dftrace_output_path();
      std::string cmd = std::string("gzip -dc '") + (path ? path : "") + "' 2>/dev/null";
      FILE *p = popen(cmd.c_str(), "r");
      int count = 0;
      char line[4096];
      while (p && std::fgets(line, sizeof line, p))
        if (std::strstr(line, "\"name\":\"step\"")) ++count;
      if (p) pclose(p);
      std::printf("ready %d %d\n", i, count);
    }
  }
  std::printf("steps %llu\n", static_cast<unsigned long long>(dftrace_step_count()));
  return 0;
}

// A fixed workload for aggregation: n iterations of a step holding a forward (per-use size and
// lr) and an all_reduce (bytes), plus an instant and a counter; the same events every run.
int mode_agg(int n) {
  dftrace_node_t *step = node("compute.step"), *fwd = node("compute.forward"),
                 *ar = node("comm.all_reduce");
  for (int i = 0; i < n; ++i) {
    dftrace_region_t s = dftrace_region_begin(step);
    dftrace_arg_t fa[2] = {DFTRACE_ARG_I("size", 100 + i % 7), DFTRACE_ARG_D("lr", 0.5)};
    dftrace_region_t f = dftrace_region_begin_ex(fwd, -1, fa, 2);
    spin(300);
    dftrace_region_end(f);
    dftrace_arg_t aa = DFTRACE_ARG_I("bytes", 4096 * (1 + i % 3));
    dftrace_region_t a = dftrace_region_begin_ex(ar, -1, &aa, 1);
    spin(100);
    dftrace_region_end(a);
    dftrace_region_end(s);
    if (i % 1000 == 0) usleep(20000);  // several intervals
  }
  dftrace_instant(step, nullptr, 0);
  dftrace_counter_int(step, "loss", 3);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  const std::string mode = argv[1];
  const int n = argc > 2 ? std::atoi(argv[2]) : 1000;
  const int m = argc > 3 ? std::atoi(argv[3]) : 1000;
  // Tracing is enabled by the environment (DFTRACE_ENABLE=1) as users do.
  if (mode == "basic") return mode_basic();
  if (mode == "threads") return mode_threads(n);
  if (mode == "flushed") return mode_flushed(n, m);
  if (mode == "segv" || mode == "abort" || mode == "term")
    return mode_signal(mode.c_str(), n, argc > 3 ? m : 0);
  if (mode == "fork") return mode_fork(n);
  if (mode == "survive") return mode_survive(n);
  if (mode == "args") return mode_args(n);
  if (mode == "rank_clash") return mode_rank_clash(argc > 2 ? argv[2] : "/nonexistent");
  if (mode == "fork_threads") return mode_fork_threads(n, m);
  if (mode == "many") return mode_many(n);
  if (mode == "idle") return mode_idle(n);
  if (mode == "bracket") return mode_bracket(n);
  if (mode == "schedule") return mode_schedule(n);
  if (mode == "agg") return mode_agg(n);
  if (mode == "bigmeta") return mode_bigmeta(n);
  return 2;
}
