/* Planner benchmark (the planner's quality and speed bars), on generated data:
 * log-normal durations like LibriTTS (median ~5 s), speakers sorted into shards
 * the way make_parquet_list.py fills them (utterances in speaker order, fixed
 * count per shard, a shorter last shard).
 *
 *   bench_plan [N_UTTS] [WORLD_SIZE] [WORKERS] [UTTS_PER_SHARD] [shard|batch|both]
 *   bench_plan N_UTTS WORLD_SIZE WORKERS UTTS_PER_SHARD progress [ROUNDS]
 *
 * `progress`: batch mode built ROUNDS times (default 5) with the build's
 * progress callback NULL and set, alternately (a callback that reads the clock
 * as the CLI's line does); prints both medians and their ratio.
 *
 * Memory is the growth of peak RSS during the plan, so run one mode per process
 * to read it (the first mode's peak hides the second's).
 *
 * Prints, for shard and batch mode: time, peak memory growth per utterance,
 * imbalance, gap to the lower bound, batch spread, step straggler, retention;
 * and LPT alone vs the kept method (LPT/KK + swaps) on the shard costs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "costs/cost_table.h"
#include "synth_rows.h"
#include "algo/partition.h"
#include "bench_clock.h"

static long peak_rss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static es_cost_table *generate(size_t n, size_t per_shard)
{
    es_cost_table *t = es_cost_table_new();
    char key[32], shard[48], spk[16];
    size_t speaker = 0, left_in_speaker = 0;
    for (size_t i = 0; i < n; i++) {
        synth_next_utterance(&speaker, &left_in_speaker);
        snprintf(key, sizeof key, "%zu_%zu", speaker, i);
        snprintf(shard, sizeof shard, "parquet/parquet_%09zu.tar", i / per_shard);
        snprintf(spk, sizeof spk, "%zu", speaker);
        es_cost_row r = synth_row(key, shard, i % per_shard, spk, lognormal_seconds());
        if (es_cost_table_append(t, &r) != ES_OK) {
            fprintf(stderr, "out of memory\n");
            exit(3);
        }
    }
    return t;
}

static void run_plan(const es_cost_table *t, es_plan_mode mode, uint32_t k, uint32_t w)
{
    es_context *ctx = es_context_new();
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = k;
    s.workers = w;
    s.mode = mode;
    long before = peak_rss_kib();
    double t0 = now();
    es_plan *p = NULL;
    if (es_plan_build(ctx, &s, t, &p) != ES_OK) {
        fprintf(stderr, "plan: %s\n", es_errmsg(ctx));
        exit(2);
    }
    double secs = now() - t0;
    long after = peak_rss_kib();
    es_plan_metrics m;
    es_plan_get_metrics(p, &m);
    size_t n = es_cost_table_size(t);
    printf("%-6s %8.2f s %8.1f B/utt  imbalance %.4f%%  gap %.4f%%  spread %llu  straggler %.4f  "
           "retention %.2f%%  batches %llu  [%s]\n",
           mode == ES_PLAN_BATCH ? "batch" : "shard", secs, (after - before) * 1024.0 / n,
           100 * m.imbalance, 100 * m.lower_bound_gap, (unsigned long long)m.batch_spread,
           m.step_straggler, 100 * m.retention, (unsigned long long)m.total_batches, m.method);
    es_plan_free(p);
    es_context_free(ctx);
}

/* CosyVoice's own split of the same table (DistributedSampler, epoch 0, its
 * shuffle/sort buffers and dynamic batching), through es_simulate. */
static void cosyvoice_split(const es_cost_table *t, uint32_t k, uint32_t w)
{
    es_context *ctx = es_context_new();
    es_simulate_settings s;
    es_simulate_defaults(&s, ES_LOADER_COSYVOICE);
    s.world_size = k;
    s.workers = w;
    s.trials = 1;
    s.plan_side = 0;
    es_simulate_result *r = NULL;
    double t0 = now();
    if (es_simulate(ctx, &s, t, &r) != ES_OK) {
        fprintf(stderr, "simulate: %s\n", es_errmsg(ctx));
        exit(2);
    }
    double secs = now() - t0;
    es_simulate_epoch e;
    es_simulate_epoch_info(r, 0, &e);
    double max_f = 0, sum_f = 0, min_b = INFINITY, max_b = 0;
    for (uint32_t rank = 0; rank < k; rank++) {
        es_simulate_rank ri;
        es_simulate_rank_info(r, 0, rank, -1, &ri);
        sum_f += (double)ri.frames;
        max_f = (double)ri.frames > max_f ? (double)ri.frames : max_f;
        min_b = ri.batches < min_b ? ri.batches : min_b;
        max_b = ri.batches > max_b ? ri.batches : max_b;
    }
    printf("cosyvoice %6.2f s  imbalance %.4f%% (frames)  spread %.0f  retention %.2f%%  "
           "batches %.0f  [DistributedSampler, epoch 0]\n",
           secs, 100 * (max_f / (sum_f / k) - 1), max_b - min_b, 100 * e.retention,
           e.total_batches);
    es_simulate_result_free(r);
    es_context_free(ctx);
}

/* LPT alone against the kept method, on the shard costs (frames). */
static void compare_partitioners(const es_cost_table *t, uint32_t k)
{
    size_t n = es_cost_table_size(t), shards = 0;
    double *cost = calloc(n, sizeof *cost);
    const char *last = NULL;
    for (size_t i = 0; i < n; i++) {
        es_cost_row r;
        es_cost_table_row(t, i, &r);
        if (!last || strcmp(last, r.shard) != 0) {
            shards++;
            last = r.shard;
        }
        cost[shards - 1] += (double)r.samples * 50.0 / r.sample_rate;
    }
    double total = 0, largest = 0;
    for (size_t s = 0; s < shards; s++) {
        total += cost[s];
        largest = cost[s] > largest ? cost[s] : largest;
    }
    double bound = total / k > largest ? total / k : largest;
    uint32_t *bin = malloc(shards * sizeof *bin);
    double t0 = now();
    es_partition_lpt(cost, shards, k, 0, bin);
    double lpt_time = now() - t0, lpt = es_partition_max_load(cost, shards, k, bin);
    t0 = now();
    es_partition_kk(cost, shards, k, bin);
    double kk_time = now() - t0, kk = es_partition_max_load(cost, shards, k, bin);
    es_partition_result res;
    t0 = now();
    es_partition(cost, shards, k, 0, bin, &res);
    double best_time = now() - t0;
    printf("partitioners, %zu shards into %u ranks (lower bound %.0f):\n", shards, k, bound);
    printf("  LPT            gap %.4f%%  %.3f s\n", 100 * (lpt / bound - 1), lpt_time);
    printf("  KK             gap %.4f%%  %.3f s\n", 100 * (kk / bound - 1), kk_time);
    printf("  kept (%s) gap %.4f%%  %.3f s\n", res.method, 100 * (res.max_load / bound - 1),
           best_time);
    free(cost);
    free(bin);
}

/* What the CLI's callback does when the line is not due: read the clock. */
static void progress_seen(void *user, size_t done, size_t total)
{
    double *last = user;
    *last = now() + (double)(done > total);
}

/* One batch build: wall seconds, and the calling thread's user CPU seconds in
 * *user (where the callback runs; steadier than wall on a shared machine). */
static double build_batch_seconds(const es_cost_table *t, uint32_t k, uint32_t w, int progress,
                                  double *user)
{
    es_context *ctx = es_context_new();
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = k;
    s.workers = w;
    s.mode = ES_PLAN_BATCH;
    double last = 0;
    s.build_progress = progress ? progress_seen : NULL;
    s.build_progress_user = &last;
    es_plan *p = NULL;
    double u0, u1, sys;
    thread_cpu(&u0, &sys);
    double t0 = now();
    if (es_plan_build(ctx, &s, t, &p) != ES_OK) {
        fprintf(stderr, "plan: %s\n", es_errmsg(ctx));
        exit(2);
    }
    double secs = now() - t0;
    thread_cpu(&u1, &sys);
    *user = u1 - u0;
    es_plan_free(p);
    es_context_free(ctx);
    return secs;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* The build with and without its progress callback, alternately. */
static void progress_ab(const es_cost_table *t, uint32_t k, uint32_t w, int rounds)
{
    double with[64], without[64], with_cpu[64], without_cpu[64];
    rounds = rounds < 1 ? 1 : rounds > 64 ? 64 : rounds;
    for (int r = 0; r < rounds; r++) {
        without[r] = build_batch_seconds(t, k, w, 0, &without_cpu[r]);
        with[r] = build_batch_seconds(t, k, w, 1, &with_cpu[r]);
        printf("round %d: without %.3f s (user %.3f), with %.3f s (user %.3f)\n", r + 1,
               without[r], without_cpu[r], with[r], with_cpu[r]);
        fflush(stdout);
    }
    double mw = median(with, rounds), mo = median(without, rounds);
    double cw = median(with_cpu, rounds), co = median(without_cpu, rounds);
    printf("batch build, median of %d: wall %.3f s without progress, %.3f s with (ratio %.3f); "
           "calling thread's user CPU %.3f / %.3f s (ratio %.3f)\n", rounds, mo, mw, mw / mo, co,
           cw, cw / co);
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
    uint32_t k = argc > 2 ? (uint32_t)atoi(argv[2]) : 64;
    uint32_t w = argc > 3 ? (uint32_t)atoi(argv[3]) : 4;
    size_t per_shard = argc > 4 ? strtoull(argv[4], NULL, 10) : 1000;
    const char *modes = argc > 5 ? argv[5] : "both";
    printf("%zu utterances, %u ranks x %u workers, %zu utterances a shard\n", n, k, w, per_shard);
    long base = peak_rss_kib();
    double t0 = now();
    es_cost_table *t = generate(n, per_shard);
    printf("table: %.2f s to generate, %.1f B/utt (rows + keys)\n", now() - t0,
           (peak_rss_kib() - base) * 1024.0 / n);
    if (strcmp(modes, "progress") == 0) {
        progress_ab(t, k, w, argc > 6 ? atoi(argv[6]) : 5);
        es_cost_table_free(t);
        return 0;
    }
    if (strcmp(modes, "both") == 0)
        cosyvoice_split(t, k, w);
    if (strcmp(modes, "batch") != 0) {
        compare_partitioners(t, k);
        run_plan(t, ES_PLAN_SHARD, k, w);
    }
    if (strcmp(modes, "shard") != 0)
        run_plan(t, ES_PLAN_BATCH, k, w);
    es_cost_table_free(t);
    return 0;
}
