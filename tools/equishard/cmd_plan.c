/* equishard plan --world-size K [--workers W] [--mode shard|batch|reshard] [cost/filter
 *                flags] [--seed S] [--epoch E] -o OUTDIR  COSTS.tsv[.zst] | LIST... */
#include <getopt.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_model.h"

static const char usage_text[] =
    "usage: equishard plan --world-size K -o OUTDIR [OPTIONS] COSTS | LIST...\n"
    "\n"
    "Partitions the utterances so that every rank gets the same work and the same\n"
    "number of batches. Inputs are cost tables (equishard measure) or lists, which\n"
    "are measured on the fly. Writes OUTDIR/plan.json and the per-rank files.\n"
    "\n"
    "  -k, --world-size K        ranks (GPUs); required\n"
    "  -w, --workers W           data-loader workers per rank (default 1)\n"
    "  -m, --mode MODE           shard: whole shards to ranks and workers (default)\n"
    "                            batch: utterances into batches, equal counts per rank\n"
    "                            reshard: rewrite tar shards or CosyVoice parquet files\n"
    "                            into K*W*M shards of equal cost and a new\n"
    "                            OUTDIR/data.list (parquet: also utt2data.list and\n"
    "                            spk2data.list, as make_parquet_list.py writes them)\n"
    "      --shards-per-worker M reshard: M shards per rank and worker (default: about\n"
    "                            1000 utterances a shard)\n"
    "      --compress none|gzip|zstd|snappy  reshard: the new shards' tar filter or\n"
    "                            parquet codec (default: none for tar, snappy for\n"
    "                            parquet; snappy is for parquet only)\n"
    "  -o, --output OUTDIR       where to write the plan (replaced atomically)\n"
    "      --max-frames-in-batch N  dynamic batching budget (default 2000)\n"
    "      --batch-size N        static batches of N instead\n"
    "      --sort-size N         the loader's sort buffer (default 500)\n"
    "      --remainder POLICY    batch mode: pad (default), drop or carry the batches\n"
    "                            beyond a multiple of K\n"
    "      --seed S  --epoch E   step order in batch mode (default 0 0)\n"
    "      --max-imbalance X     exit 1 when the plan's imbalance exceeds X (e.g. 0.01)\n"
    "  -j, --threads N  -q, --quiet  (measuring list inputs; see below)\n"
    "  -h, --help\n";

enum { OPT_MAX_FRAMES = 1, OPT_BATCH_SIZE, OPT_SORT_SIZE, OPT_REMAINDER, OPT_SEED, OPT_EPOCH,
       OPT_MAX_IMBALANCE, OPT_SHARDS_PER_WORKER, OPT_COMPRESS };

typedef struct plan_args {
    es_plan_settings plan;
    es_measure_settings measure;
    const char *outdir;
    double max_imbalance; /* < 0: none */
    int quiet;
    const char *speech_tokens; /* --speech-tokens SRC, or NULL */
} plan_args;

/* The plan's own options; returns 0, or -1 after printing why. */
static int own_option(int c, const char *arg, plan_args *a)
{
    unsigned long long v;
    long long e;
    char *end;
    switch (c) {
    case 'k':
        if (cli_parse_u64(arg, &v) || v == 0 || v > UINT32_MAX)
            break;
        a->plan.world_size = (uint32_t)v;
        return 0;
    case 'w':
        if (cli_parse_u64(arg, &v) || v == 0 || v > UINT32_MAX)
            break;
        a->plan.workers = (uint32_t)v;
        return 0;
    case 'm':
        if (cli_parse_enum(ES_ENUM_PLAN_MODE, arg, &a->plan.mode))
            break;
        return 0;
    case 'o': a->outdir = arg; return 0;
    case OPT_MAX_FRAMES:
        if (cli_parse_u64(arg, &v) || v == 0)
            break;
        a->plan.max_frames_in_batch = v;
        return 0;
    case OPT_BATCH_SIZE:
        if (cli_parse_u64(arg, &v) || v == 0 || v > UINT32_MAX)
            break;
        a->plan.batch_size = (uint32_t)v;
        return 0;
    case OPT_SORT_SIZE:
        if (cli_parse_u64(arg, &v) || v == 0 || v > UINT32_MAX)
            break;
        a->plan.sort_size = (uint32_t)v;
        return 0;
    case OPT_REMAINDER:
        if (cli_parse_enum(ES_ENUM_REMAINDER, arg, &a->plan.remainder))
            break;
        return 0;
    case OPT_SEED:
        if (cli_parse_u64(arg, &v))
            break;
        a->plan.seed = v;
        return 0;
    case OPT_EPOCH:
        e = strtoll(arg, &end, 10);
        if (end == arg || *end)
            break;
        a->plan.epoch = e;
        return 0;
    case OPT_SHARDS_PER_WORKER:
        if (cli_parse_u64(arg, &v) || v == 0 || v > UINT32_MAX)
            break;
        a->plan.shards_per_worker = (uint32_t)v;
        return 0;
    case OPT_COMPRESS:
        if (cli_parse_enum(ES_ENUM_COMPRESS, arg, &a->plan.compress))
            break;
        return 0;
    case OPT_MAX_IMBALANCE:
        if (cli_parse_double(arg, &a->max_imbalance) || a->max_imbalance < 0)
            break;
        return 0;
    default:
        fputs(usage_text, stderr);
        return -1;
    }
    fprintf(stderr, "equishard plan: bad value '%s' for -%c/--%s\n", arg, c < 256 ? c : '-',
            c == 'k' ? "world-size" : c == 'w' ? "workers" : c == 'm' ? "mode (shard|batch|reshard)" : "option");
    return -1;
}

static int parse_args(int argc, char **argv, plan_args *a)
{
    static const struct option own[] = {
        {"world-size", required_argument, NULL, 'k'}, {"workers", required_argument, NULL, 'w'},
        {"mode", required_argument, NULL, 'm'},       {"output", required_argument, NULL, 'o'},
        {"max-frames-in-batch", required_argument, NULL, OPT_MAX_FRAMES},
        {"batch-size", required_argument, NULL, OPT_BATCH_SIZE},
        {"sort-size", required_argument, NULL, OPT_SORT_SIZE},
        {"remainder", required_argument, NULL, OPT_REMAINDER},
        {"seed", required_argument, NULL, OPT_SEED}, {"epoch", required_argument, NULL, OPT_EPOCH},
        {"max-imbalance", required_argument, NULL, OPT_MAX_IMBALANCE},
        {"shards-per-worker", required_argument, NULL, OPT_SHARDS_PER_WORKER},
        {"compress", required_argument, NULL, OPT_COMPRESS},
        {"help", no_argument, NULL, 'h'},
    };
    struct option *opts = cli_join_options(own, sizeof own / sizeof own[0], 1, 1);
    if (!opts)
        return -1;
    es_plan_defaults(&a->plan);
    es_measure_defaults(&a->measure);
    a->outdir = NULL;
    a->max_imbalance = -1;
    a->quiet = 0;
    a->speech_tokens = NULL;
    int c, rc = 0;
    optind = 1;
    while (rc == 0 && (c = getopt_long(argc, argv, "k:w:m:o:hj:q", opts, NULL)) != -1) {
        c = c == 'j' ? CLI_OPT_THREADS : c == 'q' ? CLI_OPT_QUIET : c;
        if (c == 'h') {
            printf("%s\n%s%s", usage_text, cli_model_usage, cli_measure_usage);
            rc = 1;
            break;
        }
        int used = cli_model_option(c, optarg, &a->plan.model, "plan");
        if (!used)
            used = cli_measure_option(c, optarg, &a->measure, &a->quiet, &a->speech_tokens, "plan");
        if (used < 0 || (!used && own_option(c, optarg, a)))
            rc = -1;
    }
    free(opts);
    if (rc)
        return rc;
    if (cli_tokenizer_check("plan"))
        return -1;
    if (!a->plan.world_size || !a->outdir || optind >= argc) {
        fprintf(stderr, "equishard plan: --world-size, -o OUTDIR and at least one input are "
                        "required\n%s", usage_text);
        return -1;
    }
    a->plan.root = a->measure.root; /* reshard reads the shards the lists name */
    return 0;
}

static void print_summary(const es_plan *p, const es_plan_settings *s, const char *outdir)
{
    es_plan_metrics m;
    es_plan_get_metrics(p, &m);
    printf("%s mode: %u ranks x %u workers, %llu utterances planned, %llu filtered\n",
           es_enum_name(ES_ENUM_PLAN_MODE, s->mode),
           s->world_size, s->workers,
           (unsigned long long)m.kept, (unsigned long long)m.filtered);
    if (*es_plan_token_note(p))
        printf("note: %s\n", es_plan_token_note(p));
    printf("%6s %14s %11s %12s %8s\n", "rank", "cost", "utterances", "frames", "batches");
    uint32_t shown = s->world_size <= 16 ? s->world_size : 16;
    for (uint32_t r = 0; r < shown; r++) {
        es_plan_load l;
        es_plan_rank_load(p, r, &l);
        printf("%6u %14.1f %11llu %12llu %8llu\n", r, l.cost, (unsigned long long)l.utterances,
               (unsigned long long)l.frames, (unsigned long long)l.batches);
    }
    if (shown < s->world_size)
        printf("   ... %u more ranks in %s/plan.json\n", s->world_size - shown, outdir);
    printf("imbalance %.4f%%, gap to lower bound %.4f%%, batch spread %llu, retention %.2f%%",
           100 * m.imbalance, 100 * m.lower_bound_gap, (unsigned long long)m.batch_spread,
           100 * m.retention);
    if (s->mode == ES_PLAN_BATCH)
        printf(", step straggler %.4f, %llu %s remainder batch(es)", m.step_straggler,
               (unsigned long long)m.remainder_batches,
               s->remainder == ES_REMAINDER_PAD ? "padded" : s->remainder == ES_REMAINDER_DROP ? "dropped" : "carried");
    es_plan_reshard_info ri;
    if (es_plan_reshard_info_get(p, &ri) == ES_OK)
        printf("\n%u shards (%u a worker), cost %.1f .. %.1f (max deviation %.4f%%); worst "
               "rank/worker deviation over %u loader permutations %.4f%%",
               ri.shards, ri.shards_per_worker, ri.shard_cost_min, ri.shard_cost_max,
               100 * ri.shard_max_deviation, ri.permutations, 100 * ri.permutation_max_deviation);
    printf(" [%s]\nwrote %s\n", m.method, outdir);
}

/* Reshard keeps one file open per new shard it writes; with more shards than
 * the soft limit allows it writes them in passes. Raise the soft limit to the
 * hard one first (harmless for the other modes). */
/* A temporary folder an interrupted run left beside OUTDIR, now removed. */
static void report_stale(void *user, const char *path, long pid)
{
    (void)user;
    fprintf(stderr, "equishard: removed %s, left by an interrupted run (pid %ld)\n", path, pid);
}

static void raise_open_file_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int cmd_plan(int argc, char **argv)
{
    plan_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc > 0 ? EXIT_OK : EXIT_BAD_INPUT;
    if (a.plan.mode == ES_PLAN_RESHARD)
        raise_open_file_limit();
    es_context *ctx = es_context_new();
    if (!ctx)
        return cli_fail("out of memory", ES_ERR_NOMEM);
    const char *const *inputs = (const char *const *)argv + optind;
    size_t n_inputs = (size_t)(argc - optind);
    es_cost_table *table = NULL;
    es_plan *plan = NULL;
    rc = cli_load_inputs(ctx, &a.measure, a.quiet, a.speech_tokens, inputs, n_inputs, &table);
    a.plan.tokenizer = a.measure.tokenizer;
    if (rc == ES_OK)
        rc = es_plan_build(ctx, &a.plan, table, &plan);
    if (rc == ES_OK) {
        es_outdir_remove_stale(a.outdir, report_stale, NULL);
        rc = es_plan_write(ctx, plan, a.outdir, inputs, n_inputs);
    }
    int exit_code = rc == ES_OK ? EXIT_OK : cli_fail(es_errmsg(ctx), rc);
    if (rc == ES_OK) {
        print_summary(plan, &a.plan, a.outdir);
        es_plan_metrics m;
        es_plan_get_metrics(plan, &m);
        if (a.max_imbalance >= 0 && m.imbalance > a.max_imbalance) {
            fprintf(stderr, "equishard: plan imbalance %.4f%% exceeds --max-imbalance %.4f%%\n",
                    100 * m.imbalance, 100 * a.max_imbalance);
            exit_code = EXIT_PROBLEMS;
        }
    }
    es_plan_free(plan);
    es_cost_table_free(table);
    es_context_free(ctx);
    return exit_code;
}
