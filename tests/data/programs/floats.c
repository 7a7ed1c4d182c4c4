/* Floating point arithmetic, comparisons and conversions. */
#include <math.h>
double norm(double x, double y) { return sqrt(x * x + y * y); }
float lerp(float a, float b, float t) { return a + (b - a) * t; }
int fcmp(double a, double b) { return a < b ? -1 : (a > b ? 1 : (a != a ? 2 : 0)); }
long round_it(double d) { return (long)floor(d + 0.5) + (int)(float)d; }
