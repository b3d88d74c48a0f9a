/* The planner: partitioning on adversarial inputs, the loader's batching rule
 * (expected values worked by hand from CosyVoice's dynamic_batch, shown in the
 * comments), batch-mode guarantees, and byte-identical repeat runs. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check_helpers.h"
#include "core/strbuf.h"
#include "costs/cost_table.h"
#include "loader/cost_model.h"
#include "loader/batching.h"
#include "algo/partition.h"
#include "algo/radix_sort.h"
#include "plan/batch_order.h"
#include "write/plan_json.h"
#include "write/shard_literals.h"

static double max_of(const double *cost, size_t n, uint32_t k, const uint32_t *bin)
{
    return es_partition_max_load(cost, n, k, bin);
}

START_TEST(one_huge_item)
{
    double cost[] = {100, 1, 1, 1, 1};
    uint32_t bin[5];
    es_partition_result res;
    ck_assert_int_eq(es_partition(cost, 5, 2, 0, bin, &res), 0);
    ck_assert_double_eq(res.max_load, 100);
    for (int i = 1; i < 5; i++)
        ck_assert_uint_ne(bin[i], bin[0]); /* the small ones all go beside it */
}
END_TEST

START_TEST(all_equal)
{
    double cost[12];
    uint32_t bin[12];
    for (int i = 0; i < 12; i++)
        cost[i] = 5;
    es_partition_result res;
    ck_assert_int_eq(es_partition(cost, 12, 4, 0, bin, &res), 0);
    ck_assert_double_eq(res.max_load, 15);
    ck_assert_int_eq(es_partition(cost, 12, 4, 1, bin, &res), 0);
    ck_assert_double_eq(res.max_load, 15);
}
END_TEST

START_TEST(fewer_items_than_bins)
{
    double cost[] = {3, 7};
    uint32_t bin[2];
    es_partition_result res;
    ck_assert_int_eq(es_partition(cost, 2, 4, 0, bin, &res), 0);
    ck_assert_double_eq(res.max_load, 7);
    ck_assert_uint_ne(bin[0], bin[1]);
    ck_assert_int_eq(es_partition(cost, 0, 4, 0, bin, &res), 0);
    ck_assert_double_eq(res.max_load, 0);
}
END_TEST

START_TEST(one_bin)
{
    double cost[] = {3, 7, 2};
    uint32_t bin[3];
    es_partition_result res;
    ck_assert_int_eq(es_partition(cost, 3, 1, 0, bin, &res), 0);
    ck_assert_double_eq(res.max_load, 12);
    ck_assert_uint_eq(bin[0] + bin[1] + bin[2], 0);
}
END_TEST

/* {8,7,6,5,4} into 2: LPT gives 8+5+4=17 vs 7+6=13 (max 17); KK gives 16/14;
 * the optimum is 15/15 (8+7 | 6+5+4), which the refinement reaches. */
START_TEST(classic_instance_reaches_optimum)
{
    double cost[] = {8, 7, 6, 5, 4};
    uint32_t bin[5];
    ck_assert_int_eq(es_partition_lpt(cost, 5, 2, 0, bin), 0);
    ck_assert_double_eq(max_of(cost, 5, 2, bin), 17);
    ck_assert_int_eq(es_partition_kk(cost, 5, 2, bin), 0);
    ck_assert_double_eq(max_of(cost, 5, 2, bin), 16);
    es_partition_result res;
    ck_assert_int_eq(es_partition(cost, 5, 2, 0, bin, &res), 0);
    ck_assert_double_eq(res.max_load, 15);
}
END_TEST

/* Balanced counts: 7 items into 3 bins hold 3, 2, 2 items, the larger count on bin 0. */
START_TEST(balanced_counts)
{
    double cost[] = {50, 1, 1, 1, 1, 1, 1};
    uint32_t bin[7];
    es_partition_result res;
    ck_assert_int_eq(es_partition(cost, 7, 3, 1, bin, &res), 0);
    size_t count[3] = {0};
    for (int i = 0; i < 7; i++)
        count[bin[i]]++;
    ck_assert_uint_eq(count[0], 3);
    ck_assert_uint_eq(count[1], 2);
    ck_assert_uint_eq(count[2], 2);
    /* optimum: the huge item in a two-item bin (50 + 1), the three-item bin of ones */
    ck_assert_double_eq(res.max_load, 51);
    ck_assert_uint_ne(bin[0], 0);
}
END_TEST

/* Random instances: never worse than plain LPT, never below the lower bound,
 * and exactly optimal on small ones (checked by brute force). */
START_TEST(random_against_brute_force)
{
    unsigned seed = 12345;
    for (int trial = 0; trial < 200; trial++) {
        size_t n = 2 + (size_t)(rand_r(&seed) % 9);
        uint32_t k = 2 + (uint32_t)(rand_r(&seed) % 2);
        double cost[10], lower = 0, total = 0;
        for (size_t i = 0; i < n; i++) {
            cost[i] = 1 + rand_r(&seed) % 1000;
            total += cost[i];
            if (cost[i] > lower)
                lower = cost[i];
        }
        if (total / k > lower)
            lower = total / k;
        uint32_t bin[10], lpt[10];
        es_partition_result res;
        ck_assert_int_eq(es_partition(cost, n, k, 0, bin, &res), 0);
        ck_assert_int_eq(es_partition_lpt(cost, n, k, 0, lpt), 0);
        ck_assert(res.max_load <= max_of(cost, n, k, lpt));
        ck_assert(res.max_load >= lower - 1e-9);
        double best = INFINITY;
        size_t combos = 1;
        for (size_t i = 0; i < n; i++)
            combos *= k;
        for (size_t c = 0; c < combos; c++) {
            uint32_t b[10];
            size_t v = c;
            for (size_t i = 0; i < n; i++, v /= k)
                b[i] = (uint32_t)(v % k);
            double m = max_of(cost, n, k, b);
            if (m < best)
                best = m;
        }
        /* LPT+KK+swaps is a heuristic; on these sizes it must stay within 5 %. */
        ck_assert_msg(res.max_load <= best * 1.05, "trial %d: %g vs optimum %g", trial,
                      res.max_load, best);
    }
}
END_TEST

/* CosyVoice dynamic_batch, max 2000, frames 500 600 700 2500 100:
 * 500 → [500]; 600: 600·2 = 1200 ≤ 2000 → [500 600]; 700: 700·3 > 2000 → yield,
 * [700]; 2500: 2500·2 > 2000 → yield, [2500]; 100: longest stays 2500, 2500·2 >
 * 2000 → yield, [100]; end → yield. Batches end at 2, 3, 4, 5. */
START_TEST(dynamic_batch_rule)
{
    uint32_t frames[] = {500, 600, 700, 2500, 100};
    size_t ends[5];
    int empty;
    ck_assert_uint_eq(es_dynamic_batches(frames, 5, 2000, ends, &empty), 4);
    ck_assert_uint_eq(ends[0], 2);
    ck_assert_uint_eq(ends[1], 3);
    ck_assert_uint_eq(ends[2], 4);
    ck_assert_uint_eq(ends[3], 5);
    ck_assert_int_eq(empty, 0);
    /* first sample alone over budget: the loader yields [] first (a crash in
     * padding()), then [2500], then [10] */
    uint32_t big_first[] = {2500, 10};
    ck_assert_uint_eq(es_dynamic_batches(big_first, 2, 2000, ends, &empty), 2);
    ck_assert_int_eq(empty, 1);
    ck_assert_uint_eq(es_static_batches(10, 4), 3);
}
END_TEST

/* A table of n utterances at 16 kHz with the given durations in seconds. */
static es_cost_table *make_table(const double *seconds, size_t n, size_t per_shard)
{
    es_cost_table *t = es_cost_table_new();
    for (size_t i = 0; i < n; i++) {
        char key[32], shard[32];
        snprintf(key, sizeof key, "u%05zu", i);
        snprintf(shard, sizeof shard, "s%03zu.tar", i / per_shard);
        es_cost_row r = {key, shard, i % per_shard, 16000, 1,
                         (uint64_t)(seconds[i] * 16000), 100, 20, 0, "spk",
                         ES_FLAG_AUDIO | ES_FLAG_TEXT, 0, 0};
        ck_assert_int_eq(es_cost_table_append(t, &r), ES_OK);
    }
    return t;
}

static double *lognormal_seconds(size_t n, unsigned seed)
{
    double *s = malloc(n * sizeof *s);
    for (size_t i = 0; i < n; i++) {
        double u1 = (rand_r(&seed) + 1.0) / (RAND_MAX + 2.0), u2 = (rand_r(&seed) + 1.0) / (RAND_MAX + 2.0);
        double z = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
        double v = exp(log(5.0) + 0.6 * z);
        s[i] = v < 1.2 ? 1.2 : v > 30 ? 30 : v;
    }
    return s;
}

START_TEST(empty_input_is_an_error)
{
    es_cost_table *t = es_cost_table_new();
    es_context *ctx = es_context_new();
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = 2;
    es_plan *p = NULL;
    ck_assert_int_eq(es_plan_build(ctx, &s, t, &p), ES_ERR_FORMAT);
    ck_assert_ptr_null(p);
    ck_assert_ptr_nonnull(strstr(es_errmsg(ctx), "no utterances"));
    s.world_size = 0;
    ck_assert_int_eq(es_plan_build(ctx, &s, t, &p), ES_ERR_USAGE);
    es_context_free(ctx);
    es_cost_table_free(t);
}
END_TEST

/* require_speech_token's auto (the default): CosyVoice's filter drops rows with
 * an empty speech_token, so a table that has speech tokens drops its rows
 * without; a table with none at all (tar shards, Kaldi) keeps them; 1 and 0
 * force it; the WeNet loader model never requires them. */
static es_cost_table *speech_token_table(int with_tokens)
{
    es_cost_table *t = es_cost_table_new();
    for (int i = 0; i < 8; i++) {
        char key[16];
        snprintf(key, sizeof key, "u%d", i);
        es_cost_row r = {key, "s.tar", (uint64_t)i, 16000, 1, 32000, 64000, 10,
                         with_tokens && i != 3 ? 50u : 0u, "spk", ES_FLAG_AUDIO | ES_FLAG_TEXT, 0, 0};
        ck_assert_int_eq(es_cost_table_append(t, &r), ES_OK);
    }
    return t;
}

static uint64_t no_speech_token_drops(const es_cost_table *t, int require)
{
    es_context *ctx = es_context_new();
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = 1; /* one shard: a second rank would get none (refused) */
    if (require >= 0)
        s.model.require_speech_token = require;
    es_plan *p = NULL;
    /* every row dropped: "no utterances to plan" */
    es_plan_metrics m;
    uint64_t n = es_plan_build(ctx, &s, t, &p) == ES_OK && es_plan_get_metrics(p, &m) == ES_OK
                     ? m.filtered_by_reason[ES_DROP_NO_SPEECH_TOKEN]
                     : UINT64_MAX;
    es_plan_free(p);
    es_context_free(ctx);
    return n;
}

/* A plan that leaves a rank or worker empty is refused (ES_ERR_USAGE), in
 * shard mode by count (fewer shards than K·W) and by cost (one shard worth more
 * than the rest together takes a rank alone, whose second worker gets none). */
static int shard_plan_rc(const double *seconds, const int *shard, size_t n, uint32_t k,
                         uint32_t w, char *msg, size_t len)
{
    es_cost_table *t = es_cost_table_new();
    for (size_t i = 0; i < n; i++) {
        char key[32], name[32];
        snprintf(key, sizeof key, "u%zu", i);
        snprintf(name, sizeof name, "s%d.tar", shard[i]);
        es_cost_row r = {key, name, i, 16000, 1, (uint64_t)(seconds[i] * 16000), 100, 20, 0,
                         "spk", ES_FLAG_AUDIO | ES_FLAG_TEXT, 0, 0};
        ck_assert_int_eq(es_cost_table_append(t, &r), ES_OK);
    }
    es_context *ctx = es_context_new();
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = k;
    s.workers = w;
    es_plan *p = NULL;
    int rc = es_plan_build(ctx, &s, t, &p);
    snprintf(msg, len, "%s", es_errmsg(ctx));
    ck_assert(rc == ES_OK ? p != NULL : p == NULL);
    es_plan_free(p);
    es_context_free(ctx);
    es_cost_table_free(t);
    return rc;
}

START_TEST(empty_rank_or_worker_refused)
{
    char msg[512];
    /* shard s0: 10 utterances of 10 s; s1..s3: one of 2 s each */
    double sec[13];
    int shard[13];
    for (int i = 0; i < 13; i++) {
        sec[i] = i < 10 ? 10 : 2;
        shard[i] = i < 10 ? 0 : i - 9;
    }
    ck_assert_int_eq(shard_plan_rc(sec, shard, 13, 2, 1, msg, sizeof msg), ES_OK);
    ck_assert_int_eq(shard_plan_rc(sec, shard, 13, 4, 1, msg, sizeof msg), ES_OK);
    ck_assert_int_eq(shard_plan_rc(sec, shard, 13, 5, 1, msg, sizeof msg), ES_ERR_USAGE);
    ck_assert_str_eq(msg, "plan: 4 shards for 5 rank×worker slots (5 ranks × 1 workers), so "
                          "some would get none: use --mode batch (or reshard)");
    /* 2 × 2 slots for 4 shards, but s0 outweighs the three others: rank 0 takes it
     * alone (the least-loaded rank gets the largest first) */
    ck_assert_int_eq(shard_plan_rc(sec, shard, 13, 2, 2, msg, sizeof msg), ES_ERR_USAGE);
    ck_assert_str_eq(msg, "plan: rank 0 worker 1 would get no utterances (4 shards for 4 "
                          "rank×worker slots, too unequal to fill them all): use --mode batch "
                          "(or reshard)");
}
END_TEST

START_TEST(speech_token_requirement)
{
    es_plan_settings s;
    es_plan_defaults(&s);
    ck_assert_int_eq(s.model.require_speech_token, -1);
    es_cost_table *with = speech_token_table(1), *without = speech_token_table(0);
    ck_assert_uint_eq(no_speech_token_drops(with, -1), 1);    /* auto, tokens present */
    ck_assert_uint_eq(no_speech_token_drops(without, -1), 0); /* auto, none at all */
    ck_assert_uint_eq(no_speech_token_drops(with, 0), 0);
    ck_assert_uint_eq(no_speech_token_drops(with, 1), 1);
    ck_assert_uint_eq(no_speech_token_drops(without, 1), UINT64_MAX);
    es_simulate_settings ss;
    es_simulate_defaults(&ss, ES_LOADER_WENET);
    ck_assert_int_eq(ss.model.require_speech_token, 0);
    es_simulate_defaults(&ss, ES_LOADER_COSYVOICE);
    ck_assert_int_eq(ss.model.require_speech_token, -1);
    es_cost_table_free(with);
    es_cost_table_free(without);
}
END_TEST

/* Batch mode: equal batch counts for every rank, full retention, steps nearly
 * even; every kept utterance in exactly one batch (pad repeats are marked). */
START_TEST(batch_mode_guarantees)
{
    size_t n = 3000;
    double *sec = lognormal_seconds(n, 7);
    es_cost_table *t = make_table(sec, n, 100);
    es_context *ctx = es_context_new();
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = 8;
    s.workers = 2;
    s.mode = ES_PLAN_BATCH;
    es_plan *p = NULL;
    ck_assert_int_eq(es_plan_build(ctx, &s, t, &p), ES_OK);
    es_plan_metrics m;
    es_plan_get_metrics(p, &m);
    ck_assert_uint_eq(m.batch_spread, 0);
    ck_assert_double_eq(m.retention, 1);
    ck_assert_msg(m.step_straggler <= 1.03, "straggler %f", m.step_straggler);
    ck_assert_uint_eq(m.kept, n);
    uint64_t in_batches = 0;
    for (uint32_t r = 0; r < 8; r++) {
        es_plan_load l;
        es_plan_rank_load(p, r, -1, &l);
        in_batches += l.utterances;
    }
    ck_assert_uint_eq(in_batches, n + m.remainder_utterances); /* pad repeats counted */
    ck_assert_uint_eq(m.total_batches % 8, 0);
    es_plan_free(p);

    s.remainder = ES_REMAINDER_DROP;
    ck_assert_int_eq(es_plan_build(ctx, &s, t, &p), ES_OK);
    es_plan_get_metrics(p, &m);
    ck_assert_uint_eq(m.kept + m.remainder_utterances, n);
    ck_assert_uint_eq(m.batch_spread, 0);
    es_plan_free(p);
    es_context_free(ctx);
    es_cost_table_free(t);
    free(sec);
}
END_TEST

/* es_plan_build_subset: the rows a mask leaves out are in no batch, every other
 * kept row is in exactly one non-repeat batch, ranks keep equal steps, nothing
 * is counted as filtered, and a NULL mask is es_plan_build's plan. Expected
 * sets from the mask itself (every third row, and rows 0..99). */
START_TEST(subset_plan_leaves_out_the_masked_rows)
{
    size_t n = 600;
    double *sec = lognormal_seconds(n, 11);
    es_cost_table *t = make_table(sec, n, 50);
    es_context *ctx = es_context_new();
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = 3;
    s.workers = 2;
    s.mode = ES_PLAN_BATCH;
    unsigned char *mask = calloc(n, 1);
    size_t masked = 0;
    for (size_t i = 0; i < n; i++)
        if (i % 3 == 0 || i < 100)
            masked += mask[i] = 1;
    es_plan *p = NULL;
    ck_assert_int_eq(es_plan_build_subset(ctx, &s, t, mask, &p), ES_OK);
    es_plan_metrics m;
    es_plan_get_metrics(p, &m);
    ck_assert_uint_eq(m.kept, n - masked);
    ck_assert_uint_eq(m.filtered, 0);
    ck_assert_uint_eq(m.batch_spread, 0);
    unsigned *seen = calloc(n, sizeof *seen);
    for (uint32_t r = 0; r < 3; r++) {
        ck_assert_uint_eq(es_plan_batch_count(p, r), m.steps);
        for (size_t i = 0; i < es_plan_batch_count(p, r); i++) {
            es_plan_batch b;
            ck_assert_int_eq(es_plan_batch_info(p, r, i, &b), ES_OK);
            for (size_t j = 0; j < b.n_rows; j++) {
                ck_assert_uint_lt(b.rows[j], n);
                ck_assert_msg(!mask[b.rows[j]], "row %zu was left out", b.rows[j]);
                seen[b.rows[j]] += !b.repeat;
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        ck_assert_uint_eq(seen[i], mask[i] ? 0 : 1);
    es_plan_free(p);

    /* NULL: the whole table, as es_plan_build plans it */
    es_plan *whole = NULL;
    ck_assert_int_eq(es_plan_build_subset(ctx, &s, t, NULL, &p), ES_OK);
    ck_assert_int_eq(es_plan_build(ctx, &s, t, &whole), ES_OK);
    es_plan_metrics mw;
    es_plan_get_metrics(p, &m);
    es_plan_get_metrics(whole, &mw);
    ck_assert_uint_eq(m.kept, n);
    ck_assert_uint_eq(m.steps, mw.steps);
    for (uint32_t r = 0; r < 3; r++)
        for (size_t i = 0; i < m.steps; i++) {
            es_plan_batch a, b;
            es_plan_batch_info(p, r, i, &a);
            es_plan_batch_info(whole, r, i, &b);
            ck_assert_uint_eq(a.n_rows, b.n_rows);
            ck_assert_int_eq(memcmp(a.rows, b.rows, a.n_rows * sizeof *a.rows), 0);
        }
    es_plan_free(p);
    es_plan_free(whole);

    /* every row left out: refused, naming it */
    memset(mask, 1, n);
    ck_assert_int_eq(es_plan_build_subset(ctx, &s, t, mask, &p), ES_ERR_USAGE);
    ck_assert_ptr_null(p);
    ck_assert_ptr_nonnull(strstr(es_errmsg(ctx), "left out"));
    free(seen);
    free(mask);
    es_context_free(ctx);
    es_cost_table_free(t);
    free(sec);
}
END_TEST

/* One epoch's batches: for every batch (repeats left out), a 64-bit digest of
 * its sorted rows; each kept row's count in *seen; padding (longest x n - frames)
 * summed in *padding. Checks the loader's budget on every batch. */
static size_t epoch_batches(const es_plan *p, uint32_t ranks, uint64_t budget, uint64_t *digests,
                            uint32_t *seen, uint64_t *padding)
{
    size_t nd = 0;
    for (uint32_t r = 0; r < ranks; r++) {
        for (size_t i = 0; i < es_plan_batch_count(p, r); i++) {
            es_plan_batch b;
            ck_assert_int_eq(es_plan_batch_info(p, r, i, &b), ES_OK);
            ck_assert_msg(b.n_rows == 1 || (uint64_t)b.longest * b.n_rows <= budget,
                          "batch over the budget: %u x %zu", b.longest, b.n_rows);
            if (b.repeat)
                continue;
            uint64_t d = 0;
            for (size_t k = 0; k < b.n_rows; k++) {
                seen[b.rows[k]]++;
                d += (uint64_t)(b.rows[k] + 1) * 0x9e3779b97f4a7c15ull; /* order-free */
            }
            *padding += (uint64_t)b.longest * b.n_rows - b.frames;
            digests[nd++] = d;
        }
    }
    return nd;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Batch mode, per epoch: each epoch packs every kept utterance exactly once
 * within the budget, epochs other than 0 have batches of their own (the
 * loaders re-plan each epoch from the table), at about epoch 0's padding, and
 * the same (seed, epoch) always gives the same batches. */
START_TEST(batch_epochs_have_their_own_batches)
{
    size_t n = 2000;
    double *sec = lognormal_seconds(n, 11);
    es_cost_table *t = make_table(sec, n, 100);
    es_context *ctx = es_context_new();
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = 4;
    s.workers = 2;
    s.mode = ES_PLAN_BATCH;
    uint64_t *digests[3];
    size_t nd[3];
    uint64_t padding[3] = {0}, frames = 0;
    uint32_t *seen = calloc(n, sizeof *seen);
    for (int e = 0; e < 3; e++) {
        s.epoch = e < 2 ? e : 1; /* the third run repeats epoch 1 */
        es_plan *p = NULL;
        ck_assert_int_eq(es_plan_build(ctx, &s, t, &p), ES_OK);
        es_plan_metrics m;
        es_plan_get_metrics(p, &m);
        digests[e] = malloc(m.total_batches * sizeof *digests[e]);
        memset(seen, 0, n * sizeof *seen);
        nd[e] = epoch_batches(p, 4, s.max_frames_in_batch, digests[e], seen, &padding[e]);
        for (uint32_t r = 0; e == 0 && r < 4; r++) {
            es_plan_load l;
            es_plan_rank_load(p, r, -1, &l);
            frames += l.frames;
        }
        for (size_t k = 0; k < n; k++)
            ck_assert_msg(seen[k] == 1, "epoch %d: row %zu in %u batches", e, k, seen[k]);
        qsort(digests[e], nd[e], sizeof *digests[e], cmp_u64);
        es_plan_free(p);
    }
    size_t shared = 0;
    for (size_t i = 0, j = 0; i < nd[0] && j < nd[1];) {
        if (digests[0][i] == digests[1][j])
            shared++, i++, j++;
        else if (digests[0][i] < digests[1][j])
            i++;
        else
            j++;
    }
    ck_assert_msg(shared * 4 < nd[1], "epoch 1 repeats %zu of epoch 0's %zu batches", shared, nd[0]);
    /* padding: within 0.5 % of all frames of epoch 0's (an exact length sort) */
    ck_assert_msg(padding[1] <= padding[0] + frames / 200, "padding %llu vs %llu of %llu frames",
                  (unsigned long long)padding[1], (unsigned long long)padding[0],
                  (unsigned long long)frames);
    ck_assert_uint_eq(nd[1], nd[2]);
    ck_assert_int_eq(memcmp(digests[1], digests[2], nd[1] * sizeof *digests[1]), 0);
    for (int e = 0; e < 3; e++)
        free(digests[e]);
    free(seen);
    es_context_free(ctx);
    es_cost_table_free(t);
    free(sec);
}
END_TEST

/* Shard mode on >= 8 shards a rank: imbalance within 0.5 % (the planner's bar). */
START_TEST(shard_mode_quality)
{
    size_t n = 64 * 150;
    double *sec = lognormal_seconds(n, 99);
    es_cost_table *t = make_table(sec, n, 150);
    es_context *ctx = es_context_new();
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = 8;
    s.workers = 2;
    es_plan *p = NULL;
    ck_assert_int_eq(es_plan_build(ctx, &s, t, &p), ES_OK);
    es_plan_metrics m;
    es_plan_get_metrics(p, &m);
    ck_assert_msg(m.imbalance <= 0.005, "imbalance %f", m.imbalance);
    ck_assert_msg(m.lower_bound_gap <= 0.005, "gap %f", m.lower_bound_gap);
    ck_assert_uint_eq(m.kept, n);
    es_plan_free(p);
    es_context_free(ctx);
    es_cost_table_free(t);
    free(sec);
}
END_TEST

/* Both files there with the same bytes. */
static int same_files(const char *pa, const char *pb)
{
    size_t la, lb;
    unsigned char *x = read_whole_file(pa, &la), *y = read_whole_file(pb, &lb);
    int same = x && y && la == lb && memcmp(x, y, la) == 0;
    free(x), free(y);
    return same;
}

static int same_dirs(const char *a, const char *b)
{
    DIR *d = opendir(a);
    struct dirent *e;
    int same = d != NULL, files = 0;
    while (same && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char pa[8192], pb[8192];
        snprintf(pa, sizeof pa, "%s/%s", a, e->d_name);
        snprintf(pb, sizeof pb, "%s/%s", b, e->d_name);
        same = same_files(pa, pb);
        files++;
    }
    if (d)
        closedir(d);
    return same && files > 2;
}

/* The radix sort tests' keys: a 64-bit LCG step, its high bits folded down. */
static uint64_t test_random(uint64_t *state)
{
    *state = *state * 6364136223846793005u + 1442695040888963407u;
    return *state ^ (*state >> 29);
}

/* Pairs ordered by key, then by val: with val = the pair's place, the order a
 * stable sort by key gives. */
static int cmp_pair_key_val(const void *a, const void *b)
{
    const es_radix_pair *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->val > y->val) - (x->val < y->val);
}

/* es_radix_sort_pairs is stable: keys with many repeats (a byte or two wide,
 * and all 64 bits with repeats), each pair's value its place; the reference is
 * qsort by (key, place). The planner sorts batches by begin and then by cost
 * with it and relies on ties keeping their order. */
START_TEST(radix_sort_pairs_is_stable)
{
    uint64_t state = 7;
    enum { MAX = 5000 };
    static es_radix_pair pairs[MAX], want[MAX], tmp[MAX];
    const size_t sizes[] = {0, 1, 2, 3, 256, 1000, MAX};
    for (int kind = 0; kind < 4; kind++) {
        for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
            size_t n = sizes[z];
            for (size_t i = 0; i < n; i++) {
                uint64_t r = test_random(&state);
                uint64_t key = kind == 0   ? r % 5                          /* one byte */
                               : kind == 1 ? (r % 3) << 40 | (r >> 7) % 300 /* two bytes apart */
                               : kind == 2 ? (r % 11) * 0x0101010101010101u /* every byte */
                                           : 42;                            /* one value */
                pairs[i] = (es_radix_pair){key, i};
            }
            memcpy(want, pairs, n * sizeof *pairs);
            qsort(want, n, sizeof *want, cmp_pair_key_val);
            es_radix_sort_pairs(pairs, n, tmp);
            ck_assert_msg(memcmp(pairs, want, n * sizeof *pairs) == 0, "kind %d, n %zu", kind, n);
        }
    }
}
END_TEST

/* A batch and its place, for the reference order below. */
typedef struct placed_batch {
    plan_batch b;
    size_t place;
} placed_batch;

/* Cost descending (-0 equal to 0), then begin, then place: the order a stable
 * sort by (cost, begin) gives, computed by qsort. */
static int cmp_placed(const void *a, const void *b)
{
    const placed_batch *x = a, *y = b;
    if (x->b.cost != y->b.cost)
        return x->b.cost < y->b.cost ? 1 : -1;
    if (x->b.begin != y->b.begin)
        return x->b.begin < y->b.begin ? -1 : 1;
    return (x->place > y->place) - (x->place < y->place);
}

/* Batch mode pads the batch count to a multiple of K with copies of the
 * cheapest batches, appended, then needs the order a stable sort of all of
 * them by cost gives (each copy after its original). es_batches_merge_appended
 * puts the copies in place without sorting everything again: it must give
 * that order exactly, for costs with many ties (and -0), copies fewer or more
 * than the batches (wrapping round, as settle_remainder makes them). */
START_TEST(pad_copies_merge_as_a_full_sort)
{
    uint64_t state = 99;
    enum { MAX = 1200 };
    static plan_batch b[2 * MAX];
    static placed_batch want[2 * MAX];
    const size_t sizes[][2] = {{1, 1}, {1, 5}, {3, 2}, {10, 25}, {500, 7}, {1000, 999},
                               {MAX, 1}, {200, MAX}};
    for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
        size_t n = sizes[z][0], add = sizes[z][1];
        for (size_t i = 0; i < n; i++) {
            uint64_t r = test_random(&state);
            double cost = (double)(r % 9) * 0.5;
            memset(&b[i], 0, sizeof b[i]);
            b[i].begin = (size_t)((r >> 8) % 100000) * 2 * MAX + i; /* distinct */
            b[i].end = b[i].begin + 1;
            b[i].cost = cost == 0 && (r >> 40) % 2 ? -0.0 : cost;
        }
        ck_assert_int_eq(es_batches_sort_by_cost(b, n, 0), 1);
        for (size_t i = 0; i < add; i++) {
            b[n + i] = b[n - 1 - (i % n)];
            b[n + i].repeat = 1;
        }
        for (size_t i = 0; i < n + add; i++)
            want[i] = (placed_batch){b[i], i};
        qsort(want, n + add, sizeof *want, cmp_placed);
        ck_assert_int_eq(es_batches_merge_appended(b, n, add, 0), 1);
        for (size_t i = 0; i < n + add; i++) {
            ck_assert_msg(b[i].begin == want[i].b.begin && b[i].repeat == want[i].b.repeat,
                          "n %zu + %zu: place %zu: begin %zu repeat %d, want %zu %d", n, add, i,
                          b[i].begin, b[i].repeat, want[i].b.begin, want[i].b.repeat);
            ck_assert(b[i].cost == want[i].b.cost);
        }
    }
}
END_TEST

/* es_radix_sort_u64 against qsort (the comparison sort it replaced in the
 * planner): random keys of every width, repeated keys, one value, the packed
 * (frames << 32 | position) keys of es_plan_predict_batches, sizes 0 to 3000. */
START_TEST(radix_sort_matches_qsort)
{
    uint64_t state = 42;
    enum { MAX = 3000 };
    static uint64_t keys[MAX], want[MAX], tmp[MAX];
    const size_t sizes[] = {0, 1, 2, 3, 255, 256, 257, 500, 1000, MAX};
    for (int kind = 0; kind < 5; kind++) {
        for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
            size_t n = sizes[z];
            for (size_t i = 0; i < n; i++) {
                uint64_t r = test_random(&state);
                keys[i] = kind == 0   ? r                                  /* all 64 bits */
                          : kind == 1 ? r >> (r & 63)                      /* mixed widths */
                          : kind == 2 ? r % 7                              /* repeats */
                          : kind == 3 ? 0x0123456789abcdefu                /* one value */
                                      : (r % 4000) << 32 | (uint32_t)i;    /* frames, pos */
            }
            memcpy(want, keys, n * sizeof *keys);
            qsort(want, n, sizeof *want, cmp_u64);
            es_radix_sort_u64(keys, n, tmp);
            ck_assert_msg(memcmp(keys, want, n * sizeof *keys) == 0, "kind %d, n %zu", kind, n);
        }
    }
}
END_TEST

/* Batch lines take each shard's JSON literal from a cache keyed by the shard's
 * pointer (write/shard_literals.h): every literal must be the bytes
 * es_json_escape writes for the name (hand-worked for two names below),
 * including across the cache's growth (3 000 names, first slots 1 024), and
 * two pointers to equal names get equal literals. */
START_TEST(shard_literals_are_the_escaped_names)
{
    enum { N = 3000 };
    static char names[N][48];
    for (int i = 0; i < N; i++)
        snprintf(names[i], sizeof names[i], i % 3 == 0 ? "shards/q\"%d\\.tar"
                                              : i % 3 == 1 ? "shards/\xe9\x01%d.tar"
                                                           : "shards/s_%09d.tar", i);
    shard_literals c = {0};
    size_t off[N], len[N];
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < N; i++) {
            int j = pass ? N - 1 - i : i;
            size_t o, l;
            ck_assert_int_eq(shard_literal_get(&c, names[j], &o, &l), 0);
            if (pass) { /* the same literal again, after the growth */
                ck_assert_uint_eq(o, off[j]);
                ck_assert_uint_eq(l, len[j]);
            } else {
                off[j] = o, len[j] = l;
            }
        }
    }
    ck_assert_uint_eq(c.n, N);
    char want[6 * 48 + 2];
    for (int i = 0; i < N; i++) {
        size_t n = (size_t)(es_json_escape(want, names[i], strlen(names[i])) - want);
        ck_assert_uint_eq(len[i], n);
        ck_assert(memcmp(c.text.buf + off[i], want, n) == 0);
    }
    /* worked by hand: a quote and a backslash escaped; 0xE9 alone is not UTF-8
     * (\udce9, Python's surrogateescape), 0x01 a control character (\u0001) */
    ck_assert(memcmp(c.text.buf + off[0], "\"shards/q\\\"0\\\\.tar\"", len[0]) == 0);
    ck_assert_uint_eq(len[0], strlen("\"shards/q\\\"0\\\\.tar\""));
    ck_assert(memcmp(c.text.buf + off[1], "\"shards/\\udce9\\u00011.tar\"", len[1]) == 0);
    ck_assert_uint_eq(len[1], strlen("\"shards/\\udce9\\u00011.tar\""));
    /* the same name at another address: its own entry, the same bytes */
    char copy[48];
    strcpy(copy, names[2]);
    size_t o, l;
    ck_assert_int_eq(shard_literal_get(&c, copy, &o, &l), 0);
    ck_assert_uint_ne(o, off[2]);
    ck_assert_uint_eq(l, len[2]);
    ck_assert(memcmp(c.text.buf + o, c.text.buf + off[2], l) == 0);
    shard_literals_release(&c);
}
END_TEST

START_TEST(repeat_runs_are_byte_identical)
{
    size_t n = 1200;
    double *sec = lognormal_seconds(n, 3);
    es_cost_table *t = make_table(sec, n, 50);
    es_context *ctx = es_context_new();
    char *dir = make_temp_dir();
    for (int mode = 0; mode < 2; mode++) {
        char out[2][4200];
        for (int run = 0; run < 2; run++) {
            es_plan_settings s;
            es_plan_defaults(&s);
            s.world_size = 4;
            s.workers = 3;
            s.mode = mode ? ES_PLAN_BATCH : ES_PLAN_SHARD;
            s.seed = 42;
            es_plan *p = NULL;
            ck_assert_int_eq(es_plan_build(ctx, &s, t, &p), ES_OK);
            snprintf(out[run], sizeof out[run], "%s/plan-%d-%d", dir, mode, run);
            ck_assert_int_eq(es_plan_write(ctx, p, out[run], NULL, 0), ES_OK);
            es_plan_free(p);
        }
        ck_assert(same_dirs(out[0], out[1]));
    }
    /* OUTDIR that is not ours is refused, untouched */
    char notours[4200];
    snprintf(notours, sizeof notours, "%s/data", dir);
    mkdir(notours, 0700);
    char keep[4300];
    snprintf(keep, sizeof keep, "%s/keep.txt", notours);
    fclose(fopen(keep, "w"));
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = 2;
    es_plan *p = NULL;
    ck_assert_int_eq(es_plan_build(ctx, &s, t, &p), ES_OK);
    ck_assert_int_eq(es_plan_write(ctx, p, notours, NULL, 0), ES_ERR_USAGE);
    ck_assert_int_eq(access(keep, F_OK), 0);
    es_plan_free(p);
    es_context_free(ctx);
    es_cost_table_free(t);
    free(sec);
    free(dir);
}
END_TEST

/* The accessors give each rank's lists and batches as es_plan_write writes them:
 * the lines of every rank-R[.worker-W].list (shard paths, and a raw list's
 * original lines for item rows) and, per batch line, step, worker and keys. */
static void list_equals_file(es_context *ctx, const es_plan *p, uint32_t r, uint32_t w,
                             const char *path)
{
    es_strbuf sb = {0};
    const char *entry;
    for (size_t i = 0; i < es_plan_rank_shard_count(p, r, w); i++) {
        ck_assert_int_eq(es_plan_rank_shard(ctx, p, r, w, i, &entry), ES_OK);
        es_strbuf_printf(&sb, "%s\n", entry);
    }
    ck_assert_int_eq(es_plan_rank_shard(ctx, p, r, w, es_plan_rank_shard_count(p, r, w), &entry),
                     ES_ERR_USAGE);
    size_t len;
    unsigned char *want = read_whole_file(path, &len);
    ck_assert_ptr_nonnull(want);
    ck_assert_uint_eq(sb.len, len);
    ck_assert(len == 0 || memcmp(sb.buf, want, len) == 0);
    free(want);
    es_strbuf_release(&sb);
}

/* Each line of rank r's batches.jsonl starts with the batch's step and worker
 * and holds its keys, in es_plan_batch_info's order. */
static void batches_equal_file(const es_plan *p, const es_cost_table *t, uint32_t r,
                               const char *path)
{
    size_t len;
    char *file = (char *)read_whole_file(path, &len), *line = file;
    es_plan_batch b;
    for (size_t i = 0; i < es_plan_batch_count(p, r); i++) {
        ck_assert_int_eq(es_plan_batch_info(p, r, i, &b), ES_OK);
        es_strbuf want = {0};
        es_strbuf_printf(&want, "{\"step\": %llu, \"worker\": %u, ", (unsigned long long)b.step,
                         b.worker);
        ck_assert_int_eq(strncmp(line, want.buf, want.len), 0);
        ck_assert_uint_eq(b.step, i); /* step order, one batch a step */
        want.len = 0;
        for (size_t j = 0; j < b.n_rows; j++) {
            es_cost_row row;
            es_cost_table_row(t, b.rows[j], &row);
            es_strbuf_printf(&want, "%s\"%s\"", j ? ", " : "\"keys\": [", row.key);
        }
        es_strbuf_puts(&want, "]");
        ck_assert_ptr_nonnull(strstr(line, want.buf));
        es_strbuf_release(&want);
        line = strchr(line, '\n') + 1;
    }
    ck_assert_uint_eq((size_t)(line - file), len);
    ck_assert_int_eq(es_plan_batch_info(p, r, es_plan_batch_count(p, r), &b), ES_ERR_USAGE);
    free(file);
}

START_TEST(accessors_match_written_lists)
{
    size_t n = 600;
    double *sec = lognormal_seconds(n, 5);
    es_cost_table *t = make_table(sec, n, 40);
    char *dir = make_temp_dir();
    char raw[4200], out[4200], path[4300];
    snprintf(raw, sizeof raw, "%s/raw.list", dir);
    FILE *fp = fopen(raw, "w");
    for (int i = 0; i < 7; i++) { /* a raw list's rows are entries of their own */
        char key[16];
        snprintf(key, sizeof key, "raw%d", i);
        fprintf(fp, "{\"key\": \"%s\", \"wav\": \"w%d.wav\", \"txt\": \"x\"}\n", key, i);
        es_cost_row r = {key, raw, (uint64_t)i, 16000, 1, 48000, 100, 20, 0, "spk",
                         ES_FLAG_AUDIO | ES_FLAG_TEXT | ES_FLAG_ITEM, 0, 0};
        ck_assert_int_eq(es_cost_table_append(t, &r), ES_OK);
    }
    fclose(fp);
    es_context *ctx = es_context_new();
    for (int mode = 0; mode < 2; mode++) {
        es_plan_settings s;
        es_plan_defaults(&s);
        s.world_size = 3;
        s.workers = 2;
        s.mode = mode ? ES_PLAN_BATCH : ES_PLAN_SHARD;
        es_plan *p = NULL;
        ck_assert_int_eq(es_plan_build(ctx, &s, t, &p), ES_OK);
        snprintf(out, sizeof out, "%s/plan-%d", dir, mode);
        ck_assert_int_eq(es_plan_write(ctx, p, out, NULL, 0), ES_OK);
        size_t entries = 0;
        for (uint32_t r = 0; r < 3; r++) {
            ck_assert_uint_eq(es_plan_batch_count(p, r) != 0, mode == 1);
            ck_assert_uint_eq(es_plan_rank_shard_count(p, r, ES_PLAN_ALL_WORKERS) != 0, mode == 0);
            if (mode == 0) {
                entries += es_plan_rank_shard_count(p, r, ES_PLAN_ALL_WORKERS);
                for (uint32_t w = 0; w < 2; w++) {
                    snprintf(path, sizeof path, "%s/rank-%05u.worker-%u.list", out, r, w);
                    list_equals_file(ctx, p, r, w, path);
                }
                snprintf(path, sizeof path, "%s/rank-%05u.list", out, r);
                list_equals_file(ctx, p, r, ES_PLAN_ALL_WORKERS, path);
                continue;
            }
            snprintf(path, sizeof path, "%s/rank-%05u.batches.jsonl", out, r);
            batches_equal_file(p, t, r, path);
        }
        if (mode == 0)
            ck_assert_uint_eq(entries, 15 + 7); /* every shard and raw row once */
        ck_assert_uint_eq(es_plan_rank_shard_count(p, 3, 0), 0);
        ck_assert_uint_eq(es_plan_remainder_row(p, 0), (size_t)-1);
        es_plan_free(p);
    }
    es_context_free(ctx);
    es_cost_table_free(t);
    free(sec);
    free(dir);
}
END_TEST

/* The planner's helper threads that pay for fresh pages (core/prefault_ahead.h)
 * must not change a plan: a table large enough that they start (1.2 M rows:
 * 9.6 MB per-row arrays), planned with them and with the context's
 * pages_ahead setting off,
 * gives the same loads, lists and batches in shard and batch mode. */
static void assert_same_plans(const es_plan *a, const es_plan *b, const es_plan_settings *s)
{
    es_context *ctx = es_context_new();
    for (uint32_t r = 0; r < s->world_size; r++) {
        for (uint32_t w = 0; w < s->workers; w++) {
            es_plan_load x, y;
            ck_assert_int_eq(es_plan_rank_load(a, r, (int32_t)w, &x), ES_OK);
            ck_assert_int_eq(es_plan_rank_load(b, r, (int32_t)w, &y), ES_OK);
            ck_assert(x.cost == y.cost && x.utterances == y.utterances &&
                      x.frames == y.frames && x.batches == y.batches);
            size_t n = es_plan_rank_shard_count(a, r, w);
            ck_assert_uint_eq(n, es_plan_rank_shard_count(b, r, w));
            for (size_t i = 0; i < n; i++) {
                const char *ea, *eb;
                ck_assert_int_eq(es_plan_rank_shard(ctx, a, r, w, i, &ea), ES_OK);
                ck_assert_int_eq(es_plan_rank_shard(ctx, b, r, w, i, &eb), ES_OK);
                ck_assert_str_eq(ea, eb);
            }
        }
        size_t nb = es_plan_batch_count(a, r);
        ck_assert_uint_eq(nb, es_plan_batch_count(b, r));
        for (size_t i = 0; i < nb; i++) {
            es_plan_batch x, y;
            ck_assert_int_eq(es_plan_batch_info(a, r, i, &x), ES_OK);
            ck_assert_int_eq(es_plan_batch_info(b, r, i, &y), ES_OK);
            ck_assert(x.step == y.step && x.worker == y.worker && x.cost == y.cost &&
                      x.frames == y.frames && x.longest == y.longest && x.repeat == y.repeat);
            ck_assert_uint_eq(x.n_rows, y.n_rows);
            ck_assert_int_eq(memcmp(x.rows, y.rows, x.n_rows * sizeof *x.rows), 0);
        }
    }
    es_context_free(ctx);
}

START_TEST(page_helpers_do_not_change_plans)
{
    size_t n = 1200000;
    double *sec = lognormal_seconds(n, 11);
    es_cost_table *t = make_table(sec, n, 1000);
    es_context *ctx = es_context_new();
    static const es_plan_mode modes[] = {ES_PLAN_SHARD, ES_PLAN_BATCH};
    for (size_t m = 0; m < 2; m++) {
        es_plan_settings s;
        es_plan_defaults(&s);
        s.world_size = 64;
        s.workers = 2;
        s.mode = modes[m];
        es_plan *with = NULL, *without = NULL;
        es_context_set(ctx, "pages_ahead", "1");
        ck_assert_int_eq(es_plan_build(ctx, &s, t, &with), ES_OK);
        es_context_set(ctx, "pages_ahead", "0");
        ck_assert_int_eq(es_plan_build(ctx, &s, t, &without), ES_OK);
        es_context_set(ctx, "pages_ahead", "1");
        assert_same_plans(with, without, &s);
        es_plan_metrics x, y;
        es_plan_get_metrics(with, &x);
        es_plan_get_metrics(without, &y);
        ck_assert(x.imbalance == y.imbalance && x.total_batches == y.total_batches &&
                  x.kept == y.kept && x.batch_spread == y.batch_spread);
        ck_assert_uint_eq(x.kept, n);
        es_plan_free(with);
        es_plan_free(without);
    }
    es_context_free(ctx);
    es_cost_table_free(t);
    free(sec);
}
END_TEST


/* es_plan_settings.build_progress and (batch mode) progress: done never falls,
 * total never changes, and the last call reports done == total. The build's
 * total is 4 row passes of the table's rows (the header's contract, from the
 * test's own row count); the rank files' is every rank's batch rows, padding
 * copies included (es_plan_rank_load's utterances). 300 000 rows: the filter
 * pass alone reports every 65 536 rows, so calls come mid-pass too. */
START_TEST(progress_is_monotone_and_ends_at_total)
{
    size_t n = 300000;
    double *sec = lognormal_seconds(n, 11);
    es_cost_table *t = make_table(sec, n, 1000);
    es_context *ctx = es_context_new();
    char *dir = make_temp_dir();
    const es_plan_mode modes[] = {ES_PLAN_SHARD, ES_PLAN_BATCH, ES_PLAN_RESHARD};
    for (int m = 0; m < 3; m++) {
        es_plan_settings s;
        es_plan_defaults(&s);
        s.world_size = 4;
        s.workers = 2;
        s.mode = modes[m];
        progress_seen build = {0}, write = {0};
        s.build_progress = progress_record;
        s.build_progress_user = &build;
        s.progress = progress_record;
        s.progress_user = &write;
        es_plan *p = NULL;
        ck_assert_msg(es_plan_build(ctx, &s, t, &p) == ES_OK, "%s", es_errmsg(ctx));
        ck_assert_uint_eq(build.last_total, 4 * n);
        ck_assert_uint_eq(build.last_done, 4 * n);
        ck_assert_uint_eq(build.backwards, 0);
        ck_assert_uint_eq(build.total_changed, 0);
        /* the filter's 4 mid-pass calls, and one at least per pass's end */
        ck_assert_uint_ge(build.calls, n / 65536 + 4);
        ck_assert_uint_eq(write.calls, 0); /* the build writes nothing */
        if (modes[m] == ES_PLAN_BATCH) {
            char out[4200];
            snprintf(out, sizeof out, "%s/batch", dir);
            ck_assert_msg(es_plan_write(ctx, p, out, NULL, 0) == ES_OK, "%s", es_errmsg(ctx));
            size_t rows = 0;
            for (uint32_t r = 0; r < s.world_size; r++) {
                es_plan_load l;
                es_plan_rank_load(p, r, -1, &l);
                rows += l.utterances;
            }
            ck_assert_uint_ge(rows, n);
            ck_assert_uint_eq(write.last_total, rows);
            ck_assert_uint_eq(write.last_done, rows);
            ck_assert_uint_eq(write.backwards, 0);
            ck_assert_uint_eq(write.total_changed, 0);
            ck_assert_uint_ge(write.calls, 2); /* a rank file at least, and the end */
        }
        es_plan_free(p);
    }
    es_context_free(ctx);
    es_cost_table_free(t);
    free(sec);
    free(dir);
}
END_TEST
/* The context's test hook (es_context_set_test_hook) sees a "file-made" point
 * for every file of OUTDIR (counted by readdir) and one "before-commit"; the
 * library itself reads none of the variables the CLI maps onto it: with
 * EQUISHARD_TEST_PAUSE_MS and EQUISHARD_TEST_COMMIT_PAUSE_MS set to 10 s and
 * no hook, the write still takes well under a second per file. */
typedef struct hook_count {
    int made, commits;
} hook_count;

static void count_points(void *user, const char *point)
{
    hook_count *c = user;
    c->made += strcmp(point, "file-made") == 0;
    c->commits += strcmp(point, "before-commit") == 0;
}

START_TEST(test_hook_is_the_contexts_not_the_environment)
{
    size_t n = 2000;
    double *sec = lognormal_seconds(n, 5);
    es_cost_table *t = make_table(sec, n, 100);
    es_context *ctx = es_context_new();
    char *dir = make_temp_dir();
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = 3;
    s.workers = 2;
    s.mode = ES_PLAN_BATCH;
    es_plan *p = NULL;
    ck_assert_int_eq(es_plan_build(ctx, &s, t, &p), ES_OK);
    char out[4200];
    snprintf(out, sizeof out, "%s/plan", dir);
    hook_count c = {0, 0};
    es_context_set_test_hook(ctx, count_points, &c);
    ck_assert_int_eq(es_plan_write(ctx, p, out, NULL, 0), ES_OK);
    int files = 0;
    DIR *d = opendir(out);
    ck_assert_ptr_nonnull(d);
    for (struct dirent *e; (e = readdir(d));)
        files += e->d_name[0] != '.';
    closedir(d);
    ck_assert_int_ge(files, 5); /* plan.json, 3 ranks, costs.tsv.zst */
    ck_assert_int_eq(c.made, files);
    ck_assert_int_eq(c.commits, 1);

    es_context_set_test_hook(ctx, NULL, NULL);
    setenv("EQUISHARD_TEST_PAUSE_MS", "10000", 1);
    setenv("EQUISHARD_TEST_COMMIT_PAUSE_MS", "10000", 1);
    time_t began = time(NULL);
    ck_assert_int_eq(es_plan_write(ctx, p, out, NULL, 0), ES_OK);
    unsetenv("EQUISHARD_TEST_PAUSE_MS");
    unsetenv("EQUISHARD_TEST_COMMIT_PAUSE_MS");
    ck_assert_int_lt(time(NULL) - began, 5);
    es_plan_free(p);
    es_cost_table_free(t);
    es_context_free(ctx);
    free(sec);
    free(dir);
}
END_TEST

/* es_cost_table_compress_ahead: batch mode's OUTDIR/costs.tsv.zst, written from
 * the image compressed while the plan was built, has exactly the bytes
 * es_cost_table_write gives a ".zst" path (the image spans several of its
 * 1 MiB chunks here), the folder is the same written with or without
 * O_DIRECT, and a table whose image is never written is freed cleanly (its
 * thread joined). */
START_TEST(table_compressed_ahead_is_the_written_table)
{
    size_t n = 400000;
    double *sec = lognormal_seconds(n, 7);
    es_cost_table *t = make_table(sec, n, 1000);
    es_context *ctx = es_context_new();
    char *dir = make_temp_dir();
    char ref[4200], out[4200], path[4300];
    snprintf(ref, sizeof ref, "%s/ref.tsv.zst", dir);
    ck_assert_int_eq(es_cost_table_write(ctx, t, ref), ES_OK);
    ck_assert_int_eq(es_cost_table_compress_ahead(ctx, t), ES_OK);
    ck_assert_int_eq(es_cost_table_compress_ahead(ctx, t), ES_OK); /* one image */
    ck_assert_int_eq(es_cost_table_compress_ahead(ctx, NULL), ES_ERR_USAGE);
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = 5;
    s.mode = ES_PLAN_BATCH;
    es_plan *p = NULL;
    ck_assert_int_eq(es_plan_build(ctx, &s, t, &p), ES_OK);
    snprintf(out, sizeof out, "%s/plan", dir);
    ck_assert_int_eq(es_plan_write(ctx, p, out, NULL, 0), ES_OK);
    snprintf(path, sizeof path, "%s/costs.tsv.zst", out);
    struct stat st;
    ck_assert_int_eq(stat(ref, &st), 0);
    ck_assert_int_gt(st.st_size, 2 << 20);
    ck_assert(same_files(ref, path));
    /* The rank files (megabytes each) and costs.tsv.zst went around the page
     * cache (core/direct_write.h); written the ordinary way, every file of the
     * folder has the same bytes. */
    snprintf(path, sizeof path, "%s/rank-00000.batches.jsonl", out);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_gt(st.st_size, 1 << 20);
    char plain[4200];
    snprintf(plain, sizeof plain, "%s/plain", dir);
    es_context_set(ctx, "direct_io", "0");
    ck_assert_int_eq(es_plan_write(ctx, p, plain, NULL, 0), ES_OK);
    es_context_set(ctx, "direct_io", "1");
    ck_assert(same_dirs(out, plain));
    ck_assert(same_dirs(plain, out));
    es_plan_free(p);
    es_cost_table_free(t);
    /* started, never written */
    es_cost_table *small = make_table(sec, 1000, 100);
    ck_assert_int_eq(es_cost_table_compress_ahead(ctx, small), ES_OK);
    es_cost_table_free(small);
    es_context_free(ctx);
    free(sec);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("plan");
    TCase *part = tcase_create("partition");
    tcase_add_test(part, one_huge_item);
    tcase_add_test(part, all_equal);
    tcase_add_test(part, fewer_items_than_bins);
    tcase_add_test(part, one_bin);
    tcase_add_test(part, classic_instance_reaches_optimum);
    tcase_add_test(part, balanced_counts);
    tcase_add_test(part, random_against_brute_force);
    tcase_add_test(part, dynamic_batch_rule);
    suite_add_tcase(s, part);
    TCase *plan = tcase_create("plan");
    tcase_add_test(plan, empty_input_is_an_error);
    tcase_add_test(plan, batch_mode_guarantees);
    tcase_add_test(plan, batch_epochs_have_their_own_batches);
    tcase_add_test(plan, shard_mode_quality);
    tcase_add_test(plan, repeat_runs_are_byte_identical);
    tcase_add_test(plan, shard_literals_are_the_escaped_names);
    tcase_add_test(plan, radix_sort_matches_qsort);
    tcase_add_test(plan, radix_sort_pairs_is_stable);
    tcase_add_test(plan, pad_copies_merge_as_a_full_sort);
    tcase_add_test(plan, accessors_match_written_lists);
    tcase_add_test(plan, subset_plan_leaves_out_the_masked_rows);
    tcase_add_test(plan, speech_token_requirement);
    tcase_add_test(plan, progress_is_monotone_and_ends_at_total);
    tcase_add_test(plan, empty_rank_or_worker_refused);
    tcase_add_test(plan, page_helpers_do_not_change_plans);
    tcase_add_test(plan, table_compressed_ahead_is_the_written_table);
    tcase_add_test(plan, test_hook_is_the_contexts_not_the_environment);
    suite_add_tcase(s, plan);
    return run_suite(s);
}
