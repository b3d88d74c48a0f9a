/* The plan built from the command's inputs (plan.h), with the build's
 * progress line, and the write's progress line set up before it. Apart from the
 * one-process command (cmd_plan.c), which hands over to the MPI form
 * (cmd_plan_mpi.c): both build here. */
#include "plan.h"

int plan_build(es_context *ctx, plan_args *a, int quiet, int writes, const char *const *inputs,
               size_t n_inputs, es_cost_table **table, es_plan **plan)
{
    *table = NULL;
    *plan = NULL;
    int rc = cli_load_inputs(ctx, &a->measure, quiet, a->list.speech_tokens, inputs, n_inputs,
                             table);
    return rc == ES_OK ? plan_from_table(ctx, a, writes, *table, plan) : rc;
}

int plan_from_table(es_context *ctx, plan_args *a, int writes, es_cost_table *table,
                    es_plan **plan)
{
    a->plan.tokenizer = a->measure.tokenizer;
    /* batch mode writes the table back as costs.tsv.zst: the other core
     * compresses it while the plan is built (only where OUTDIR is written) */
    int rc = ES_OK;
    if (a->plan.mode == ES_PLAN_BATCH && writes)
        rc = es_cost_table_compress_ahead(ctx, table);
    if (rc != ES_OK)
        return rc;
    /* the build's line ("plan: D / T row passes"), on the process that writes */
    cli_progress line;
    cli_progress_init(&line, "plan", "row passes", a->list.quiet || !writes);
    a->plan.build_progress = line.enabled ? cli_progress_update : NULL;
    a->plan.build_progress_user = &line;
    rc = es_plan_build(ctx, &a->plan, table, plan);
    cli_progress_end(&line);
    a->plan.build_progress = NULL; /* line is gone; the plan calls it no more */
    a->plan.build_progress_user = NULL;
    return rc;
}

void plan_watch_write(plan_args *a, cli_progress *p, int quiet)
{
    int reshard = a->plan.mode == ES_PLAN_RESHARD;
    cli_progress_init(p, reshard ? "reshard" : "write", reshard ? "shards" : "rows", quiet);
    a->plan.progress = cli_progress_update;
    a->plan.progress_user = p;
}
