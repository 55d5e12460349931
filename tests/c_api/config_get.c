/* config_get.c: dftrace_config_get (dftrace/plugin.h), the plug-ins' typed read of one
 * configuration key: a value as set (also one that looks like other lines of
 * dftrace_config_describe), a default, a buffer too small, an unknown key, bad arguments. Run
 * with DFTRACE_IO_DATA_DIR set to the hostile value below (CMakeLists.txt). */
#include <stdio.h>
#include <string.h>

#include "dftrace/plugin.h"

static int failures = 0;

static void expect(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "config_get: %s\n", what);
    ++failures;
  }
}

int main(void) {
  /* The environment's value: a separator, a source-like suffix and another key's line in it. */
  const char *hostile = "/data/a:/data/b  (yaml /x) io.exclude = /data";
  char buf[256];
  /* Tracing stays off (DFTRACE_ENABLE=0): the configuration is read all the same. */
  expect(dftrace_init(NULL) == DFTRACE_ERR_DISABLED, "dftrace_init: disabled");
  int n = dftrace_config_get("io.data_dir", buf, sizeof buf);
  expect(n == (int)strlen(hostile), "io.data_dir: the full length");
  expect(strcmp(buf, hostile) == 0, "io.data_dir: the value exactly as set");

  /* A key left at its default: the default, not another key's text. */
  n = dftrace_config_get("io.exclude", buf, sizeof buf);
  expect(n > 0 && strncmp(buf, "/proc:/sys:", 11) == 0, "io.exclude: its default");

  /* Cut to fit, NUL-terminated, the full length returned. */
  char small[6];
  memset(small, 'x', sizeof small);
  n = dftrace_config_get("io.data_dir", small, sizeof small);
  expect(n == (int)strlen(hostile), "cut: the full length");
  expect(strcmp(small, "/data") == 0, "cut: the first 5 bytes and a NUL");
  expect(dftrace_config_get("io.data_dir", NULL, 0) == (int)strlen(hostile), "length only");

  /* Unknown keys and bad arguments. */
  buf[0] = '?';
  expect(dftrace_config_get("io.data", buf, sizeof buf) == DFTRACE_ERR_NOT_FOUND,
         "a key's prefix is not a key");
  expect(dftrace_config_get("no.such.key", buf, sizeof buf) == DFTRACE_ERR_NOT_FOUND,
         "an unknown key");
  expect(buf[0] == '?', "an unknown key leaves the buffer alone");
  expect(dftrace_config_get(NULL, buf, sizeof buf) == DFTRACE_ERR_INVALID_ARGUMENT, "NULL key");
  expect(dftrace_config_get("io.data_dir", NULL, 4) == DFTRACE_ERR_INVALID_ARGUMENT,
         "NULL buffer with a size");
  if (failures == 0) printf("dftrace_config_get: ok\n");
  return failures == 0 ? 0 : 1;
}
