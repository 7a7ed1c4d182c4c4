/* A dense switch with fallthrough and several cases sharing one target. */
int classify(int c) {
  int r = 0;
  switch (c) {
    case 0: case 1: case 2: r = 10; break;
    case 3: r = 20;
    case 4: r += 5; break;
    case 5: return 7;
    default: r = -1;
  }
  return r;
}
