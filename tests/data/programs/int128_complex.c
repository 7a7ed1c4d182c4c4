/* 128-bit integers and complex numbers. */
#include <complex.h>
__int128 square128(__int128 x) { return x * x + (x >> 3); }
double complex rotate(double complex z) { return z * I + conj(z); }
