/* Structs by pointer and by value, nested structs, arrays of structs. */
struct point { int x, y; };
struct rect { struct point a, b; const char *label; };
static struct rect rects[4];
int area(const struct rect *r) { return (r->b.x - r->a.x) * (r->b.y - r->a.y); }
struct point mid(struct rect r) { struct point p = { (r.a.x + r.b.x) / 2, (r.a.y + r.b.y) / 2 }; return p; }
int total(void) { int t = 0; for (int i = 0; i < 4; i++) t += area(&rects[i]) + mid(rects[i]).x; return t; }
