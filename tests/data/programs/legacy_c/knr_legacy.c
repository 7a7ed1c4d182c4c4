/* C as old code and POJ-104 write it, which clang 10 compiled with warnings and clang 16+ rejects:
   implicit int (main, count, parameters), implicit function declarations (printf, strlen, helper),
   int <-> pointer conversions and incompatible (function) pointer types. */
static count = 0;

void takes_int(int x) { count += x; }
void (*callback)(char *) = takes_int;  /* incompatible function pointer types */

main()
{
    char line[100];
    int *cursor = 0;
    long *wide = cursor;          /* incompatible pointer types */
    int address = line;           /* pointer -> int conversion */
    line[0] = 'a';
    line[1] = 0;
    count = strlen(line);         /* implicitly declared library function */
    printf("%d %d\n", count, helper(count, 2));
    callback(line);
    return wide == 0 && address != 0;
}

helper(a, b)                      /* K&R definition, implicit int parameters */
{
    return a * b;
}
