/* What every mode builder finishes with (plan_internal.h): the batches a
 * worker's stream predicts under the loader's sort buffer and batching rule,
 * and the common metrics from the loads. Apart from plan.c, which calls the
 * builders, so that builders and driver do not call each other. */
#include <stdlib.h>

#include "algo/radix_sort.h"
#include "loader/batching.h"
#include "plan/plan_internal.h"

uint64_t es_plan_predict_batches(const es_plan *p, const size_t *rows, size_t n)
{
    if (p->s.batch_size)
        return es_static_batches(n, p->s.batch_size);
    /* The sort buffer orders each chunk of sort_size rows by frames; the
     * batcher's state carries across chunks, so the stream is batched as one
     * sequence. Keys pack (frames, position) so a plain sort is stable. */
    size_t chunk = p->s.sort_size ? p->s.sort_size : 1;
    uint64_t *keys = malloc((n ? n : 1) * sizeof *keys);
    uint64_t *tmp = malloc((n < chunk ? (n ? n : 1) : chunk) * sizeof *tmp);
    uint32_t *stream = malloc((n ? n : 1) * sizeof *stream);
    uint64_t batches = 0;
    if (keys && tmp && stream) {
        /* (frames, position in the chunk): distinct keys, so the radix sort's
         * order is the stable sort by frames Python's sort gives */
        for (size_t i = 0; i < n; i++)
            keys[i] = (uint64_t)p->frames[rows[i]] << 32 | (uint32_t)(i % chunk);
        for (size_t at = 0; at < n; at += chunk)
            es_radix_sort_u64(keys + at, n - at < chunk ? n - at : chunk, tmp);
        for (size_t i = 0; i < n; i++)
            stream[i] = (uint32_t)(keys[i] >> 32);
        batches = es_dynamic_batches(stream, n, p->s.max_frames_in_batch, NULL, NULL);
    }
    free(keys);
    free(tmp);
    free(stream);
    return batches;
}

void es_plan_finish_metrics(es_plan *p)
{
    es_plan_metrics *m = &p->metrics;
    double total = 0, max = 0;
    uint64_t min_b = UINT64_MAX, max_b = 0, all_b = 0;
    for (uint32_t r = 0; r < p->K; r++) {
        es_plan_load rank;
        es_plan_rank_load(p, r, -1, &rank);
        total += rank.cost;
        if (rank.cost > max)
            max = rank.cost;
        if (rank.batches < min_b)
            min_b = rank.batches;
        if (rank.batches > max_b)
            max_b = rank.batches;
        all_b += rank.batches;
    }
    double mean = total / p->K;
    m->imbalance = mean > 0 ? max / mean - 1 : 0;
    m->lower_bound_gap = m->lower_bound > 0 ? max / m->lower_bound - 1 : 0;
    m->batch_spread = max_b - min_b;
    m->total_batches = all_b;
    m->retention = all_b ? (double)p->K * (double)min_b / (double)all_b : 1;
    /* distinct utterances planned: padding repeats are not counted again, and
     * dropped or carried ones are not planned this epoch */
    m->kept = p->n_kept - p->n_carried;
    m->filtered = 0;
    for (size_t i = 1; i < ES_DROP_REASONS; i++)
        m->filtered += p->filtered[i];
}
