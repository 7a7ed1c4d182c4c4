/* GCC vector extensions: vector arithmetic, element access and shuffles. */
typedef int v4si __attribute__((vector_size(16)));
v4si madd(v4si a, v4si b) { return a * b + (v4si){1, 2, 3, 4}; }
int lane(v4si a, int i) { return a[i & 3]; }
v4si reverse(v4si a) { return __builtin_shufflevector(a, a, 3, 2, 1, 0); }
