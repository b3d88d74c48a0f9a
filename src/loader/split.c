#include "loader/split.h"

#include <stdlib.h>
#include <string.h>

#include "loader/py_random.h"

void es_loader_split_release(es_loader_split *s)
{
    free(s->items);
    free(s->worker_start);
    free(s->rank_items);
    free(s->rank_start);
    memset(s, 0, sizeof *s);
}

static int alloc_offsets(es_loader_split *s, uint32_t k, uint32_t w)
{
    memset(s, 0, sizeof *s);
    s->k = k;
    s->w = w;
    s->worker_start = calloc((size_t)k * w + 1, sizeof *s->worker_start);
    s->rank_start = calloc((size_t)k + 1, sizeof *s->rank_start);
    return s->worker_start && s->rank_start ? 0 : -1;
}

/* Python's `(x * ceil(m / len(x)))[:m]` when len(x) < m, then `[j::m]` for each j:
 * appends the m slices of `list` (length len) to out, slice j at out_start[j]. */
static size_t slice_all(const uint32_t *list, size_t len, uint32_t m, uint32_t *out,
                        size_t *out_start)
{
    size_t total = len < m ? m : len, o = 0;
    for (uint32_t j = 0; j < m; j++) {
        out_start[j] = o;
        for (size_t i = j; i < total; i += m)
            out[o++] = list[i % len];
    }
    out_start[m] = o;
    return o;
}

/* Upper bound of the entries over all workers of all ranks. */
static size_t cosyvoice_capacity(uint32_t n, uint32_t k, uint32_t w, int partition)
{
    size_t per_rank = partition ? ((size_t)n < k ? 1 : ((size_t)n + k - 1) / k) : n;
    size_t per_rank_workers = per_rank < w ? w : per_rank;
    return per_rank_workers * k;
}

int es_loader_split_cosyvoice(uint32_t n, uint32_t k, uint32_t w, int64_t epoch, int shuffle,
                              int partition, es_loader_split *out)
{
    uint32_t *idx = malloc((size_t)n * sizeof *idx);
    size_t ranks_cap = partition ? ((size_t)n < k ? k : n) : (size_t)n * k;
    if (alloc_offsets(out, k, w) || !idx)
        goto fail;
    out->rank_items = malloc(ranks_cap * sizeof *out->rank_items);
    out->items = malloc(cosyvoice_capacity(n, k, w, partition) * sizeof *out->items);
    if (!out->rank_items || !out->items)
        goto fail;
    for (uint32_t i = 0; i < n; i++)
        idx[i] = i;
    if (partition) {
        if (shuffle) {
            es_pyrandom rng;
            es_pyrandom_seed_i64(&rng, epoch);
            es_pyrandom_shuffle_u32(&rng, idx, n);
        }
        slice_all(idx, n, k, out->rank_items, out->rank_start);
    } else {
        for (uint32_t r = 0; r < k; r++) {
            out->rank_start[r] = (size_t)r * n;
            memcpy(out->rank_items + (size_t)r * n, idx, (size_t)n * sizeof *idx);
        }
        out->rank_start[k] = (size_t)k * n;
    }
    size_t o = 0;
    for (uint32_t r = 0; r < k; r++) {
        size_t b = out->rank_start[r], len = out->rank_start[r + 1] - b;
        size_t *starts = out->worker_start + (size_t)r * w;
        size_t saved_next = o; /* slice_all writes starts[w]; the next rank overwrites it */
        size_t got = slice_all(out->rank_items + b, len, w, out->items + o, starts);
        for (uint32_t j = 0; j <= w; j++)
            starts[j] += saved_next;
        o += got;
    }
    free(idx);
    return 0;
fail:
    free(idx);
    es_loader_split_release(out);
    return -1;
}

int es_loader_split_wenet(uint32_t n, uint32_t k, uint32_t w, int partition, es_loader_split *out)
{
    uint32_t ranks = partition ? k : 1; /* without partition every rank reads all */
    if (alloc_offsets(out, k, w))
        goto fail;
    out->rank_items = malloc((size_t)n * (partition ? 1 : k) * sizeof *out->rank_items);
    out->items = malloc((size_t)n * (partition ? 1 : k) * sizeof *out->items);
    if (!out->rank_items || !out->items)
        goto fail;
    size_t o = 0, ro = 0;
    uint64_t instances = (uint64_t)ranks * w;
    for (uint32_t r = 0; r < k; r++) {
        uint32_t rr = partition ? r : 0;
        out->rank_start[r] = ro;
        for (uint64_t i = rr; i < n; i += ranks)
            out->rank_items[ro++] = (uint32_t)i;
        for (uint32_t j = 0; j < w; j++) {
            out->worker_start[(size_t)r * w + j] = o;
            for (uint64_t i = (uint64_t)j * ranks + rr; i < n; i += instances)
                out->items[o++] = (uint32_t)i;
        }
    }
    out->rank_start[k] = ro;
    out->worker_start[(size_t)k * w] = o;
    return 0;
fail:
    es_loader_split_release(out);
    return -1;
}
