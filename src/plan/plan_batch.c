/* Batch mode: every rank gets exactly the same number of
 * batches, and at every step the K batches the ranks train cost nearly the
 * same, so no rank waits at the join and none runs out early.
 *
 * 1. Kept utterances sorted by frames (longest first) are packed with the
 *    loader's own rule (dynamic_batch, or static batch_size): neighbours in
 *    length share a batch, so padding stays low. Epochs other than 0 sort by
 *    a seeded, slightly stretched length, so each epoch has its own batches.
 * 2. The remainder (batch count mod K) is padded, dropped or carried.
 * 3. Batches sorted by cost are cut into steps of K consecutive batches —
 *    nearly equal within a step — and within a step the most expensive batch
 *    goes to the rank with the least work so far.
 * 4. Steps are put in a seeded random order (seed, epoch), so training does
 *    not see all long batches first; rank r's batch at step s is produced by
 *    worker s mod W (the DataLoader takes batches from its workers in turn). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algo/radix_sort.h"
#include "core/bigarray.h"
#include "loader/batching.h"
#include "plan/batch_order.h"
#include "plan/plan_internal.h"

static int cmp_u64_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x < y) - (x > y);
}

/* Sorts keys descending (algo/radix_sort.h on the inverted keys). Keys are
 * distinct, so the order is qsort's exactly; on 50 M keys a comparison sort
 * took seconds of the plan. Falls back to qsort when the scratch array cannot
 * be had. */
static void sort_u64_desc(uint64_t *keys, size_t n, uint64_t *tmp)
{
    if (!tmp) {
        qsort(keys, n, sizeof *keys, cmp_u64_desc);
        return;
    }
    /* ascending order of ~key is descending order of key */
    for (size_t i = 0; i < n; i++)
        keys[i] = ~keys[i];
    es_radix_sort_u64(keys, n, tmp);
    for (size_t i = 0; i < n; i++)
        keys[i] = ~keys[i];
}

/* SplitMix64: a tiny, well-mixed generator; the step order only needs to be
 * reproducible from (seed, epoch), not cryptographic. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* How far a row's length may be stretched when sorting for packing in epochs
 * other than 0: neighbours within ~2 % of each other trade batches from one
 * epoch to the next, so every epoch trains its own batch compositions (most
 * batches differ), while the padding stays close to an exact length sort's
 * (test_plan: within 0.5 % of all frames; 10 % cost 3 %). */
#define EPOCH_LENGTH_JITTER 0.02

/* The length a row is sorted by: its frames in epoch 0 (the tightest packing),
 * frames stretched by a factor in [1, 1 + EPOCH_LENGTH_JITTER) drawn from
 * (seed, epoch, row) otherwise. Packing still counts the real frames. */
static uint64_t sort_length(const es_plan *p, size_t row)
{
    uint64_t frames = p->frames[row];
    if (p->s.epoch == 0)
        return frames;
    uint64_t state = p->s.seed ^ ((uint64_t)p->s.epoch * 0xd1b54a32d192ed03ull) ^
                     ((uint64_t)row * 0x9e3779b97f4a7c15ull);
    double u = (double)(splitmix64(&state) >> 11) / 9007199254740992.0; /* [0, 1) */
    uint64_t stretched = frames + (uint64_t)((double)frames * EPOCH_LENGTH_JITTER * u);
    return stretched > UINT32_MAX ? UINT32_MAX : stretched;
}

/* Kept rows, longest first (by sort_length); ties in table order. */
static size_t *rows_by_length(const es_plan *p)
{
    size_t n = p->n_kept;
    uint64_t *keys = malloc((n ? n : 1) * sizeof *keys);
    size_t *rows = malloc((n ? n : 1) * sizeof *rows);
    uint64_t *tmp = n > 1 ? malloc(n * sizeof *tmp) : NULL; /* the sort's scratch */
    if (!keys || !rows) {
        free(keys), free(rows), free(tmp);
        return NULL;
    }
    /* Fresh pages of the keys, the sort's scratch and the rows are prepared
     * in step while the keys are made (core/bigarray.h): the scratch is then
     * ready when the sort scatters into it, the rows when they are written. */
    es_bigarray_col cols[3] = {{keys, sizeof *keys}, {rows, sizeof *rows}, {tmp, sizeof *tmp}};
    es_bigarray_writer w;
    es_bigarray_begin(&w, p->fill, cols, 3, n);
    /* frames in the high half, inverted table position in the low half: a
     * descending sort of the keys is by frames descending, then position
     * ascending. Tables above 2^32 rows are refused by the caller. */
    for (size_t k = 0; k < n; k++) {
        es_bigarray_reach(&w, k);
        keys[k] = sort_length(p, p->kept[k]) << 32 | (uint32_t)~(uint32_t)k;
    }
    es_bigarray_end(&w);
    es_plan_progress(p, PLAN_PASS_PLACE, 1, 5);
    sort_u64_desc(keys, n, tmp);
    for (size_t k = 0; k < n; k++)
        rows[k] = p->kept[(uint32_t)~(uint32_t)keys[k]];
    es_plan_progress(p, PLAN_PASS_PLACE, 2, 5);
    free(keys), free(tmp);
    return rows;
}

enum { AHEAD = 16 }; /* rows prefetched ahead of measure_batch */

/* The rows are in length order, scattered over the table: measure_batch
 * fetches the row AHEAD places on (into the next batches) for its own loop
 * and for es_cost_batch_terms' pass over the same rows right after it. */
static inline void prefetch_batch_row(const es_plan *p, size_t i)
{
    if (i + AHEAD >= p->n_batch_rows)
        return;
    __builtin_prefetch(&p->frames[p->batch_rows[i + AHEAD]]);
    const es_cost_row *ahead = &p->table->rows[p->batch_rows[i + AHEAD]];
    __builtin_prefetch(&ahead->sample_rate);
    __builtin_prefetch(&ahead->flags); /* may be in the row's next line */
}

/* A batch's cost: the padded batch's terms (es_cost_batch_terms: n × longest
 * for the padded lengths, as the loader pads and its budget counts), the same
 * figure `equishard calibrate` fits step times to. */
static void measure_batch(const es_plan *p, plan_batch *b)
{
    uint64_t frames = 0;
    uint32_t longest = 0;
    for (size_t i = b->begin; i < b->end; i++) {
        prefetch_batch_row(p, i);
        size_t row = p->batch_rows[i];
        frames += p->frames[row];
        if (p->frames[row] > longest)
            longest = p->frames[row];
    }
    double x[ES_TERM_COUNT];
    es_cost_batch_terms(&p->s.model, p->table, p->batch_rows + b->begin, b->end - b->begin, x);
    b->frames = frames;
    b->longest = longest;
    b->cost = es_cost_batch(&p->s.model, x);
}

static int pack(es_context *ctx, es_plan *p)
{
    size_t n = p->n_kept;
    p->batch_rows = rows_by_length(p);
    uint32_t *frames = malloc((n ? n : 1) * sizeof *frames);
    size_t *ends = malloc((n ? n : 1) * sizeof *ends);
    /* room for the padding copies: fewer than K more batches */
    p->batches = malloc((n + p->K) * sizeof *p->batches);
    if (!p->batch_rows || !frames || !ends || !p->batches) {
        free(frames), free(ends);
        return es_fail(ctx, ES_ERR_NOMEM, "plan: out of memory");
    }
    p->n_batch_rows = n;
    size_t nb;
    if (p->s.batch_size) {
        nb = es_static_batches(n, p->s.batch_size);
        for (size_t b = 0; b < nb; b++)
            ends[b] = (b + 1) * p->s.batch_size < n ? (b + 1) * p->s.batch_size : n;
    } else {
        es_bigarray_col col = {frames, sizeof *frames};
        es_bigarray_writer w;
        es_bigarray_begin(&w, p->fill, &col, 1, n);
        for (size_t k = 0; k < n; k++) {
            es_bigarray_reach(&w, k);
            frames[k] = p->frames[p->batch_rows[k]];
        }
        es_bigarray_end(&w);
        nb = es_dynamic_batches(frames, n, p->s.max_frames_in_batch, ends, NULL);
    }
    for (size_t b = 0; b < nb; b++) {
        if ((b & 4095) == 0 && b) /* batches of one to hundreds of rows */
            es_plan_progress(p, PLAN_PASS_PLACE, 2 * nb + b, 5 * nb);
        plan_batch *pb = &p->batches[b];
        memset(pb, 0, sizeof *pb);
        pb->begin = b ? ends[b - 1] : 0;
        pb->end = ends[b];
        measure_batch(p, pb);
    }
    p->n_batches = nb;
    free(frames), free(ends);
    es_plan_progress(p, PLAN_PASS_PLACE, 3, 5);
    return ES_OK;
}

/* Pads, drops or carries the (count mod K) cheapest batches. Batches are sorted
 * by cost, most expensive first, on return. */
static int settle_remainder(es_context *ctx, es_plan *p)
{
    int stable = es_batches_sort_by_cost(p->batches, p->n_batches, p->fill);
    size_t r = p->n_batches % p->K;
    if (r == 0)
        return ES_OK;
    if (p->s.remainder == ES_REMAINDER_PAD) {
        size_t add = p->K - r;
        /* repeat the cheapest batches: the least extra work for the same count */
        for (size_t i = 0; i < add; i++) {
            plan_batch copy = p->batches[p->n_batches - 1 - (i % p->n_batches)];
            copy.repeat = 1;
            p->metrics.remainder_utterances += copy.end - copy.begin;
            p->batches[p->n_batches + i] = copy;
        }
        size_t sorted = p->n_batches;
        p->n_batches += add;
        p->metrics.remainder_batches = add;
        /* as sorting all of them again would (a NaN cost: qsort, as before) */
        if (!stable || !es_batches_merge_appended(p->batches, sorted, add, p->fill))
            es_batches_sort_by_cost(p->batches, p->n_batches, p->fill);
        return ES_OK;
    }
    size_t rows = 0;
    for (size_t i = p->n_batches - r; i < p->n_batches; i++)
        rows += p->batches[i].end - p->batches[i].begin;
    p->carried = malloc((rows ? rows : 1) * sizeof *p->carried);
    if (!p->carried)
        return es_fail(ctx, ES_ERR_NOMEM, "plan: out of memory");
    for (size_t i = p->n_batches - r; i < p->n_batches; i++)
        for (size_t k = p->batches[i].begin; k < p->batches[i].end; k++)
            p->carried[p->n_carried++] = p->batch_rows[k];
    p->n_batches -= r;
    p->metrics.remainder_batches = r;
    p->metrics.remainder_utterances = rows;
    return ES_OK;
}

static int assign_steps(es_context *ctx, es_plan *p)
{
    size_t steps = p->n_batches / p->K;
    uint64_t *order = malloc((steps ? steps : 1) * sizeof *order);
    double *rank_cost = calloc(p->K, sizeof *rank_cost);
    uint32_t *ranks = malloc(p->K * sizeof *ranks);
    if (!order || !rank_cost || !ranks) {
        free(order), free(rank_cost), free(ranks);
        return es_fail(ctx, ES_ERR_NOMEM, "plan: out of memory");
    }
    /* Fisher–Yates over step positions */
    uint64_t state = p->s.seed ^ ((uint64_t)p->s.epoch * 0xd1b54a32d192ed03ull);
    for (size_t s = 0; s < steps; s++)
        order[s] = s;
    for (size_t s = steps; s > 1; s--) {
        size_t j = (size_t)(splitmix64(&state) % s);
        uint64_t t = order[s - 1];
        order[s - 1] = order[j];
        order[j] = t;
    }
    for (size_t g = 0; g < steps; g++) {
        /* ranks by work so far, least first (insertion: K is moderate, and the
         * order changes little between steps) */
        for (uint32_t r = 0; r < p->K; r++)
            ranks[r] = r;
        for (uint32_t i = 1; i < p->K; i++) {
            uint32_t v = ranks[i];
            uint32_t j = i;
            while (j > 0 && (rank_cost[ranks[j - 1]] > rank_cost[v] ||
                             (rank_cost[ranks[j - 1]] == rank_cost[v] && ranks[j - 1] > v))) {
                ranks[j] = ranks[j - 1];
                j--;
            }
            ranks[j] = v;
        }
        for (uint32_t i = 0; i < p->K; i++) {
            plan_batch *b = &p->batches[g * p->K + i];
            b->rank = ranks[i];
            b->step = order[g];
            b->worker = (uint32_t)(order[g] % p->W);
            rank_cost[ranks[i]] += b->cost;
        }
    }
    p->metrics.steps = steps;
    free(order), free(rank_cost), free(ranks);
    return ES_OK;
}

static void batch_metrics(es_plan *p)
{
    size_t steps = p->metrics.steps;
    double straggler = 0, total = 0;
    for (size_t g = 0; g < steps; g++) {
        double max = 0, sum = 0;
        for (uint32_t i = 0; i < p->K; i++) {
            double c = p->batches[g * p->K + i].cost;
            sum += c;
            if (c > max)
                max = c;
        }
        straggler += sum > 0 ? max / (sum / p->K) : 1;
    }
    for (size_t b = 0; b < p->n_batches; b++) {
        const plan_batch *pb = &p->batches[b];
        es_plan_load *l = &p->loads[(size_t)pb->rank * p->W + pb->worker];
        l->cost += pb->cost;
        l->frames += pb->frames;
        l->utterances += pb->end - pb->begin;
        l->batches++;
        total += pb->cost;
    }
    p->metrics.step_straggler = steps ? straggler / steps : 0;
    p->metrics.lower_bound = total / p->K;
    p->metrics.method = p->s.batch_size ? "static-batch+steps" : "dynamic-batch+steps";
}

int es_plan_build_batch(es_context *ctx, es_plan *p)
{
    if (p->n_kept > UINT32_MAX)
        return es_fail(ctx, ES_ERR_UNSUPPORTED, "plan: batch mode handles up to 2^32 utterances");
    int rc = pack(ctx, p);
    if (rc == ES_OK)
        rc = settle_remainder(ctx, p);
    if (rc == ES_OK && p->n_batches < p->K && p->s.remainder != ES_REMAINDER_PAD)
        return es_fail(ctx, ES_ERR_FORMAT, "plan: only %zu batches for %u ranks: every rank "
                       "would get none; use remainder pad or fewer ranks", p->n_batches + p->metrics.remainder_batches, p->K);
    if (rc == ES_OK) {
        es_plan_progress(p, PLAN_PASS_PLACE, 4, 5);
        rc = assign_steps(ctx, p);
    }
    if (rc == ES_OK) {
        batch_metrics(p);
        es_plan_finish_metrics(p);
    }
    return rc;
}
