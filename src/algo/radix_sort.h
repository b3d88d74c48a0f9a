/* Sorting 64-bit keys by their bytes (LSD radix sort), for the planner's
 * integer sorts: keys that pack a value above a position (frames << 32 | i)
 * are distinct, so the order is the one any sort gives, and qsort's call per
 * comparison was most of the time (es_plan_predict_batches sorts every
 * worker's stream in chunks of the loader's sort buffer). */
#ifndef ES_RADIX_SORT_H
#define ES_RADIX_SORT_H

#include <stddef.h>
#include <stdint.h>

/* Sorts keys[0..n) ascending; tmp has room for n keys (its contents are
 * scratch). A byte that is the same in every key costs a counting pass, not a
 * move, so small values sort in few passes. */
void es_radix_sort_u64(uint64_t *keys, size_t n, uint64_t *tmp);

/* A key and what travels with it (an index, say). */
typedef struct es_radix_pair {
    uint64_t key, val;
} es_radix_pair;

/* Sorts pairs[0..n) by key, ascending, and stably: pairs with equal keys keep
 * their order, so sorting by a minor key and then by a major one orders by
 * both. tmp has room for n pairs (scratch). */
void es_radix_sort_pairs(es_radix_pair *pairs, size_t n, es_radix_pair *tmp);

#endif
