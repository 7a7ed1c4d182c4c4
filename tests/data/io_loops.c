/* Loops, arrays, a switch and a conditional: control edges with positions 0/1/2..., phi and select at -O2. */
int histogram(const int *values, int n, int *bins) {
  int total = 0;
  for (int i = 0; i < n; ++i) {
    switch (values[i] % 4) {
      case 0: bins[0] += 1; break;
      case 1: bins[1] += 2; break;
      case 2: bins[2] += 3; break;
      default: bins[3] += values[i]; break;
    }
    total += values[i] > 0 ? values[i] : -values[i];
  }
  return total;
}

int pick(int c, int k) { return c ? k : k; }
