/* Several return statements and a caller: every exit links back to the call site. */
int sign(int x) { if (x < 0) return -1; if (x == 0) return 0; return 1; }
int signs(int a, int b) { return sign(a) * 3 + sign(b); }
