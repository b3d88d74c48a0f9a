/* equishard plan --resume-from OUTDIR --step S --world-size K [--workers W] [--epoch E]
 *                -o NEWDIR
 *
 * The rest of a batch plan's epoch, for a job restarted after S steps on K
 * ranks and W workers: OUTDIR's plan of epoch E (plan.json's parameters over
 * OUTDIR/costs.tsv.zst, as equishard.loaders rebuild it) has the table rows of
 * its steps < S, on every rank, left out, and the rest is planned for K and W
 * (es_plan_build_subset) and written to NEWDIR. These are the batches the
 * Python drop-ins plan in memory for such a job (PlanDir.resized), steps
 * numbered from 0 here, from S there; NEWDIR's later epochs are whole plans
 * for K and W, its costs.tsv.zst being OUTDIR's whole table. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

/* The first problem's one line (the library's own, or this file's). */
static char problem[4608];

static int fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    return status;
}

/* A library call's status, its message kept when it failed. */
static int lib(es_context *ctx, int rc)
{
    if (rc != ES_OK)
        snprintf(problem, sizeof problem, "%s", es_errmsg(ctx));
    return rc;
}

/* OUTDIR/plan.json's parameters (es_plan_dir_open, the one reader) into *s
 * (es_plan_defaults first): exactly the fields PlanDir.plan_settings passes to
 * equishard.plan, so both build the same plan. Its epoch into *epoch. */
static int read_settings(const char *outdir, es_plan_settings *s, int64_t *epoch)
{
    es_context *ctx = cli_context_new();
    es_plan_dir *d = NULL;
    if (!ctx)
        return fail(ES_ERR_NOMEM, "out of memory");
    int rc = lib(ctx, es_plan_dir_open(ctx, outdir, &d));
    es_context_free(ctx);
    if (rc != ES_OK)
        return rc;
    es_plan_dir_info in;
    es_plan_settings ps;
    es_plan_dir_get_info(d, &in);
    es_plan_dir_settings(d, &ps);
    if (in.mode != ES_PLAN_BATCH)
        rc = fail(ES_ERR_USAGE, "%s: a %s plan: --resume-from needs a batch plan (a shard "
                  "or reshard plan's steps are made by the recipe's shuffle buffers, not "
                  "known in advance)", in.plan_json, es_enum_name(ES_ENUM_PLAN_MODE, (int)in.mode));
    es_plan_defaults(s);
    es_cost_model *m = &s->model;
    const es_cost_model *pm = &ps.model;
    m->frame_rate = pm->frame_rate;
    m->w_frames = pm->w_frames;
    m->w_text = pm->w_text;
    m->w_speech_tokens = pm->w_speech_tokens;
    m->w_frames_sq = pm->w_frames_sq;
    m->w_missing_emb = pm->w_missing_emb;
    m->w_overhead = pm->w_overhead;
    m->w_batch = pm->w_batch;
    m->min_length = pm->min_length;
    m->max_length = pm->max_length;
    m->token_min_length = pm->token_min_length;
    m->token_max_length = pm->token_max_length;
    m->min_output_input_ratio = pm->min_output_input_ratio;
    m->max_output_input_ratio = pm->max_output_input_ratio;
    m->require_speech_token = pm->require_speech_token;
    s->world_size = ps.world_size;
    s->workers = ps.workers;
    s->mode = ES_PLAN_BATCH;
    s->max_frames_in_batch = ps.max_frames_in_batch;
    s->batch_size = ps.batch_size;
    s->sort_size = ps.sort_size;
    s->remainder = ps.remainder;
    s->seed = ps.seed;
    *epoch = ps.epoch;
    es_plan_dir_free(d);
    return rc;
}

/* Marks the table rows of the plan's steps < step, on every rank; fails when
 * the epoch has fewer steps. */
static int trained_rows(const es_plan *old, uint32_t ranks, uint64_t step,
                        int64_t epoch, unsigned char *mask, size_t *n_marked)
{
    size_t steps = es_plan_batch_count(old, 0);
    if (step > steps)
        return fail(ES_ERR_USAGE, "--step %llu: epoch %lld of the plan has %zu steps a "
                       "rank", (unsigned long long)step, (long long)epoch, steps);
    if (step == steps)
        return fail(ES_ERR_USAGE, "--step %llu: the last step of epoch %lld: nothing of it is "
                    "left to plan (restart at epoch %lld: --step 0 --epoch %lld plans it whole)",
                    (unsigned long long)step, (long long)epoch, (long long)epoch + 1,
                    (long long)epoch + 1);
    *n_marked = 0;
    for (uint32_t r = 0; r < ranks; r++)
        for (size_t i = 0; i < es_plan_batch_count(old, r); i++) {
            es_plan_batch b;
            es_plan_batch_info(old, r, i, &b);
            if (b.step >= step)
                continue;
            for (size_t j = 0; j < b.n_rows; j++) {
                *n_marked += !mask[b.rows[j]];
                mask[b.rows[j]] = 1;
            }
        }
    return ES_OK;
}

int plan_resume(plan_args *a)
{
    es_context *ctx = cli_context_new();
    if (!ctx)
        return cli_fail("out of memory", ES_ERR_NOMEM);
    es_plan_settings old_s;
    int64_t epoch = 0;
    es_cost_table *table = NULL;
    es_plan *old = NULL, *plan = NULL;
    unsigned char *mask = NULL;
    size_t left_out = 0;
    char costs[4096];
    snprintf(costs, sizeof costs, "%s/costs.tsv.zst", a->resume_from);
    int rc = read_settings(a->resume_from, &old_s, &epoch);
    if (rc == ES_OK && a->plan.epoch != INT64_MIN)
        epoch = a->plan.epoch;
    old_s.epoch = epoch;
    old_s.root = a->measure.root;
    if (rc == ES_OK)
        rc = lib(ctx, es_cost_table_read(ctx, costs, &table));
    if (rc == ES_OK)
        rc = lib(ctx, es_plan_build(ctx, &old_s, table, &old));
    if (rc == ES_OK && !(mask = calloc(es_cost_table_size(table) + 1, 1)))
        rc = fail(ES_ERR_NOMEM, "out of memory");
    if (rc == ES_OK)
        rc = trained_rows(old, old_s.world_size, a->resume_step, epoch, mask, &left_out);
    if (rc == ES_OK) {
        uint32_t k = a->plan.world_size, w = a->plan.workers ? a->plan.workers : old_s.workers;
        a->plan = old_s; /* the plan's settings, for the running job's ranks and workers */
        a->plan.world_size = k;
        a->plan.workers = w;
        rc = lib(ctx, es_plan_build_subset(ctx, &a->plan, table, mask, &plan));
    }
    if (rc == ES_OK) {
        const char *const inputs[] = {costs};
        es_outdir_remove_stale(a->outdir, plan_report_stale, NULL);
        rc = lib(ctx, es_plan_write(ctx, plan, a->outdir, inputs, 1));
    }
    int exit_code;
    if (rc == ES_OK) {
        printf("resumed %s, epoch %lld, at step %llu: %zu utterance(s) its first steps trained "
               "left out\n", a->resume_from, (long long)epoch,
               (unsigned long long)a->resume_step, left_out);
        exit_code = plan_report(plan, a);
    } else {
        exit_code = cli_fail(problem, rc);
    }
    free(mask);
    es_plan_free(plan);
    es_plan_free(old);
    es_cost_table_free(table);
    es_context_free(ctx);
    return exit_code;
}
