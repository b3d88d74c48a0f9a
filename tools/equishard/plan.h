/* `equishard plan`, shared by the one-process command (cmd_plan.c) and its MPI
 * form (cmd_plan_mpi.c, built when meson finds MPI): the build (plan_build.c) and
 * the report (plan_report.c) both forms call. */
#ifndef ES_CLI_PLAN_H
#define ES_CLI_PLAN_H

#include "cli_model.h"

typedef struct plan_args {
    es_plan_settings plan;
    es_measure_settings measure;
    const char *outdir;
    double max_imbalance; /* < 0: none */
    cli_list_opts list;   /* --quiet, --speech-tokens */
    int expand_sources;   /* --expand-sources (reshard: es_plan_write_expand_sources) */
    const char *resume_from; /* --resume-from OUTDIR: plan_resume.c; NULL: none */
    uint64_t resume_step;    /* --step S */
} plan_args;

/* Loads the inputs (cost tables, or lists measured on the fly; `quiet` keeps
 * their warnings and progress off stderr) and builds the plan. `writes`: this
 * process writes OUTDIR afterwards (batch mode then has the table compressed
 * for costs.tsv.zst while the plan is built). */
int plan_build(es_context *ctx, plan_args *a, int quiet, int writes, const char *const *inputs,
               size_t n_inputs, es_cost_table **table, es_plan **plan);

/* plan_build's second half, for a table already loaded (the MPI form measures
 * lists across its ranks first): records the tokenizer, starts batch mode's
 * compression when `writes`, builds the plan (with its progress line when
 * `writes`, stderr a terminal and not --quiet). */
int plan_from_table(es_context *ctx, plan_args *a, int writes, es_cost_table *table,
                    es_plan **plan);

/* Reshard: the settings' progress callback paints p's line "reshard: D / T
 * shards" (source shards read per pass, new shards written and read back)
 * while es_plan_write(_shards) runs; batch mode: "write: D / T rows" (the rank
 * files' batch rows). Set before es_plan_build (the plan keeps the settings);
 * p must outlive the plan. */
void plan_watch_write(plan_args *a, cli_progress *p, int quiet);

/* After OUTDIR is written: the summary on stdout, and the exit code
 * (EXIT_PROBLEMS when the imbalance exceeds --max-imbalance). */
int plan_report(const es_plan *p, const plan_args *a);

/* es_outdir_remove_stale's report: one line on stderr per folder removed. */
void plan_report_stale(void *user, const char *path, long pid);

/* The MPI form: every rank builds the same plan; reshard writes each rank's
 * share of the new shards into one OUTDIR, which rank 0 completes and puts in
 * place; other modes are written by rank 0. Returns the same exit code on
 * every rank. */
int plan_mpi(plan_args *a, const char *const *inputs, size_t n_inputs);

/* --resume-from OUTDIR: the rest of OUTDIR's batch plan of an epoch after
 * --step S steps, planned for --world-size/--workers and written to -o NEWDIR
 * (plan_resume.c). Returns the exit code. */
int plan_resume(plan_args *a);

#endif
