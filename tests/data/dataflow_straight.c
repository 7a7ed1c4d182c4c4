/* Data-flow test fixture: straight-line code, globals, shared constants and repeated expressions. */
int g = 5;
int h[4];

int mix(int a, int b) {
  int x = a + b, y = b + a, z = a - b, w = b - a;
  h[0] = x * 7; h[1] = y * 7; h[2] = z ^ g; h[3] = w ^ g;
  return h[0] + h[1] + h[2] + h[3] + (a & b) + (b & a);
}

int main(void) { return mix(g, 3) > 10 ? 1 : mix(3, g); }
