/* Static and inline functions, an unused static function, and a declaration never called. */
static inline int sq(int x) { return x * x; }
static int unused(int x) { return x + 1; }
extern int never_called(int);
int sum_sq(int a, int b) { return sq(a) + sq(b); }
int (*keep)(int) = unused;
