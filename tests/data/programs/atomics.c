/* Atomic operations: cmpxchg, atomicrmw, fences, volatile accesses. */
#include <stdatomic.h>
atomic_int shared;
volatile int flag;
int bump(int expected) {
  atomic_fetch_add(&shared, 2);
  atomic_compare_exchange_strong(&shared, &expected, 5);
  atomic_thread_fence(memory_order_seq_cst);
  flag = 1;
  return atomic_load(&shared) + flag;
}
