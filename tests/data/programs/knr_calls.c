/* Calls through an unprototyped declaration (call type differs from the callee's type). */
int legacy();
int use_legacy(int x) { return legacy(x, 2) + legacy(); }
int legacy(int a, int b) { return a - b; }
