/* equishard plan --world-size K [--workers W] [--mode shard|batch|reshard] [cost/filter
 *                flags] [--seed S] [--epoch E] -o OUTDIR  COSTS.tsv[.zst] | LIST...
 * (under mpirun/srun: cmd_plan_mpi.c) */
#include <getopt.h> /* optind */
#include <sys/resource.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "cli_recipe.h"
#include "plan.h"

static const char intro[] =
    "usage: equishard plan --world-size K -o OUTDIR [OPTIONS] COSTS | LIST...\n"
    "\n"
    "Partitions the utterances so that every rank gets the same work and the same\n"
    "number of batches. Inputs are cost tables (equishard measure) or lists, which\n"
    "are measured on the fly. Writes OUTDIR/plan.json and the per-rank files.\n"
    "\n";

static const cli_option own[] = {
    CLI_OPT_UINT("world-size", 'k', 1, CLI_AT(plan_args, plan.world_size), "K",
        "ranks (GPUs); required"),
    CLI_OPT_UINT("workers", 'w', 1, CLI_AT(plan_args, plan.workers), "W",
        "data-loader workers per rank (default 1)"),
    {.name = "mode", .short_name = 'm', .kind = CLI_ENUM, .en = ES_ENUM_PLAN_MODE,
     CLI_AT(plan_args, plan.mode),
     .help = "shard: whole shards to ranks and workers (default)\n"
             "batch: utterances into batches, equal counts per rank\n"
             "reshard: rewrite tar shards or CosyVoice parquet files\n"
             "into K*W*M shards of equal cost and a new\n"
             "OUTDIR/data.list (parquet: also utt2data.list and\n"
             "spk2data.list, as make_parquet_list.py writes them)"},
    CLI_OPT_UINT("shards-per-worker", 0, 1, CLI_AT(plan_args, plan.shards_per_worker), "M",
        "reshard: M shards per rank and worker (default: about\n"
        "1000 utterances a shard)"),
    {.name = "compress", .kind = CLI_ENUM, .en = ES_ENUM_COMPRESS, CLI_AT(plan_args, plan.compress),
     .metavar = "none|gzip|zstd|snappy",
     .help = "reshard: the new shards' tar filter or\n"
             "parquet codec (default: none for tar, snappy for\n"
             "parquet; snappy is for parquet only)"},
    {.name = "expand-sources", .kind = CLI_FLAG, .ival = 1, CLI_AT(plan_args, expand_sources),
     .help = "reshard: decompress .tar.gz/.tar.zst sources once\n"
             "(under mpirun each process its share) into plain copies\n"
             "in OUTDIR's temporary folder, which every process\n"
             "reads instead (room for their uncompressed size there)"},
    {.name = "output", .short_name = 'o', .kind = CLI_STR, CLI_AT(plan_args, outdir),
     .metavar = "OUTDIR", .help = "where to write the plan (replaced atomically)"},
    CLI_OPT_UINT("max-frames-in-batch", 0, 1, CLI_AT(plan_args, plan.max_frames_in_batch), "N",
        "dynamic batching budget (default 2000)"),
    CLI_OPT_UINT("batch-size", 0, 1, CLI_AT(plan_args, plan.batch_size), "N",
        "static batches of N instead"),
    CLI_OPT_UINT("sort-size", 0, 1, CLI_AT(plan_args, plan.sort_size), "N",
        "the loader's sort buffer (default 500)"),
    {.name = "remainder", .kind = CLI_ENUM, .en = ES_ENUM_REMAINDER,
     CLI_AT(plan_args, plan.remainder),
     .help = "batch mode: pad (default), drop or carry the batches\n"
             "beyond a multiple of K"},
    {.name = "seed", .kind = CLI_UINT, CLI_AT(plan_args, plan.seed), .metavar = "S",
     .help = "step order in batch mode (default 0)"},
    {.name = "epoch", .kind = CLI_I64, CLI_AT(plan_args, plan.epoch), .metavar = "E",
     .help = "mixed into that order (default 0)"},
    {.name = "max-imbalance", .kind = CLI_NUM, CLI_AT(plan_args, max_imbalance), .metavar = "X",
     .help = "exit 1 when the plan's imbalance exceeds X (e.g. 0.01)"},
    {.name = "resume-from", .kind = CLI_STR, CLI_AT(plan_args, resume_from), .metavar = "OUTDIR",
     .help = "batch mode, no inputs: the rest of OUTDIR's plan of\n"
             "an epoch (--epoch, default plan.json's) after --step S\n"
             "steps, planned for --world-size and --workers (default\n"
             "OUTDIR's) with OUTDIR's other settings"},
    {.name = "step", .kind = CLI_UINT, CLI_AT(plan_args, resume_step), .metavar = "S",
     .help = "with --resume-from: the steps every rank trained\n"
             "(default 0: the whole epoch)"},
};

static int parse_args(int argc, char **argv, plan_args *a)
{
    const cli_table tables[] = {
        CLI_TABLE(NULL, own),
        CLI_SHARED(cli_cost_model_heading, cli_cost_model),
        CLI_SHARED(cli_filter_heading, cli_filter),
        CLI_SHARED(cli_measure_heading, cli_measure),
        CLI_SHARED(NULL, cli_tok),
        CLI_RECIPE_TABLE(NULL),
    };
    const cli_command cmd = {"plan", intro, NULL, tables, sizeof tables / sizeof tables[0]};
    es_plan_defaults(&a->plan);
    es_measure_defaults(&a->measure);
    a->outdir = NULL;
    a->max_imbalance = -1;
    a->expand_sources = 0;
    a->resume_from = NULL;
    a->resume_step = 0;
    a->list = (cli_list_opts){0};
    void *const targets[CLI_T_COUNT] = {a, &a->plan.model, &a->measure, &a->list, &cli_tokenizer};
    if (cli_recipe_load(&cmd, targets, argc, argv))
        return -1;
    if (cli_recipe.r) /* the recipe's settings first: every flag overrides them */
        es_recipe_settings(cli_recipe.r, &a->plan, NULL, NULL);
    /* --resume-from takes OUTDIR's workers and epoch unless given: marked unset */
    a->plan.workers = 0;
    a->plan.epoch = INT64_MIN;
    int rc = cli_options_parse(&cmd, targets, argc, argv);
    if (rc)
        return rc;
    if (cli_tokenizer_check("plan"))
        return -1;
    if (a->resume_from) {
        if (!a->plan.world_size || !a->outdir || optind < argc)
            return cli_usage_error(&cmd, "--resume-from OUTDIR takes --world-size and -o NEWDIR, "
                                         "and no inputs (OUTDIR's costs.tsv.zst is the table)");
        return 0;
    }
    if (!a->plan.workers)
        a->plan.workers = 1;
    if (a->plan.epoch == INT64_MIN)
        a->plan.epoch = 0;
    if (a->resume_step)
        return cli_usage_error(&cmd, "--step goes with --resume-from OUTDIR");
    if (!a->plan.world_size || !a->outdir || optind >= argc)
        return cli_usage_error(&cmd, "--world-size, -o OUTDIR and at least one input are "
                                     "required");
    a->plan.root = a->measure.root; /* reshard reads the shards the lists name */
    return cli_recipe_tokenizer("plan", (const char *const *)argv + optind, (size_t)(argc - optind));
}

/* Reshard keeps one file open per new shard it writes; with more shards than
 * the soft limit allows it writes them in passes. Raise the soft limit to the
 * hard one first (harmless for the other modes). */
static void raise_open_file_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* es_plan_write; with --expand-sources in reshard mode its stages, the
 * compressed sources decompressed once into plain copies every pass reads. */
static int write_plan(es_context *ctx, const es_plan *plan, const plan_args *a,
                      const char *const *inputs, size_t n_inputs)
{
    if (!a->expand_sources || a->plan.mode != ES_PLAN_RESHARD)
        return es_plan_write(ctx, plan, a->outdir, inputs, n_inputs);
    es_plan_reshard_info info;
    es_plan_writer *w = NULL;
    int rc = es_plan_reshard_info_get(plan, &info);
    if (rc == ES_OK)
        rc = es_plan_write_begin(ctx, plan, a->outdir, NULL, &w);
    if (rc == ES_OK)
        rc = es_plan_write_expand_sources(ctx, w, 0, 1);
    if (rc == ES_OK)
        rc = es_plan_write_use_copies(ctx, w);
    if (rc == ES_OK)
        rc = es_plan_write_shards(ctx, w, 0, info.shards);
    if (rc == ES_OK)
        rc = es_plan_write_finish(ctx, w, inputs, n_inputs);
    es_plan_writer_free(w);
    return rc;
}

int cmd_plan(int argc, char **argv)
{
    plan_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc > 0 ? EXIT_OK : EXIT_BAD_INPUT;
    if (a.resume_from)
        return cli_refuse_output_input("plan", a.outdir, &a.resume_from, 1) ? EXIT_BAD_INPUT
                                                                              : plan_resume(&a);
    if (a.plan.mode == ES_PLAN_RESHARD)
        raise_open_file_limit();
    const char *const *inputs = (const char *const *)argv + optind;
    size_t n_inputs = (size_t)(argc - optind);
    const char *const read[] = {a.list.speech_tokens, cli_tokenizer.path,
                                cli_tokenizer.symbol_table, cli_tokenizer.non_lang_syms};
    if (cli_refuse_output_input("plan", a.outdir, inputs, n_inputs) ||
        cli_refuse_output_input("plan", a.outdir, read, sizeof read / sizeof read[0]))
        return EXIT_BAD_INPUT;
#if HAVE_MPI
    if (cli_launched_by_mpi())
        return plan_mpi(&a, inputs, n_inputs);
#endif
    es_context *ctx = cli_context_new();
    if (!ctx)
        return cli_fail("out of memory", ES_ERR_NOMEM);
    es_cost_table *table = NULL;
    es_plan *plan = NULL;
    cli_progress progress; /* reshard's copy, batch mode's rank files */
    int watched = a.plan.mode != ES_PLAN_SHARD;
    if (watched) /* before the build: the plan keeps its settings' callback */
        plan_watch_write(&a, &progress, a.list.quiet);
    rc = plan_build(ctx, &a, a.list.quiet, 1, inputs, n_inputs, &table, &plan);
    if (rc == ES_OK) {
        es_outdir_remove_stale(a.outdir, plan_report_stale, NULL);
        if (watched)
            cli_progress_restart(&progress); /* rate and ETA from the write's start */
        rc = write_plan(ctx, plan, &a, inputs, n_inputs);
        if (watched)
            cli_progress_end(&progress);
    }
    int exit_code = rc == ES_OK ? plan_report(plan, &a) : cli_fail(es_errmsg(ctx), rc);
    es_plan_free(plan);
    es_cost_table_free(table);
    es_context_free(ctx);
    return exit_code;
}
