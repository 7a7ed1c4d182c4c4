/* A small program for the environment's tests: loops, a switch, calls, a global array. */
int table[64];

static int square(int x) { return x * x; }

int weighted_sum(const int *values, int n) {
  int total = 0;
  for (int i = 0; i < n; i++) {
    total += values[i] * 3 + square(i);
  }
  return total;
}

int classify(int x) {
  switch (x & 3) {
    case 0: return 10;
    case 1: return 20;
    case 2: return x + 1;
    default: return -1;
  }
}

int main(int argc, char **argv) {
  (void)argv;
  for (int i = 0; i < 64; i++) table[i] = i * argc + classify(i);
  return weighted_sum(table, 64) & 0xff;
}
