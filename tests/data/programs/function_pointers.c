/* Function pointers: a table of callbacks, an indirect call, a function passed as an argument. */
typedef int (*op)(int, int);
static int add(int a, int b) { return a + b; }
static int mul(int a, int b) { return a * b; }
op ops[2] = { add, mul };
int apply(op f, int a, int b) { return f(a, b); }
int run(int which, int a) { op f = ops[which & 1]; return apply(f, a, a) + f(1, 2) + apply(add, 1, 1); }
