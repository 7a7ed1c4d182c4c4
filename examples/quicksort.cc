// Quicksort on a template container, with recursion and a comparator object.
#include <utility>

template <typename T, typename Less>
void quicksort(T *xs, long lo, long hi, Less less) {
  if (lo >= hi) return;
  T pivot = xs[(lo + hi) / 2];
  long i = lo, j = hi;
  while (i <= j) {
    while (less(xs[i], pivot)) i++;
    while (less(pivot, xs[j])) j--;
    if (i <= j) std::swap(xs[i++], xs[j--]);
  }
  quicksort(xs, lo, j, less);
  quicksort(xs, i, hi, less);
}

struct Descending {
  bool operator()(int a, int b) const { return a > b; }
};

int sort_descending(int *xs, long n) {
  quicksort(xs, 0, n - 1, Descending());
  return xs[0];
}
