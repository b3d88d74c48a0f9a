/* Batch mode's order of batches: by cost, most expensive first (plan_batch.c
 * deals them out to ranks in this order), and the padding copies put in
 * place. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "algo/radix_sort.h"
#include "core/bigarray.h"
#include "plan/batch_order.h"

static int cmp_batch_cost_desc(const void *a, const void *b)
{
    const plan_batch *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost < y->cost ? 1 : -1;
    return (x->begin > y->begin) - (x->begin < y->begin);
}

/* A key whose ascending order is the descending order of cost (finite; -0
 * counts as 0, as the comparison does). */
static uint64_t cost_desc_key(double cost)
{
    uint64_t bits;
    if (cost == 0)
        cost = 0; /* -0 == 0 */
    memcpy(&bits, &cost, sizeof bits);
    uint64_t ascending = bits >> 63 ? ~bits : bits | (uint64_t)1 << 63;
    return ~ascending;
}

/* Sorts the batches as cmp_batch_cost_desc orders them, ties (a padding copy
 * and its original) in their present order: two stable radix passes, by begin
 * and then by cost, and one move of the batches. On millions of batches
 * glibc's qsort (a merge sort through pointers, a call per comparison) was a
 * visible part of the plan; and the order of ties no longer rests on the C
 * library: the C standard does not make qsort stable, and glibc's merge sort
 * turns into its quicksort when its scratch would exceed a quarter of the
 * machine's memory. A NaN cost (no order) or no memory for the scratch:
 * qsort, as before. Returns 1 when the order is the stable one (radix). */
int es_batches_sort_by_cost(plan_batch *b, size_t n, es_fill fill)
{
    fill = ES_FILL_MAP | (fill & ES_FILL_NO_HUGE);
    /* fresh memory, each page mapped in one call rather than a fault apiece
     * (core/bigarray.h): the faults were most of this sort's time */
    es_radix_pair *pairs = es_bigarray_alloc(n, sizeof *pairs, fill);
    es_radix_pair *tmp = es_bigarray_alloc(n, sizeof *tmp, fill);
    plan_batch *sorted = es_bigarray_alloc(n, sizeof *sorted, fill);
    int finite = 1;
    for (size_t i = 0; i < n && finite; i++)
        finite = !isnan(b[i].cost);
    if (!pairs || !tmp || !sorted || !finite) {
        free(pairs), free(tmp), free(sorted);
        qsort(b, n, sizeof *b, cmp_batch_cost_desc);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        pairs[i] = (es_radix_pair){b[i].begin, i};
    es_radix_sort_pairs(pairs, n, tmp);
    for (size_t i = 0; i < n; i++)
        pairs[i].key = cost_desc_key(b[pairs[i].val].cost);
    es_radix_sort_pairs(pairs, n, tmp);
    for (size_t i = 0; i < n; i++)
        sorted[i] = b[pairs[i].val];
    memcpy(b, sorted, n * sizeof *b);
    free(pairs), free(tmp), free(sorted);
    return 1;
}

/* Whether batch x comes after y in es_batches_sort_by_cost's order (finite costs). */
static int goes_after(const plan_batch *x, const plan_batch *y)
{
    uint64_t kx = cost_desc_key(x->cost), ky = cost_desc_key(y->cost);
    return kx != ky ? kx > ky : x->begin > y->begin;
}

/* b[0, n) sorted by es_batches_sort_by_cost, b[n, n + add) appended after (the
 * padding copies): leaves b[0, n + add) in the order a stable sort of the
 * whole would give, each copy after the batches of its cost and begin that
 * were there before it. The copies are sorted on their own (add < K) and
 * merged from the back: being copies of the cheapest batches, they go near
 * the end, and only the batches after the first of them move. Returns 0 when
 * the copies could not be sorted stably (no memory): the caller then sorts
 * the whole. */
int es_batches_merge_appended(plan_batch *b, size_t n, size_t add, es_fill fill)
{
    plan_batch *c = malloc((add ? add : 1) * sizeof *c);
    if (!c)
        return 0;
    memcpy(c, b + n, add * sizeof *c);
    if (!es_batches_sort_by_cost(c, add, fill)) {
        free(c);
        return 0;
    }
    size_t i = n, j = add, k = n + add;
    while (j > 0) {
        if (i > 0 && goes_after(&b[i - 1], &c[j - 1]))
            b[--k] = b[--i];
        else
            b[--k] = c[--j];
    }
    free(c);
    return 1;
}
