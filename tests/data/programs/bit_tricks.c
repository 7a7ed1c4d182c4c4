/* Bit manipulation, shifts, unsigned arithmetic and builtins. */
unsigned popcount(unsigned x) { unsigned c = 0; while (x) { x &= x - 1; c++; } return c; }
unsigned rotl(unsigned x, int k) { return (x << k) | (x >> (32 - k)); }
int builtins(unsigned x) { return __builtin_clz(x | 1) + __builtin_ctz(x | 8) + __builtin_popcount(x); }
unsigned long long mix(unsigned long long h) { h ^= h >> 33; h *= 0xff51afd7ed558ccdULL; return h ^ (h >> 33); }
