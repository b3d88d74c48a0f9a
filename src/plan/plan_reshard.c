/* Reshard mode, the plan: how many shards, which utterance goes where, the
 * loads under the loaders' split, and the permutation check (plan_reshard.h).
 *
 * N = K·W·M. M is the caller's shards_per_worker, or else
 * max(1, round(kept / (K·W·1000))): about 1000 utterances a shard, the default
 * of WeNet's make_shard_list.py and CosyVoice's make_parquet_list.py.
 *
 * The utterances are partitioned into N bins by cost with es_partition (LPT,
 * Karmarkar–Karp where n·N is moderate, then swaps) without count balancing:
 * equal cost is the goal, and with hundreds of utterances a bin the counts come
 * out nearly equal anyway. Within a shard the utterances keep table order —
 * source shards in list order, then their position — so the output is a pure
 * function of the table and the settings. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "costs/cost_table.h"
#include "algo/partition.h"
#include "plan/plan_reshard.h"
#include "loader/split.h"

/* Utterances a shard holds when M is chosen for the user. */
#define UTTS_PER_SHARD 1000

void es_plan_reshard_free(plan_reshard *r)
{
    if (!r)
        return;
    free(r->rows);
    free(r->start);
    free(r->shard_cost);
    free(r->shard_frames);
    free(r);
}

static int check_rows(es_context *ctx, const es_plan *p)
{
    if ((unsigned)p->s.compress > ES_COMPRESS_AUTO)
        return es_fail(ctx, ES_ERR_USAGE, "plan: compress: unknown value %d", (int)p->s.compress);
    for (size_t i = 0; i < p->table->n; i++) {
        const es_cost_row *row = &p->table->rows[i];
        if (row->flags & ES_FLAG_ITEM)
            return es_fail(ctx, ES_ERR_UNSUPPORTED, "%s: %s: reshard rewrites tar shards and "
                           "parquet files, and this row is a raw-list or Kaldi entry",
                           row->shard, row->key);
    }
    return ES_OK;
}

/* M, and with it N; ES_ERR_USAGE when N cannot be filled. */
static int choose_shards(es_context *ctx, es_plan *p, plan_reshard *r)
{
    uint64_t kw = (uint64_t)p->K * p->W, m = p->s.shards_per_worker;
    if (m == 0) {
        m = (p->n_kept + kw * UTTS_PER_SHARD / 2) / (kw * UTTS_PER_SHARD);
        m = m ? m : 1;
    }
    if (kw * m > UINT32_MAX / 2)
        return es_fail(ctx, ES_ERR_USAGE, "plan: %llu shards (K×W×M) is implausibly many",
                       (unsigned long long)(kw * m));
    if (kw * m > p->n_kept)
        return es_fail(ctx, ES_ERR_USAGE, "plan: %zu utterances cannot fill %llu shards "
                       "(%u ranks × %u workers × %llu a worker): every shard needs at least "
                       "one; use fewer ranks, workers or --shards-per-worker", p->n_kept,
                       (unsigned long long)(kw * m), p->K, p->W, (unsigned long long)m);
    r->per_worker = (uint32_t)m;
    r->n_shards = (uint32_t)(kw * m);
    return ES_OK;
}

/* Kept rows to shards; rows grouped by shard in table order. */
static int assign(es_context *ctx, es_plan *p, plan_reshard *r)
{
    size_t n = p->n_kept, N = r->n_shards;
    double *cost = malloc(n * sizeof *cost);
    uint32_t *bin = malloc(n * sizeof *bin);
    r->rows = malloc(n * sizeof *r->rows);
    r->start = calloc(N + 1, sizeof *r->start);
    r->shard_cost = calloc(N, sizeof *r->shard_cost);
    r->shard_frames = calloc(N, sizeof *r->shard_frames);
    size_t *fill = malloc((N + 1) * sizeof *fill);
    es_partition_result res;
    int failed = !cost || !bin || !r->rows || !r->start || !r->shard_cost || !r->shard_frames ||
                 !fill;
    for (size_t k = 0; !failed && k < n; k++)
        cost[k] = p->cost[p->kept[k]];
    failed = failed || es_partition(cost, n, (uint32_t)N, 0, bin, &res) != 0;
    if (!failed) {
        for (size_t k = 0; k < n; k++)
            r->start[bin[k] + 1]++;
        for (size_t s = 0; s < N; s++)
            r->start[s + 1] += r->start[s];
        memcpy(fill, r->start, (N + 1) * sizeof *fill);
        for (size_t k = 0; k < n; k++) {
            size_t row = p->kept[k];
            r->rows[fill[bin[k]]++] = row;
            r->shard_cost[bin[k]] += p->cost[row];
            r->shard_frames[bin[k]] += p->frames[row];
        }
        p->metrics.method = res.method;
    }
    free(cost), free(bin), free(fill);
    return failed ? es_fail(ctx, ES_ERR_NOMEM, "plan: out of memory") : ES_OK;
}

static void shard_stats(const plan_reshard *r, es_plan_reshard_info *info)
{
    double total = 0, min = INFINITY, max = 0;
    for (uint32_t s = 0; s < r->n_shards; s++) {
        total += r->shard_cost[s];
        min = r->shard_cost[s] < min ? r->shard_cost[s] : min;
        max = r->shard_cost[s] > max ? r->shard_cost[s] : max;
    }
    double mean = total / r->n_shards;
    info->shards = r->n_shards;
    info->shards_per_worker = r->per_worker;
    info->shard_cost_min = min;
    info->shard_cost_max = max;
    info->shard_cost_mean = mean;
    info->shard_max_deviation = mean > 0 ? fmax(max / mean - 1, 1 - min / mean) : 0;
}

/* Rank and worker loads under the loaders' un-permuted split of data.list
 * (loader/split.h, the one implementation of the rule: CosyVoice's [rank::K]
 * then [worker::W], which WeNet's i % (K·W) agrees with here, N being a multiple
 * of K·W): worker (rank, w) reads shards rank + K·w + K·W·j, j = 0 .. M-1. */
static int split_loads(es_context *ctx, es_plan *p, const plan_reshard *r)
{
    es_loader_split sp;
    size_t *stream = malloc((p->n_kept ? p->n_kept : 1) * sizeof *stream);
    if (!stream || es_loader_split_cosyvoice(r->n_shards, p->K, p->W, 0, 0, 1, &sp)) {
        free(stream);
        return es_fail(ctx, ES_ERR_NOMEM, "plan: out of memory");
    }
    for (size_t u = 0; u < (size_t)p->K * p->W; u++) {
        es_plan_load *l = &p->loads[u];
        size_t n = 0;
        for (size_t q = sp.worker_start[u]; q < sp.worker_start[u + 1]; q++) {
            uint32_t s = sp.items[q];
            for (size_t i = r->start[s]; i < r->start[s + 1]; i++)
                stream[n++] = r->rows[i];
            l->cost += r->shard_cost[s];
            l->frames += r->shard_frames[s];
        }
        l->utterances = n;
        l->batches = es_plan_predict_batches(p, stream, n);
    }
    es_loader_split_release(&sp);
    free(stream);
    return ES_OK;
}

/* Largest |load / mean - 1| of any rank or worker under the loader's split sp
 * of the N shards. Sums run in list order, as the loader reads them. */
static double split_deviation(const es_plan *p, const plan_reshard *r, const es_loader_split *sp,
                              double *rank, double *worker)
{
    size_t K = p->K, W = p->W;
    memset(rank, 0, K * sizeof *rank);
    memset(worker, 0, K * W * sizeof *worker);
    for (size_t k = 0; k < K; k++)
        for (size_t q = sp->rank_start[k]; q < sp->rank_start[k + 1]; q++)
            rank[k] += r->shard_cost[sp->rank_items[q]];
    for (size_t u = 0; u < K * W; u++)
        for (size_t q = sp->worker_start[u]; q < sp->worker_start[u + 1]; q++)
            worker[u] += r->shard_cost[sp->items[q]];
    double total = 0; /* list position q is rank q % K's entry q / K */
    for (size_t q = 0; q < r->n_shards; q++)
        total += r->shard_cost[sp->rank_items[sp->rank_start[q % K] + q / K]];
    double dev = 0;
    if (total <= 0)
        return 0;
    for (size_t i = 0; i < K; i++)
        dev = fmax(dev, fabs(rank[i] / (total / K) - 1));
    for (size_t i = 0; i < K * W; i++)
        dev = fmax(dev, fabs(worker[i] / (total / (K * W)) - 1));
    return dev;
}

/* CosyVoice's epochs 0 .. 19: random.Random(epoch).shuffle of the list, bit-exact. */
static int permutation_check(es_context *ctx, const es_plan *p, plan_reshard *r)
{
    double *rank = malloc(p->K * sizeof *rank);
    double *worker = malloc((size_t)p->K * p->W * sizeof *worker);
    int failed = !rank || !worker;
    double worst = 0;
    for (int64_t epoch = 0; !failed && epoch < ES_RESHARD_PERMUTATIONS; epoch++) {
        es_loader_split sp;
        failed = es_loader_split_cosyvoice(r->n_shards, p->K, p->W, epoch, 1, 1, &sp) != 0;
        if (!failed)
            worst = fmax(worst, split_deviation(p, r, &sp, rank, worker));
        es_loader_split_release(&sp);
    }
    r->info.permutations = ES_RESHARD_PERMUTATIONS;
    r->info.permutation_max_deviation = worst;
    free(rank), free(worker);
    return failed ? es_fail(ctx, ES_ERR_NOMEM, "plan: out of memory") : ES_OK;
}

int es_plan_build_reshard(es_context *ctx, es_plan *p)
{
    int rc = check_rows(ctx, p);
    plan_reshard *r = rc == ES_OK ? calloc(1, sizeof *r) : NULL;
    if (rc == ES_OK && !r)
        rc = es_fail(ctx, ES_ERR_NOMEM, "plan: out of memory");
    p->reshard = r;
    if (rc == ES_OK)
        rc = choose_shards(ctx, p, r);
    if (rc == ES_OK)
        rc = assign(ctx, p, r);
    if (rc == ES_OK)
        rc = split_loads(ctx, p, r);
    if (rc == ES_OK)
        rc = permutation_check(ctx, p, r);
    if (rc != ES_OK)
        return rc;
    shard_stats(r, &r->info);
    double total = 0;
    for (uint32_t s = 0; s < r->n_shards; s++)
        total += r->shard_cost[s];
    p->metrics.lower_bound = total / p->K;
    es_plan_finish_metrics(p);
    return ES_OK;
}

ES_API int es_plan_reshard_info_get(const es_plan *p, es_plan_reshard_info *out)
{
    if (!p || !out || !p->reshard)
        return ES_ERR_USAGE;
    *out = p->reshard->info;
    return ES_OK;
}
