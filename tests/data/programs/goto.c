/* goto into and out of loops; a label reached only by goto. */
int search(const int *xs, int n, int v) {
  int i = 0;
again:
  if (i >= n) goto missing;
  if (xs[i] == v) goto found;
  i++;
  goto again;
found:
  return i;
missing:
  return -1;
}
