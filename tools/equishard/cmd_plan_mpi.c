/* `mpirun -np N equishard plan …` / `srun equishard plan …`.
 *
 * Lists are measured once across the ranks, each rank measuring its share
 * (cli_mpi_measure, as `mpirun equishard measure` does), rather than whole
 * on every rank: the table reaches every rank that builds the plan. With a cost
 * table among the inputs, each such rank loads the inputs whole (es_load_inputs
 * joins tables and measured runs in argument order).
 *
 * Reshard mode, where one node is the wall (every byte of the corpus read,
 * written and read back): every rank loads the same inputs and builds the same
 * plan (a pure function of them); rank 0 begins OUTDIR's temporary folder and
 * sends its path; the others join it and every rank checks the sources; the
 * ranks compare their plans' digests; each rank writes its contiguous share of
 * the N new shards (whole shards: [N·r/size, N·(r+1)/size)), read back, checked
 * and fsync'd; rank 0 then writes data.list, shards.tsv, the parquet maps and
 * plan.json and puts the folder in place. The files are byte for byte those of
 * one process: each new shard's bytes depend only on the plan, not on who
 * writes it (tests/cli/test_cli_mpi_reshard.sh).
 *
 * Other modes write a few small files: rank 0 does all of it, the others wait.
 *
 * Failures: after each step every rank takes part in cli_mpi_agree, so none is
 * left waiting; the lowest failing rank's message reaches rank 0, which prints
 * it; every rank exits with the same code. The folder is removed by rank 0
 * (es_plan_writer_free of the owner) only after the agreement, when no rank is
 * writing into it any more: the previous OUTDIR stays intact.
 *
 * Each rank reads every source that feeds one of its shards (with the plan's
 * balancing, nearly every source): reads grow with N while writes, fsyncs and
 * read-backs divide (measured in docs/PERFORMANCE.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_measure_job.h"
#include "plan.h"

typedef struct plan_run {
    cli_mpi m;
    es_cost_table *table;
    es_plan *plan;
    es_plan_writer *w;
    cli_progress write_progress; /* rank 0's write progress line (reshard, batch) */
} plan_run;

/* Rank 0's folder path to every rank, into buf (its length first). */
static void share_folder(plan_run *r, char *buf, size_t size)
{
    const char *mine = r->m.rank == 0 ? es_plan_writer_folder(r->w) : NULL;
    int len = mine && strlen(mine) < size ? (int)strlen(mine) : 0;
    MPI_Request req;
    MPI_Ibcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
    cli_mpi_idle(&req);
    if (mine && len)
        memcpy(buf, mine, (size_t)len);
    MPI_Ibcast(buf, len, MPI_CHAR, 0, MPI_COMM_WORLD, &req);
    cli_mpi_idle(&req);
    buf[len] = '\0';
}

/* Every rank must have built the same plan; the same verdict on every rank. */
static int same_plan(plan_run *r)
{
    unsigned long long lo, hi;
    cli_mpi_min_max(es_plan_writer_digest(r->w), &lo, &hi);
    if (lo == hi)
        return ES_OK;
    snprintf(r->m.msg, sizeof r->m.msg, "MPI ranks built different plans: are the inputs, "
             "options and source shards the same on every node?");
    return r->m.status = ES_ERR_USAGE;
}

/* Rank 0 begins OUTDIR's temporary folder; then the others join it. */
static int begin(plan_run *r, const plan_args *a)
{
    int rc = ES_OK;
    if (r->m.rank == 0) {
        es_outdir_remove_stale(a->outdir, plan_report_stale, NULL);
        rc = es_plan_write_begin(r->m.ctx, r->plan, a->outdir, NULL, &r->w);
    }
    if (cli_mpi_agree(&r->m, rc))
        return r->m.status;
    char folder[8192]; /* OUTDIR's path and a suffix: paths are < PATH_MAX */
    share_folder(r, folder, sizeof folder);
    if (r->m.rank != 0)
        rc = es_plan_write_begin(r->m.ctx, r->plan, a->outdir, folder, &r->w);
    if (cli_mpi_agree(&r->m, rc))
        return r->m.status;
    return same_plan(r);
}

static int reshard(plan_run *r, const plan_args *a, const char *const *inputs, size_t n_inputs)
{
    if (begin(r, a) != ES_OK)
        return r->m.status;
    /* --expand-sources: each rank decompresses its share of the compressed
     * sources once; then every rank reads the plain copies */
    if (a->expand_sources &&
        (cli_mpi_agree(&r->m, es_plan_write_expand_sources(r->m.ctx, r->w, (uint32_t)r->m.rank,
                                                           (uint32_t)r->m.size)) ||
         cli_mpi_agree(&r->m, es_plan_write_use_copies(r->m.ctx, r->w))))
        return r->m.status;
    es_plan_reshard_info info;
    es_plan_reshard_info_get(r->plan, &info);
    uint64_t n = info.shards, k = (uint64_t)r->m.rank, size = (uint64_t)r->m.size;
    int rc = es_plan_write_shards(r->m.ctx, r->w, (uint32_t)(n * k / size),
                                  (uint32_t)(n * (k + 1) / size));
    cli_progress_end(&r->write_progress);
    if (cli_mpi_agree(&r->m, rc))
        return r->m.status;
    /* every shard written and on disk: rank 0 completes OUTDIR */
    return r->m.rank == 0 ? es_plan_write_finish(r->m.ctx, r->w, inputs, n_inputs) : ES_OK;
}

/* 1 when no input is a cost table: then es_load_inputs' table is es_measure's
 * of all the inputs, which one measure job shared among the ranks gives. */
static int only_lists(const char *const *inputs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (es_is_cost_table(inputs[i]))
            return 0;
    return 1;
}

/* What cli_load_inputs adds to the loaded table, on a rank that builds: rank 0
 * reports the inputs' warnings and the speech tokens it set, the others set
 * them silently (one report, not one a rank). */
static int table_loaded(plan_run *r, const plan_args *a)
{
    if (r->m.rank == 0)
        cli_report_table_problems(r->table);
    const char *tokens = a->list.speech_tokens;
    es_speech_token_stats st;
    if (tokens && r->m.rank == 0)
        return cli_set_speech_tokens(r->m.ctx, r->table, tokens);
    return tokens ? es_cost_table_set_speech_tokens(r->m.ctx, r->table, tokens, &st) : ES_OK;
}

/* The lists measured across the ranks (each its share); the table reaches the
 * ranks that build the plan (`builds`: every rank in reshard mode, rank 0 in
 * the others). Returns this rank's status (the measuring's is agreed already). */
static int measure_shared(plan_run *r, plan_args *a, int builds, const char *const *inputs,
                          size_t n_inputs)
{
    if (cli_mpi_agree(&r->m, cli_load_tokenizer(r->m.ctx, &a->measure)))
        return r->m.status;
    cli_progress progress;
    es_measure_job *job;
    int rc = cli_mpi_measure(&r->m, &a->measure, inputs, n_inputs,
                             a->plan.mode == ES_PLAN_RESHARD, a->list.quiet, &progress, &job);
    if (rc == ES_OK && builds)
        rc = es_measure_job_finish(r->m.ctx, job, &r->table);
    es_measure_job_free(job);
    return rc == ES_OK && builds ? table_loaded(r, a) : rc;
}

/* Returns this rank's status; the run's agreed failure, if any, is in r->m. */
static int run(plan_run *r, plan_args *a, const char *const *inputs, size_t n_inputs)
{
    if (!r->m.ctx) /* nothing to agree through: every rank says so */
        return cli_mpi_agree(&r->m, ES_ERR_NOMEM) ? r->m.status : ES_ERR_NOMEM;
    int reshard_mode = a->plan.mode == ES_PLAN_RESHARD;
    int builds = reshard_mode || r->m.rank == 0, rc = ES_OK;
    if (only_lists(inputs, n_inputs)) {
        rc = measure_shared(r, a, builds, inputs, n_inputs);
    } else if (builds) { /* a cost table among them: each loads them whole */
        rc = cli_measure_inputs(r->m.ctx, &a->measure, a->list.quiet || r->m.rank != 0, inputs,
                                n_inputs, &r->table);
        if (rc == ES_OK)
            rc = table_loaded(r, a);
    }
    if (rc == ES_OK && builds && a->plan.mode != ES_PLAN_SHARD) /* the write's line, rank 0 */
        plan_watch_write(a, &r->write_progress, a->list.quiet || r->m.rank != 0);
    if (rc == ES_OK && builds)
        rc = plan_from_table(r->m.ctx, a, r->m.rank == 0, r->table, &r->plan);
    if (cli_mpi_agree(&r->m, rc))
        return r->m.status;
    if (reshard_mode)
        return reshard(r, a, inputs, n_inputs);
    if (r->m.rank != 0)
        return ES_OK;
    es_outdir_remove_stale(a->outdir, plan_report_stale, NULL);
    cli_progress_restart(&r->write_progress);
    rc = es_plan_write(r->m.ctx, r->plan, a->outdir, inputs, n_inputs);
    cli_progress_end(&r->write_progress);
    return rc;
}

int plan_mpi(plan_args *a, const char *const *inputs, size_t n_inputs)
{
    plan_run r = {0};
    if (cli_mpi_init(&r.m) != 0)
        return cli_fail("MPI_Init failed", ES_ERR_INTERNAL);
    int rc = run(&r, a, inputs, n_inputs);
    int exit_code = EXIT_OK;
    if (r.m.rank == 0)
        exit_code = r.m.status != ES_OK ? cli_fail(r.m.msg, r.m.status)
                    : rc != ES_OK       ? cli_fail(es_errmsg(r.m.ctx), rc)
                                        : plan_report(r.plan, a);
    exit_code = cli_mpi_share_exit(exit_code);
    /* after the exchange: no rank writes into the folder when rank 0's free removes it */
    es_plan_writer_free(r.w);
    es_plan_free(r.plan);
    es_cost_table_free(r.table);
    cli_mpi_finish(&r.m);
    return exit_code;
}
