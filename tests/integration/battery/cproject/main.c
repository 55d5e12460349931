#include <stdio.h>
long square_area(long side);
long circle_area_x100(long r);
unsigned long word_hash(const char *s);
int main(void) {
  for (long i = 1; i <= 20; ++i)
    printf("%ld %ld %ld %lu\n", i, square_area(i), circle_area_x100(i),
           word_hash("battery") + (unsigned long)i);
  return 0;
}
