/* Multiway number partitioning: n items with costs into k bins so that the
 * largest bin is as small as possible (plan's shard mode: shards to ranks).
 *
 * Three methods, the best result kept:
 * - LPT (longest processing time first): items by decreasing cost, each to the
 *   least loaded bin. A 4/3-approximation; fast for any n, k.
 * - KK (Karmarkar–Karp largest differencing, k-way): far closer to optimal on
 *   random inputs; O(n k log k) time and O(n k) memory, so only run when n·k is
 *   moderate.
 * - pairwise refinement: moves and swaps between the fullest bin and the others
 *   while the fullest bin shrinks.
 * With `balanced_counts`, bins also get floor(n/k) or ceil(n/k) items each (and
 * the lower bins the larger counts), which lets a loader's `[w::W]` slicing of an
 * interleaved list reproduce the assignment; then only LPT-with-capacity and
 * swaps are used.
 *
 * Deterministic: ties are broken by item index, never by address or time. */
#ifndef ES_PARTITION_H
#define ES_PARTITION_H

#include <stddef.h>
#include <stdint.h>

typedef struct es_partition_result {
    double max_load;     /* the largest bin's total */
    const char *method;  /* "lpt", "kk", "lpt+swap", "kk+swap" */
} es_partition_result;

/* Assigns bin_of[i] in [0, k) for every item. Returns 0, or -1 when out of memory. */
int es_partition(const double *cost, size_t n, uint32_t k, int balanced_counts,
                 uint32_t *bin_of, es_partition_result *res);

/* Individual methods, for tests and the benchmark. Each returns 0 or -1 (ENOMEM). */
int es_partition_lpt(const double *cost, size_t n, uint32_t k, int balanced_counts,
                     uint32_t *bin_of);
int es_partition_kk(const double *cost, size_t n, uint32_t k, uint32_t *bin_of);
/* Improves an assignment in place by moves (unless balanced_counts) and swaps. */
int es_partition_refine(const double *cost, size_t n, uint32_t k, int balanced_counts,
                        uint32_t *bin_of);

/* Largest bin total of an assignment. */
double es_partition_max_load(const double *cost, size_t n, uint32_t k, const uint32_t *bin_of);

#endif
