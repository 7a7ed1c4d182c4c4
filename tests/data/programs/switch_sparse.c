/* A sparse switch over large and negative values; a switch with only a default. */
const char *name(long code) {
  switch (code) {
    case -100: return "neg";
    case 7: return "seven";
    case 100000: return "big";
    case 1L << 40: return "huge";
  }
  return "other";
}
int only_default(int x) { switch (x) { default: return x * 2; } }
