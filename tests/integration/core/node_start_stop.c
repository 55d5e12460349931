/* node_start_stop.c: start and stop by node from C (dftrace_node_start/_stop): nesting of one
 * node in itself, another node inside, and every misuse answered with a status: a stop without
 * a start, NULL, a stop on another thread, in a forked child, after finalize. Exits 0 when every
 * status is the documented one (the trace is checked by test_writer.py). */
#define _POSIX_C_SOURCE 200809L
#include <dftrace/dftrace.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

static void expect(const char *what, int got, int want, int line) {
  if (got == want) return;
  fprintf(stderr, "line %d: %s returned %d, expected %d\n", line, what, got, want);
  ++failures;
}
#define EXPECT(call, want) expect(#call, (call), (want), __LINE__)

static dftrace_node_t *g_train;

static void *stop_elsewhere(void *status) {
  *(int *)status = dftrace_node_stop(g_train); /* open on the main thread, not here */
  return NULL;
}

/* The forked child: what its parent had open is not its own; its own uses work. */
static int in_child(dftrace_node_t *forward) {
  EXPECT(dftrace_node_stop(g_train), DFTRACE_ERR_STATE);
  EXPECT(dftrace_node_start(forward), DFTRACE_OK);
  EXPECT(dftrace_node_stop(forward), DFTRACE_OK);
  EXPECT(dftrace_finalize(), DFTRACE_OK);
  return failures ? 1 : 0;
}

int main(void) {
  dftrace_node_t *forward, *iterate, *off;
  pthread_t t;
  pid_t pid;
  int status = 0;
  g_train = dftrace_node_find("pipeline.train");
  forward = dftrace_node_find("compute.forward");
  iterate = dftrace_node_child(dftrace_category("solver"), "iterate");
  off = dftrace_node_child(dftrace_category("solver"), "off");
  dftrace_node_disable(off);

  EXPECT(dftrace_node_stop(g_train), DFTRACE_ERR_STATE); /* never started */
  EXPECT(dftrace_node_start(NULL), DFTRACE_ERR_INVALID_ARGUMENT);
  EXPECT(dftrace_node_stop(NULL), DFTRACE_ERR_INVALID_ARGUMENT);
  EXPECT(dftrace_node_start(off), DFTRACE_ERR_DISABLED);
  EXPECT(dftrace_node_stop(off), DFTRACE_ERR_STATE);

  EXPECT(dftrace_node_start(g_train), DFTRACE_OK); /* train, level 1 */
  EXPECT(dftrace_node_start(forward), DFTRACE_OK); /* forward, level 2 */
  EXPECT(dftrace_node_start(forward), DFTRACE_OK); /* forward, level 3 */
  EXPECT(dftrace_node_start(iterate), DFTRACE_OK); /* iterate, level 4 */
  EXPECT(dftrace_node_stop(forward), DFTRACE_OK);  /* the level 3 forward, before iterate */
  EXPECT(dftrace_node_stop(iterate), DFTRACE_OK);
  EXPECT(dftrace_node_stop(forward), DFTRACE_OK); /* the level 2 forward */
  EXPECT(dftrace_node_stop(forward), DFTRACE_ERR_STATE);
  EXPECT(dftrace_node_stop(iterate), DFTRACE_ERR_STATE);

  if (pthread_create(&t, NULL, stop_elsewhere, &status) != 0) return 2;
  pthread_join(t, NULL);
  EXPECT(status, DFTRACE_ERR_STATE);

  pid = fork();
  if (pid < 0) return 2;
  if (pid == 0) _exit(in_child(forward));
  if (waitpid(pid, &status, 0) != pid) return 2;
  EXPECT(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);

  EXPECT(dftrace_node_stop(g_train), DFTRACE_OK); /* train ends, around everything above */

  EXPECT(dftrace_node_start(g_train), DFTRACE_OK); /* open when the trace ends: not written */
  EXPECT(dftrace_finalize(), DFTRACE_OK);
  EXPECT(dftrace_node_stop(g_train), DFTRACE_OK);
  EXPECT(dftrace_node_stop(g_train), DFTRACE_ERR_STATE);
  EXPECT(dftrace_node_start(g_train), DFTRACE_ERR_DISABLED);
  EXPECT(dftrace_node_stop(g_train), DFTRACE_ERR_STATE);
  return failures ? 1 : 0;
}
