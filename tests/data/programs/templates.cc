// Templates, a lambda and a function-local static with a guard.
template <typename T> T max_of(T a, T b) { return a < b ? b : a; }
template <typename F> int apply_twice(F f, int x) { return f(f(x)); }
int cached() { static int value = max_of(3, 4); return value; }
int use(int k) { return apply_twice([k](int v) { return v + k; }, 1) + max_of(1.5, 2.5) + cached(); }
