/* telemetry_prog.c: a program under telemetry.interval: a quiet phase, a busy loop and an
 * allocation, each a region, so that the test can set the counters against them.
 * Usage: telemetry_prog [work | fork | sleep MS] */
#include <dftrace/dftrace.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void phase(const char *name, void (*body)(void)) {
  dftrace_region_t r = dftrace_region_begin(dftrace_node_child(dftrace_category("app"), name));
  body();
  dftrace_region_end(r);
}

static void quiet(void) { usleep(300000); }

static void busy(void) { /* 0.5 s of this process's own CPU time, however loaded the machine */
  const double t0 = cpu_seconds();
  volatile double x = 0;
  while (cpu_seconds() - t0 < 0.5) x = x + 1;
}

static char *block;
enum { k_block = 96 << 20 };
static void allocate(void) {
  block = malloc(k_block);
  if (block) memset(block, 1, k_block); /* touched: resident */
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "work";
  if (strcmp(mode, "sleep") == 0) {
    phase("quiet", quiet);
    usleep((useconds_t)(argc > 2 ? atoi(argv[2]) : 1000) * 1000);
    return dftrace_finalize() == 0 ? 0 : 1;
  }
  if (strcmp(mode, "fork") == 0) {
    phase("quiet", quiet);
    pid_t child = fork();
    if (child == 0) {
      phase("busy", busy); /* the child's own sampler records it */
      phase("quiet", quiet);
      dftrace_finalize();
      _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return dftrace_finalize() == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
  }
  phase("quiet", quiet);
  phase("busy", busy);
  phase("allocate", allocate);
  phase("after", quiet);
  const int ok = block && block[k_block - 1] == 1;
  free(block);
  return dftrace_finalize() == 0 && ok ? 0 : 1;
}
