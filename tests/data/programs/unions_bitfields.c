/* Unions and bit-fields. */
union value { int i; float f; char bytes[4]; };
struct flags { unsigned a : 3; unsigned b : 5; unsigned c : 1; };
float reinterpret(int i) { union value v; v.i = i; return v.f + v.bytes[1]; }
int pack(struct flags *f, int x) { f->a = x; f->b = x >> 3; f->c = !x; return f->a + f->b + f->c; }
