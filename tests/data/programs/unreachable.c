/* Unreachable code: after return, after a noreturn call, and __builtin_unreachable. */
#include <stdlib.h>
int f(int x) {
  if (x > 0) return 1;
  else return 2;
  x = 7;          /* dead */
  return x;
}
int g(int x) { if (x) exit(1); else abort(); return 3; }
int h(int x) { if (x == 1) return 5; __builtin_unreachable(); }
