/* dftracer_io_c.c: a DFTracer-annotated C program (drop-in header, unchanged) writing a file in
 * the data directory DFTRACER_C_INIT names, with a child that forks and execs a program (the
 * child's exec image is not traced: nothing preloads it). test_io.py checks the events. */
#include <dftracer/dftracer.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void work(const char *file) {
  DFTRACER_C_FUNCTION_START();
  FILE *f = fopen(file, "w+");
  if (!f) exit(1);
  fwrite("hello", 5, 1, f);
  pid_t child = fork();
  if (child == 0) {
    char *args[] = {"true", NULL};
    execv("/bin/true", args);
    _exit(127);
  }
  int status = -1;
  waitpid(child, &status, 0);
  fclose(f);
  DFTRACER_C_FUNCTION_END();
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  DFTRACER_C_INIT(NULL, argv[1], NULL);
  char file[4096];
  snprintf(file, sizeof file, "%s/demo_c.txt", argv[1]);
  work(file);
  DFTRACER_C_FINI();
  printf("dftracer_io_c: ok\n");
  return 0;
}
