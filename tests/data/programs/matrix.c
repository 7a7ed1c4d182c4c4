/* Matrix multiplication with pointer arithmetic and multi-dimensional indexing. */
void matmul(int n, const double *a, const double *b, double *c) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      double s = 0;
      for (int k = 0; k < n; k++) s += a[i * n + k] * *(b + k * n + j);
      c[i * n + j] = s;
    }
}
