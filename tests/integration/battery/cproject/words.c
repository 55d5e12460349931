#include <string.h>
unsigned long word_hash(const char *s) {
  unsigned long h = 5381;
  for (size_t i = 0; i < strlen(s); ++i) h = h * 33 + (unsigned char)s[i];
  return h;
}
