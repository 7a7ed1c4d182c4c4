/* A library function calling back into the program. */
#include <stdlib.h>
static int cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
void sort(int *xs, int n) { qsort(xs, n, sizeof *xs, cmp); }
