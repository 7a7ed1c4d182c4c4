/* Data-flow test fixture: loops, a switch, equal-length if/else arms (duplicate BFS queue entries), recursion. */
static int sq(int x) { return x * x; }

int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

int classify(int c) {
  switch (c) {
    case 0: case 1: return 10;
    case 2: return 20;
    case 7: c += 3; break;
    default: c = -c;
  }
  return c;
}

int kernel(int *a, int n, int k) {
  int s = 0, t = 0;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < i; ++j) {
      if (a[j] > k) s += a[j]; else s -= a[j];
      if (a[i] & 1) t = t + 1; else t = t + 2;
    }
    while (s > 1000) s /= 2;
  }
  int u = (n + k) * 3, v = (k + n) * 3;
  return s + t + sq(u) + v + classify(k) + fib(k & 7);
}
