/* memset/memcpy/memmove intrinsics on arrays and structs. */
#include <string.h>
struct buf { char data[64]; int len; };
void reset(struct buf *b) { memset(b, 0, sizeof *b); }
void copy(struct buf *dst, const struct buf *src) { memcpy(dst, src, sizeof *dst); *dst = *src; }
void shift(char *s, int n) { memmove(s + 1, s, n); }
