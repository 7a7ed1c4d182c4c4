/* for, while and do-while loops with break and continue. */
int sum_to(int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) {
    if (i % 3 == 0) continue;
    if (s > 1000) break;
    s += i;
  }
  int j = n;
  while (j > 0) { s -= j; j /= 2; }
  do { s++; } while (s < 0);
  return s;
}
