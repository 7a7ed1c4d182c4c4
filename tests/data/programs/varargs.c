/* A variadic function using va_list, and calls to it and to printf. */
#include <stdarg.h>
#include <stdio.h>
int sum(int count, ...) {
  va_list ap;
  va_start(ap, count);
  int s = 0;
  for (int i = 0; i < count; i++) s += va_arg(ap, int);
  va_end(ap);
  return s;
}
int main(void) { printf("%d %d\n", sum(3, 1, 2, 3), sum(0)); return 0; }
