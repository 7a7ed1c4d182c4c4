// C++ exceptions: invoke, landingpad, resume, catch clauses, destructors on unwind.
#include <stdexcept>
struct Guard { int *p; explicit Guard(int *q) : p(q) { ++*p; } ~Guard() { --*p; } };
int risky(int x) { if (x > 10) throw std::out_of_range("x"); return x * 2; }
int safe(int x, int *depth) {
  try { Guard g(depth); return risky(x); }
  catch (const std::out_of_range &) { return -1; }
  catch (...) { return -2; }
}
