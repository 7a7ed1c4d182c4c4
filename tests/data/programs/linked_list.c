/* A linked list with malloc/free and a self-referential struct. */
#include <stdlib.h>
struct node { int value; struct node *next; };
struct node *push(struct node *head, int v) { struct node *n = malloc(sizeof *n); n->value = v; n->next = head; return n; }
int length(const struct node *n) { int k = 0; while (n) { k++; n = n->next; } return k; }
void destroy(struct node *n) { while (n) { struct node *next = n->next; free(n); n = next; } }
