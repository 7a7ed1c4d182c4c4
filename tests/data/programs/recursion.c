/* Direct recursion, with two recursive call sites. */
long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int ackermann(int m, int n) {
  if (m == 0) return n + 1;
  if (n == 0) return ackermann(m - 1, 1);
  return ackermann(m - 1, ackermann(m, n - 1));
}
