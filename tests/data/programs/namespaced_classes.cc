// C++ with classes in nested namespaces, templates, virtual calls and exceptions (issue 9 item 8): quoted class
// names with `::` in pointer texts (%"class.geo::shapes::Shape"*), lifetime markers on arrays at -O2, vtables.
#include <stdexcept>

namespace geo {
namespace shapes {

class Shape {
 public:
  virtual ~Shape() {}
  virtual int area() const = 0;
};

template <typename T>
class Rect : public Shape {
 public:
  Rect(T w, T h) : w_(w), h_(h) {
    if (w < 0 || h < 0) throw std::invalid_argument("negative side");
  }
  int area() const override { return static_cast<int>(w_ * h_); }

 private:
  T w_, h_;
};

}  // namespace shapes

template <typename T, int N>
struct Stack {
  T items[N];
  int size = 0;
  void push(T item) {
    if (size == N) throw std::length_error("full");
    items[size++] = item;
  }
};

}  // namespace geo

int fill(const char *text);

int total(int w, int h) {
  geo::Stack<geo::shapes::Shape *, 4> stack;
  int sum = 0;
  try {
    geo::shapes::Rect<int> a(w, h);
    geo::shapes::Rect<double> b(w * 0.5, h * 2.0);
    stack.push(&a);
    stack.push(&b);
    for (int i = 0; i < stack.size; ++i) sum += stack.items[i]->area();
  } catch (const std::invalid_argument &) {
    sum = -1;
  } catch (const std::exception &) {
    sum = -2;
  }
  char buffer[32];
  sum += fill(buffer);
  return sum;
}
