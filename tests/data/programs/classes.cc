// C++ classes with virtual functions (indirect calls through vtables), new/delete, references.
struct Shape { virtual ~Shape() {} virtual double area() const = 0; };
struct Square : Shape { double s; explicit Square(double v) : s(v) {} double area() const override { return s * s; } };
struct Circle : Shape { double r; explicit Circle(double v) : r(v) {} double area() const override { return 3.14159 * r * r; } };
double total(int n) {
  double t = 0;
  for (int i = 0; i < n; i++) { Shape *s = (i & 1) ? static_cast<Shape *>(new Square(i)) : new Circle(i); t += s->area(); delete s; }
  return t;
}
