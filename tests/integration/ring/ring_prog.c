/* ring_prog.c: a C program for the flight recorder's tests (test_ring.py), in ring mode by its
 * environment (DFTRACE_OUTPUT_MODE=ring, ...). Each region carries `ms`, the milliseconds since
 * the program started, so that the test can say which part of the run a trace holds, and `n`,
 * its number (from 0, in each process), so that it can say none is missing.
 * Usage:
 *   ring_prog api SECONDS AT    regions for SECONDS, dftrace_trigger("at AT s") at AT seconds,
 *                               then "regions N": how many it made
 *   ring_prog steps N SLOW MS   N steps of MS/2 regions 2 ms apart; step SLOW's (0-based) 100 ms
 * apart ring_prog wait SECONDS      regions for SECONDS ("ready" on stdout after the first second),
 *                               then "regions N": how many it made
 *   ring_prog fast EVENTS       EVENTS regions as fast as it can, then its VmHWM (kB)
 *   ring_prog config EVENTS     EVENTS regions, then dftrace_config_describe(): the sizes its
 *                               writer uses
 *   ring_prog crash SECONDS     regions for SECONDS, then a SIGSEGV
 *   ring_prog latency EVENTS    EVENTS regions, then a trigger and a flush: how long the two
 *                               took (the ring is on disk when the flush returns), in ms
 *   ring_prog signal EVENTS     EVENTS regions and a flush (the writer then sleeps), then a
 *                               SIGUSR2: how long until the trace directory's bytes last grew
 *                               (the writer thread writes the ring; nothing else comes), in ms,
 *                               and the CPU time dftrace's threads took meanwhile
 *   ring_prog fork SECONDS      regions for 2 s, then a fork: the child says "child PID" on
 *                               stdout after 1.5 s and makes regions for SECONDS; the parent
 *                               makes regions until the child ended, dftrace_trigger("parent"),
 *                               then regions for 0.3 s more
 *   ring_prog burst THREADS N   THREADS threads each make N regions as fast as they can (each
 *                               carries `t`, its thread, and `i`, its number there), then
 *                               dftrace_trigger("burst"): "trigger T, made TOTAL in MS ms"
 *                               on stdout (MS: from the threads' start to their end) */
#include <dftrace/dftrace.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

static uint64_t g_t0;
static dftrace_node_t *g_work;

static int64_t g_made; /* regions made so far: `n` of the next one */

static void region(long step) {
  dftrace_region_t r = dftrace_region_begin(g_work);
  dftrace_region_arg_int(r, "ms", (int64_t)(now_ms() - g_t0));
  dftrace_region_arg_int(r, "n", g_made++);
  if (step >= 0) dftrace_region_arg_int(r, "step", step);
  dftrace_region_end(r);
}

static void regions_until(uint64_t end_ms) {
  while (now_ms() - g_t0 < end_ms) {
    region(-1);
    sleep_ms(2);
  }
}

static int fork_mode(long seconds) {
  regions_until(2000);
  const pid_t child = fork();
  if (child < 0) return 3;
  if (child == 0) {
    const uint64_t start = now_ms() - g_t0;
    regions_until(start + 1500); /* its file is made at its first pass (every second here) */
    printf("child %ld\n", (long)getpid());
    fflush(stdout);
    regions_until(start + (uint64_t)seconds * 1000);
    return 0;
  }
  int status = 0;
  while (waitpid(child, &status, WNOHANG) == 0) {
    region(-1);
    sleep_ms(2);
  }
  printf("parent trigger %d\n", dftrace_trigger("parent"));
  regions_until(now_ms() - g_t0 + 300);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 4;
}

static double mono_ms(void);
static long g_burst_n;

static void *burst_thread(void *arg) {
  const int64_t t = (int64_t)(intptr_t)arg;
  uint64_t x = 88172645463325252ull + (uint64_t)t;
  for (long i = 0; i < g_burst_n; ++i) {
    dftrace_region_t r = dftrace_region_begin(g_work);
    x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* values that do not compress away */
    dftrace_region_arg_uint(r, "x", x);
    dftrace_region_arg_int(r, "t", t);
    dftrace_region_arg_int(r, "i", i);
    dftrace_region_end(r);
  }
  return NULL;
}

static int burst_mode(long threads, long n) {
  pthread_t tid[64];
  if (threads < 1 || threads > 64) return 2;
  g_burst_n = n;
  const double start = mono_ms();
  for (long t = 0; t < threads; ++t)
    if (pthread_create(&tid[t], NULL, burst_thread, (void *)(intptr_t)t) != 0) return 3;
  for (long t = 0; t < threads; ++t) pthread_join(tid[t], NULL);
  const double ms = mono_ms() - start;
  printf("trigger %d, made %ld in %.1f ms\n", dftrace_trigger("burst"), threads * n, ms);
  return 0;
}

static double mono_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* The bytes of the files in DFTRACE_LOG_FILE's directory. */
static long long trace_bytes(void) {
  char dir[4096];
  const char *f = getenv("DFTRACE_LOG_FILE");
  snprintf(dir, sizeof dir, "%s", f ? f : ".");
  char *slash = strrchr(dir, '/');
  if (slash)
    *slash = 0;
  else
    snprintf(dir, sizeof dir, ".");
  long long total = 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d));) {
    char p[8192];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (e->d_name[0] != '.' && stat(p, &st) == 0 && S_ISREG(st.st_mode)) total += st.st_size;
  }
  closedir(d);
  return total;
}

/* The CPU time (ms) the process's threads other than the calling one have run, from each
 * one's /proc/self/task/TID/schedstat (nanoseconds on a CPU): dftrace's writer and its
 * compressor helpers here. */
static double other_threads_cpu_ms(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  const long self = (long)syscall(SYS_gettid);
  double ns = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.' || atol(e->d_name) == self) continue;
    char p[300];
    snprintf(p, sizeof p, "/proc/self/task/%s/schedstat", e->d_name);
    FILE *f = fopen(p, "r");
    unsigned long long run = 0;
    if (f) {
      if (fscanf(f, "%llu", &run) == 1) ns += (double)run;
      fclose(f);
    }
  }
  closedir(d);
  return ns / 1e6;
}

static long vm_hwm_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmHWM:", 6) == 0) kb = atol(line + 6);
  if (f) fclose(f);
  return kb;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  g_t0 = now_ms();
  g_work = dftrace_node_child(dftrace_category("ring"), "work");
  const char *mode = argv[1];
  if (strcmp(mode, "api") == 0 && argc >= 4) {
    const uint64_t end = atol(argv[2]) * 1000, at = atol(argv[3]) * 1000;
    int fired = 0;
    while (now_ms() - g_t0 < end) {
      region(-1);
      if (!fired && now_ms() - g_t0 >= at) {
        char reason[64];
        snprintf(reason, sizeof reason, "at %s s", argv[3]);
        printf("trigger %d at %llu ms\n", dftrace_trigger(reason),
               (unsigned long long)(now_ms() - g_t0));
        fired = 1;
      }
      sleep_ms(2);
    }
    printf("regions %lld\n", (long long)g_made);
  } else if (strcmp(mode, "steps") == 0 && argc >= 5) {
    const long n = atol(argv[2]), slow = atol(argv[3]), ms = atol(argv[4]);
    dftrace_node_t *step_node = dftrace_node_child(dftrace_category("ring"), "step");
    for (long i = 0; i < n; ++i) {
      dftrace_region_t s = dftrace_region_begin(step_node);
      dftrace_region_arg_int(s, "step", i);
      for (long k = 0; k < ms / 2; ++k) {
        region(i);
        sleep_ms(i == slow ? 100 : 2);
      }
      dftrace_region_end(s);
      dftrace_step();
    }
  } else if (strcmp(mode, "crash") == 0) {
    const uint64_t end = atol(argv[2]) * 1000;
    while (now_ms() - g_t0 < end) { /* the last region ends just before the crash */
      sleep_ms(2);
      region(-1);
    }
    raise(SIGSEGV);
  } else if (strcmp(mode, "burst") == 0 && argc >= 4) {
    return burst_mode(atol(argv[2]), atol(argv[3]));
  } else if (strcmp(mode, "config") == 0) {
    for (long i = 0, n = atol(argv[2]); i < n; ++i) region(i);
    fputs(dftrace_config_describe(), stdout);
  } else if (strcmp(mode, "fork") == 0) {
    return fork_mode(atol(argv[2]));
  } else if (strcmp(mode, "wait") == 0) {
    const uint64_t end = atol(argv[2]) * 1000;
    int said = 0;
    long made = 0;
    while (now_ms() - g_t0 < end) {
      region(-1);
      ++made;
      if (!said && now_ms() - g_t0 >= 1000) {
        printf("ready\n");
        fflush(stdout);
        said = 1;
      }
      sleep_ms(2);
    }
    printf("regions %ld\n", made);
  } else if (strcmp(mode, "fast") == 0 || strcmp(mode, "latency") == 0 ||
             strcmp(mode, "signal") == 0) {
    const long n = atol(argv[2]);
    uint64_t x = 88172645463325252ull;
    for (long i = 0; i < n; ++i) {
      dftrace_region_t r = dftrace_region_begin(g_work);
      x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* values that do not compress away */
      dftrace_region_arg_uint(r, "x", x);
      dftrace_region_arg_int(r, "i", i);
      dftrace_region_end(r);
    }
    if (strcmp(mode, "latency") == 0) {
      struct timespec a, b;
      clock_gettime(CLOCK_MONOTONIC, &a);
      const int taken = dftrace_trigger("latency");
      dftrace_flush();
      clock_gettime(CLOCK_MONOTONIC, &b);
      printf("trigger %d, on disk after %.1f ms\n", taken,
             (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6);
    }
    if (strcmp(mode, "signal") == 0) {
      dftrace_flush();
      long long bytes = trace_bytes();
      const double cpu = other_threads_cpu_ms();
      const double start = mono_ms();
      double last = start;
      raise(SIGUSR2);
      while (mono_ms() - last < 500 && mono_ms() - start < 10000) {
        const long long now = trace_bytes();
        if (now != bytes) bytes = now, last = mono_ms();
        usleep(200);
      }
      printf("writer cpu %.1f ms\n", other_threads_cpu_ms() - cpu);
      printf("signal, on disk after %.1f ms\n", last - start);
    }
    printf("vmhwm_kb %ld\n", vm_hwm_kb());
  } else {
    return 2;
  }
  return 0;
}
