/* Calls: direct, recursive, through a pointer, to a declaration (printf); structs, doubles and a string constant. */
#include <stdio.h>

struct point { double x, y; };

static double dot(struct point a, struct point b) { return a.x * b.x + a.y * b.y; }

int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

int apply(int (*f)(int), int v) { return f(v); }

int main(void) {
  struct point p = {1.5, 2.0}, q = {0.25, -4.0};
  printf("%f %d\n", dot(p, q), apply(fib, 10));
  return 0;
}
