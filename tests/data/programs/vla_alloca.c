/* Variable-length arrays (stacksave/stackrestore) and alloca. */
#include <alloca.h>
int vla_sum(int n) {
  int s = 0;
  for (int k = 1; k < 3; k++) { int buf[n * k]; for (int i = 0; i < n * k; i++) buf[i] = i; s += buf[n - 1]; }
  char *p = alloca(n);
  p[0] = 1;
  return s + p[0];
}
