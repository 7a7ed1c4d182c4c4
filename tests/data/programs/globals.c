/* Global scalars, arrays, strings, a static local and a global initialised with a global's address. */
int counter = 3;
static double table[5] = {1.0, 2.0, 3.0};
const char *greeting = "hello";
int *counter_ptr = &counter;
int next(void) { static int calls; calls++; return ++counter + *counter_ptr + (int)table[calls % 5] + greeting[0]; }
