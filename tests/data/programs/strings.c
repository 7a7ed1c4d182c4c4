/* String handling with library calls and character arithmetic. */
#include <string.h>
#include <stdio.h>
int count_vowels(const char *s) {
  int n = 0;
  for (size_t i = 0; i < strlen(s); i++)
    if (strchr("aeiou", s[i])) n++;
  return n;
}
void shout(char *out, const char *in) { strcpy(out, in); for (char *p = out; *p; p++) if (*p >= 'a' && *p <= 'z') *p -= 32; printf("%s\n", out); }
