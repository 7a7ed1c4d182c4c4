/* FizzBuzz: a loop, a chain of branches and a library call. */
#include <stdio.h>

static const char *word(int i) {
  if (i % 15 == 0) return "FizzBuzz";
  if (i % 3 == 0) return "Fizz";
  if (i % 5 == 0) return "Buzz";
  return NULL;
}

int main(void) {
  for (int i = 1; i <= 20; i++) {
    const char *w = word(i);
    if (w) printf("%s\n", w);
    else printf("%d\n", i);
  }
  return 0;
}
