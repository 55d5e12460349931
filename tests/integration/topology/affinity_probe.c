/* affinity_probe.c: a traced program for the topology tests. It prints the CPUs it runs on
 * (as the kernel reports them) so that the test can compare them with the trace, optionally
 * binds a worker thread to one CPU, and traces one region on each thread. Built twice: plain,
 * and with -DPROBE_MPI as an MPI program linked with libdftrace_mpi.
 * Usage: affinity_probe [worker_cpu]   (worker_cpu < 0: no worker thread) */
#define _GNU_SOURCE
#include <dftrace/dftrace.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef PROBE_MPI
#include <mpi.h>
#endif

static void print_cpus(const char *who, int rank) {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  printf("%s rank=%d cpus=", who, rank);
  int first = 1;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) {
      printf(first ? "%d" : ",%d", c);
      first = 0;
    }
  printf("\n");
  fflush(stdout);
}

static void *worker(void *arg) {
  const int cpu = *(const int *)arg;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  /* bind before the first traced event: the thread's name line is written then */
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
    fprintf(stderr, "bind failed\n");
  dftrace_region_t r = dftrace_region_begin(dftrace_node_find("data.preprocess"));
  dftrace_region_end(r);
  return NULL;
}

int main(int argc, char **argv) {
  int rank = -1;
#ifdef PROBE_MPI
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#endif
  const int worker_cpu = argc > 1 ? atoi(argv[1]) : -1;
  print_cpus("main", rank);
  dftrace_region_t r = dftrace_region_begin(dftrace_node_find("compute.forward"));
  if (worker_cpu >= 0) {
    pthread_t t;
    pthread_create(&t, NULL, worker, (void *)&worker_cpu);
    pthread_join(t, NULL);
  }
  dftrace_region_end(r);
#ifdef PROBE_MPI
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
#endif
  return 0;
}
