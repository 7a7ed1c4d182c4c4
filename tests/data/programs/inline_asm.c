/* Inline assembly: an asm call has no CALL edge and no data node for the asm. */
int rdtsc_low(void) { unsigned lo, hi; __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi)); return (int)lo; }
int add_asm(int a, int b) { int r; __asm__("leal (%1,%2), %0" : "=r"(r) : "r"(a), "r"(b)); return r; }
