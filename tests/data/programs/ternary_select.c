/* Conditional expressions (phi/select), short-circuit logic. */
int abs_val(int x) { return x > 0 ? x : -x; }
int between(int x, int lo, int hi) { return x >= lo && x <= hi; }
int pick(int a, int b, int c) { return a ? (b || c) : (b && !c); }
