/* Growing an array in place: the one amortised-doubling realloc every module
 * appending to arrays uses (no hand-rolled doubling is left under src/). A
 * realloc to an exact size that is not appending stays as it is: a stream's
 * per-run batch arrays (loader/stream.c), the cost-table writer's buffer for
 * one oversized row (costs/cost_table_write.c). */
#ifndef ES_GROW_H
#define ES_GROW_H

#include <stddef.h>

/* Makes *arr (elements of `size` bytes, capacity *cap) hold at least `need`
 * elements, doubling from `first` (or the current capacity). Returns 0, or -1
 * when out of memory or the size would overflow; *arr is then unchanged. */
int es_grow(void **arr, size_t *cap, size_t need, size_t size, size_t first);

#endif
