/* The order batch mode deals its batches out in (batch_order.c). */
#ifndef ES_PLAN_BATCH_ORDER_H
#define ES_PLAN_BATCH_ORDER_H

#include <stddef.h>

#include "plan/plan_internal.h"

/* Sorts b[0, n) by cost, most expensive first, then by begin; ties (a padding
 * copy and its original) keep their present order. Returns 1 when it did so
 * with the stable radix sort, 0 when it fell back to qsort (a NaN cost, or no
 * memory for the scratch), whose order of ties is the C library's. `fill`:
 * the plan's flags for big arrays (only ES_FILL_NO_HUGE counts here). */
int es_batches_sort_by_cost(plan_batch *b, size_t n, es_fill fill);

/* b[0, n) as es_batches_sort_by_cost left it (returning 1), b[n, n + add)
 * appended after: leaves b[0, n + add) as es_batches_sort_by_cost of the whole
 * would, without sorting it again. Returns 0, b unchanged, when out of memory. */
int es_batches_merge_appended(plan_batch *b, size_t n, size_t add, es_fill fill);

#endif
