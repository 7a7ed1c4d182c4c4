/* Nested loops over a 2-D array with an early exit. */
int grid[8][8];
int find(int value) {
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++) {
      if (grid[i][j] == value) return i * 8 + j;
      grid[i][j] += i ^ j;
    }
  return -1;
}
