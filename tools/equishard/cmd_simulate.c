/* equishard simulate --loader cosyvoice|wenet --world-size K [--workers W]
 *                    [--epochs A:B] [filter/batch flags] [--trials T] [--seed S]
 *                    [--json] [-o FILE]  COSTS | LIST...
 * equishard simulate --loader L --plan OUTDIR [flags] [COSTS | LIST...] */
#include <getopt.h>
#include <jansson.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_model.h"
#include "cli_recipe.h"
#include "report_html.h"
#include "report_plan.h"

static const char intro[] =
    "usage: equishard simulate --loader cosyvoice|wenet --world-size K [OPTIONS] COSTS | LIST...\n"
    "       equishard simulate --loader cosyvoice|wenet --plan OUTDIR [OPTIONS] [COSTS | LIST...]\n"
    "\n"
    "Replays the training loader's own split of the list (per epoch, per rank and\n"
    "worker), its filter, shuffle and sort buffers and batching, and predicts each\n"
    "rank's batches, the join cut (every rank trains as many batches as the rank\n"
    "with the fewest) and the data the cut skips; next to it, what `equishard plan`\n"
    "gives for the same data. Inputs are cost tables or lists (measured on the fly).\n"
    "\n";

static const char outro[] =
    "wenet's defaults also set --frame-rate 100 and --min-length 0 (its fbank and\n"
    "recipes); flags given override them.\n";

enum { PLAN_NONE = -1 }; /* sim_args.plan_mode without --plan */

typedef struct sim_args {
    es_simulate_settings sim;
    es_measure_settings measure;
    const char *output;
    const char *html, *validate; /* --html FILE, --validate JSON */
    cli_list_opts list;        /* --quiet, --speech-tokens */
    const char *plan;          /* --plan OUTDIR, or NULL */
    int plan_mode;             /* its es_plan_mode, or PLAN_NONE */
    int json, have_loader;
} sim_args;

/* --epochs "A:B" (inclusive) or "E". */
static int parse_epochs(const cli_option *o, const char *arg, void *field, const char *command)
{
    (void)o, (void)command;
    es_simulate_settings *s = field;
    char buf[64];
    if (strlen(arg) >= sizeof buf)
        return -1;
    strcpy(buf, arg);
    char *colon = strchr(buf, ':');
    if (colon)
        *colon = '\0';
    if (cli_parse_i64(buf, &s->epoch_first))
        return -1;
    s->epoch_last = s->epoch_first;
    if (colon && cli_parse_i64(colon + 1, &s->epoch_last))
        return -1;
    return s->epoch_first <= s->epoch_last ? 0 : -1;
}

/* --loader: the recipe, and that one was given. */
static int parse_loader(const cli_option *o, const char *arg, void *field, const char *command)
{
    (void)o, (void)command;
    sim_args *a = field;
    if (cli_parse_enum(ES_ENUM_LOADER, arg, &a->sim.loader))
        return -1;
    a->have_loader = 1;
    return 0;
}

static const cli_option own[] = {
    {.name = "loader", .short_name = 'l', .kind = CLI_CUSTOM, .has_arg = 1, .fn = parse_loader,
     .offset = 0, .metavar = "cosyvoice|wenet", .want = "cosyvoice or wenet",
     .help = "cosyvoice: random.Random(epoch).shuffle, [rank::K],\n"
             "[worker::W] (cosyvoice/dataset/dataset.py)\n"
             "wenet: entry i to worker w of rank r when\n"
             "i % (K*W) == w*K + r (list_shuffle off)"},
    CLI_OPT_UINT("world-size", 'k', 1, CLI_AT(sim_args, sim.world_size), "K",
        "ranks (GPUs); required"),
    {.name = "workers", .short_name = 'w', .kind = CLI_UINT, .zero_is_one = 1,
     CLI_AT(sim_args, sim.workers), .metavar = "W",
     .help = "DataLoader num_workers per rank (default 1; 0 acts as 1)"},
    {.name = "epochs", .short_name = 'e', .kind = CLI_CUSTOM, .has_arg = 1, .fn = parse_epochs,
     CLI_AT(sim_args, sim), .metavar = "A:B", .want = "A:B with A <= B, or one epoch",
     .help = "epochs replayed, inclusive (default 0:0; E alone = E:E;\n"
             "the trainers call set_epoch(0), (1), ...)"},
    CLI_OPT_UINT("max-frames-in-batch", 0, 1, CLI_AT(sim_args, sim.max_frames_in_batch), "N",
        "dynamic batching budget (cosyvoice 2000, wenet 12000)"),
    CLI_OPT_UINT("batch-size", 0, 1, CLI_AT(sim_args, sim.batch_size), "N",
        "static batches of N instead"),
    CLI_OPT_UINT("shuffle-size", 0, 0, CLI_AT(sim_args, sim.shuffle_size), "N",
        "sample shuffle buffer (cosyvoice 1000, wenet 1500; 0 = off)"),
    CLI_OPT_UINT("sort-size", 0, 0, CLI_AT(sim_args, sim.sort_size), "N",
        "sort buffer (default 500; 0 = off)"),
    CLI_OPT_FLAG("no-list-shuffle", 0, 0, CLI_AT(sim_args, sim.list_shuffle),
        "cosyvoice: DataList(shuffle=False)"),
    CLI_OPT_FLAG("no-partition", 0, 0, CLI_AT(sim_args, sim.partition),
        "every rank reads the whole list (partition=False)"),
    CLI_OPT_UINT("trials", 't', 1, CLI_AT(sim_args, sim.trials), "T",
        "draws of the unseeded shuffle buffer (default 8)"),
    CLI_OPT_UINT("seed", 's', 0, CLI_AT(sim_args, sim.seed), "S",
        "seeds those draws (default 0; same seed, same output)"),
    {.name = "json", .kind = CLI_FLAG, .ival = 1, CLI_AT(sim_args, json),
     .help = "print JSON instead of the table (a switch, no FILE:\n"
             "-o FILE writes the JSON to a file)"},
    {.name = "output", .short_name = 'o', .kind = CLI_STR, CLI_AT(sim_args, output),
     .metavar = "FILE", .help = "also write the JSON to FILE (atomically)"},
    {.name = "html", .kind = CLI_STR, CLI_AT(sim_args, html), .metavar = "FILE",
     .help = "also write the HTML report: the split against the plan per\n"
             "epoch, cost per rank, lengths, tokens (docs/REPORT.md)"},
    {.name = "validate", .kind = CLI_STR, CLI_AT(sim_args, validate), .metavar = "JSON",
     .help = "--html: also show the findings `equishard validate --json`\n"
             "wrote"},
    CLI_OPT_FLAG("no-plan", 0, 0, CLI_AT(sim_args, sim.plan_side),
        "leave out the plan side by side"),
    {.name = "plan", .short_name = 'p', .kind = CLI_STR, CLI_AT(sim_args, plan),
     .metavar = "OUTDIR",
     .help = "replay the plan `equishard plan -o OUTDIR` wrote, as the job\n"
             "that trains on it reads it: its ranks, workers, filter and\n"
             "batching (flags given override them); shard mode: each\n"
             "rank's and worker's rank-R.worker-W.list, as\n"
             "equishard.loaders feed them (inputs: the data planned;\n"
             "default plan.json's inputs); reshard: the recipe's own\n"
             "split of OUTDIR/data.list (the default input); batch:\n"
             "equal steps by construction, nothing to replay"},
};

/* --plan: plan.json's settings over the loader's defaults, before any flag. */
static int apply_plan(sim_args *a)
{
    es_context *ctx = cli_context_new();
    if (!ctx)
        return cli_fail("out of memory", ES_ERR_NOMEM), -1;
    es_plan_mode mode = ES_PLAN_SHARD;
    int rc = es_simulate_settings_from_plan(ctx, &a->sim, a->plan, &mode);
    if (rc != ES_OK)
        cli_fail(es_errmsg(ctx), rc);
    es_context_free(ctx);
    a->plan_mode = (int)mode;
    a->sim.plan_side = 0; /* the plan is the one replayed, not planned again */
    return rc == ES_OK ? 0 : -1;
}

static void targets_of(sim_args *a, void *t[CLI_T_COUNT])
{
    t[CLI_T_CMD] = a, t[CLI_T_MODEL] = &a->sim.model, t[CLI_T_MEASURE] = &a->measure;
    t[CLI_T_LIST] = &a->list, t[CLI_T_TOKENIZER] = &cli_tokenizer;
}

/* First pass: only --loader, --plan (and --help, --version), since the loader
 * chooses the defaults, and a plan its settings, that every other flag
 * overrides. Returns CLI_ASKED_HELP or CLI_ASKED_VERSION, -1 for a plan that
 * cannot be read, 0 otherwise. */
static int prescan(const cli_command *cmd, int argc, char **argv, sim_args *a)
{
    static const char *const first[] = {"loader", "plan", NULL};
    sim_args pre = {0};
    pre.sim.loader = ES_LOADER_COSYVOICE;
    void *t[CLI_T_COUNT];
    targets_of(&pre, t);
    int asked = cli_options_prescan(cmd, t, argc, argv, first);
    if (!asked && cli_recipe_load(cmd, t, argc, argv))
        return -1;
    if (cli_recipe_refuse_loader(pre.have_loader, pre.sim.loader))
        return -1;
    if (cli_recipe.r) { /* the recipe names its loader */
        pre.sim.loader = cli_recipe.info.loader;
        pre.have_loader = 1;
    }
    es_simulate_defaults(&a->sim, pre.sim.loader);
    a->have_loader = pre.have_loader;
    a->plan = pre.plan;
    a->plan_mode = PLAN_NONE;
    if (asked)
        return asked;
    if (a->plan && a->have_loader && apply_plan(a))
        return -1;
    /* the training recipe over the plan's settings: the replay is of the
     * training; the flags still override both */
    if (cli_recipe.r)
        es_recipe_settings(cli_recipe.r, NULL, &a->sim, NULL);
    return 0;
}

static int parse_args(int argc, char **argv, sim_args *a)
{
    const cli_table tables[] = {
        CLI_TABLE(NULL, own),
        CLI_SHARED(cli_cost_model_heading, cli_cost_model),
        CLI_SHARED(cli_filter_heading, cli_filter),
        CLI_SHARED(cli_measure_heading, cli_measure),
        CLI_SHARED(NULL, cli_tok),
        CLI_RECIPE_TABLE(NULL),
    };
    const cli_command cmd = {"simulate", intro, outro, tables, sizeof tables / sizeof tables[0]};
    memset(a, 0, sizeof *a);
    es_measure_defaults(&a->measure);
    int rc = prescan(&cmd, argc, argv, a);
    if (rc == CLI_ASKED_HELP)
        cli_options_usage(&cmd, stdout);
    else if (rc == CLI_ASKED_VERSION)
        cli_print_version();
    if (rc)
        return rc > 0 ? 1 : rc;
    void *t[CLI_T_COUNT];
    targets_of(a, t);
    rc = cli_options_parse(&cmd, t, argc, argv);
    if (rc)
        return rc;
    if (cli_tokenizer_check("simulate"))
        return -1;
    if (!a->have_loader || !a->sim.world_size || (optind >= argc && !a->plan))
        return cli_usage_error(&cmd, "--loader (or --recipe), --world-size (or --plan) and at "
                                     "least one input are required");
    return cli_recipe_tokenizer("simulate", (const char *const *)argv + optind,
                                (size_t)(argc - optind));
}

/* ---- the readable table ------------------------------------------------------- */

/* Audio duration as h:mm:ss. */
static const char *hms(double seconds, char *buf, size_t len)
{
    unsigned long long s = (unsigned long long)(seconds + 0.5);
    snprintf(buf, len, "%llu:%02llu:%02llu", s / 3600, s / 60 % 60, s % 60);
    return buf;
}

static void print_header(const es_simulate_settings *s, const es_simulate_result *r)
{
    es_simulate_input in;
    char b1[32];
    es_simulate_input_info(r, &in);
    printf("simulate: %s loader, %u rank(s) x %u worker(s), epoch(s) %" PRId64 "..%" PRId64 "\n",
           es_enum_name(ES_ENUM_LOADER, s->loader), s->world_size, s->workers, s->epoch_first, s->epoch_last);
    if (s->plan_dir)
        printf("  split: the shard plan %s (each rank's and worker's own list, as "
               "equishard.loaders feed them)\n", s->plan_dir);
    printf("  list: %zu entries, %llu utterances, %llu kept (%llu frames, %s)",
           in.entries, (unsigned long long)in.utterances, (unsigned long long)in.kept,
           (unsigned long long)in.frames, hms(in.seconds, b1, sizeof b1));
    const char *sep = "; filtered: ";
    for (size_t why = 1; why < es_enum_size(ES_ENUM_FILTER_REASON); why++) {
        uint64_t n = in.filtered[why];
        if (n) {
            printf("%s%s %llu", sep, es_enum_name(ES_ENUM_FILTER_REASON, (int)why), (unsigned long long)n);
            sep = ", ";
        }
    }
    if (*in.token_note)
        printf("\n  note: %s", in.token_note);
    printf("\n  batching: ");
    if (s->batch_size)
        printf("static, %u per batch", s->batch_size);
    else
        printf("dynamic, <= %llu frames at %g frames/s",
               (unsigned long long)s->max_frames_in_batch, s->model.frame_rate);
    printf("; shuffle buffer %u, sort buffer %u", s->shuffle_size, s->sort_size);
    if (s->shuffle_size > 1)
        printf(" (expected over %u trials, seed %llu)", s->trials, (unsigned long long)s->seed);
    printf("\n");
}

static void print_epoch(const es_simulate_settings *s, const es_simulate_result *r, size_t e)
{
    es_simulate_epoch ep;
    char b1[32], b2[48], b3[32];
    es_simulate_epoch_info(r, e, &ep);
    printf("\nepoch %" PRId64 ": join cut %.2f batches per rank, retention %.2f%%; the cut skips "
           "%.2f batches, %.1f utterances, %s of audio\n",
           ep.epoch, ep.min_batches, 100 * ep.retention, ep.skipped_batches,
           ep.skipped_utterances, hms(ep.skipped_seconds, b1, sizeof b1));
    printf("%6s %8s %11s %10s %9s %9s %13s %8s %9s %9s\n", "rank", "entries", "utterances",
           "frames", "audio", "batches", "(min..max)", "sd", "trained", "skipped");
    uint32_t shown = s->world_size <= 32 ? s->world_size : 32;
    for (uint32_t k = 0; k < shown; k++) {
        es_simulate_rank rk;
        es_simulate_rank_info(r, e, k, -1, &rk);
        snprintf(b2, sizeof b2, "(%llu..%llu)", (unsigned long long)rk.batches_min,
                 (unsigned long long)rk.batches_max);
        printf("%6u %8zu %11llu %10llu %9s %9.2f %13s %8.2f %9.2f %9s\n", k, rk.n_shards,
               (unsigned long long)rk.utterances, (unsigned long long)rk.frames,
               hms(rk.seconds, b1, sizeof b1), rk.batches, b2, rk.batches_stddev,
               rk.trained_batches, hms(rk.skipped_seconds, b3, sizeof b3));
    }
    if (shown < s->world_size)
        printf("   ... %u more ranks (--json has them all)\n", s->world_size - shown);
    es_simulate_step_time st;
    if (s->model.source && es_simulate_step_time_info(r, e, &st, NULL) == ES_OK)
        printf("  predicted step time (%s): straggler %.3f (max/mean over ranks per step), "
               "epoch %.1f s where balanced steps would take %.1f s\n",
               s->model.source, st.straggler, st.epoch_seconds, st.ideal_seconds);
    if (ep.empty_first_batches)
        printf("  warning: in %llu (trial, worker) stream(s) the first sample alone exceeds "
               "--max-frames-in-batch: CosyVoice yields an empty batch there, which fails in "
               "padding()\n",
               (unsigned long long)ep.empty_first_batches);
}

static void print_plan_side(const es_simulate_settings *s, const es_simulate_result *r)
{
    es_simulate_epoch ep;
    es_simulate_epoch_info(r, 0, &ep);
    printf("\nside by side, same data (epoch %" PRId64 "):\n", ep.epoch);
    printf("  %-28s %12s %10s %10s\n", "", "min batches", "retention", "total");
    printf("  %-28s %12.2f %9.2f%% %10.2f\n", es_enum_name(ES_ENUM_LOADER, s->loader), ep.min_batches,
           100 * ep.retention, ep.total_batches);
    es_simulate_plan p;
    for (size_t i = 0; es_simulate_plan_info(r, i, &p) == ES_OK; i++) {
        char label[40];
        snprintf(label, sizeof label, "equishard plan --mode %s", p.mode);
        if (!p.available) {
            printf("  %-28s not available: %s\n", label, p.error);
            continue;
        }
        uint64_t lo = UINT64_MAX;
        for (uint32_t k = 0; k < s->world_size; k++) {
            es_plan_load l;
            if (es_simulate_plan_rank(r, i, k, &l) == ES_OK && l.batches < lo)
                lo = l.batches;
        }
        printf("  %-28s %12llu %9.2f%% %10llu\n", label, (unsigned long long)lo,
               100 * p.metrics.retention, (unsigned long long)p.metrics.total_batches);
    }
}

static void print_table(const es_simulate_settings *s, const es_simulate_result *r)
{
    print_header(s, r);
    for (size_t e = 0; e < es_simulate_epoch_count(r); e++)
        print_epoch(s, r, e);
    if (s->plan_side)
        print_plan_side(s, r);
}

/* ---- --plan OUTDIR ------------------------------------------------------------- */

/* --plan's OUTDIR through the one reader of plan.json, or NULL after its line. */
static es_plan_dir *open_plan(const sim_args *a)
{
    es_context *ctx = cli_context_new();
    es_plan_dir *d = NULL;
    if (!ctx)
        cli_error("out of memory");
    else if (es_plan_dir_open(ctx, a->plan, &d) != ES_OK)
        cli_error("%s", es_errmsg(ctx));
    es_context_free(ctx);
    return d;
}

/* A batch plan: every rank trains plan.json's `steps` each epoch by construction. */
static int report_batch_plan(const sim_args *a)
{
    es_plan_dir *d = open_plan(a);
    if (!d)
        return EXIT_BAD_INPUT;
    es_plan_metrics m;
    es_plan_dir_metrics(d, &m);
    printf("%s: a batch plan: every rank trains %llu step(s) each epoch, by construction "
           "(equishard.loaders feed its batches); nothing to replay\n", a->plan,
           (unsigned long long)m.steps);
    es_plan_dir_free(d);
    return EXIT_OK;
}

/* The inputs of a --plan run when none are given: a reshard plan's
 * OUTDIR/data.list (what its recipe trains on); a shard plan's plan.json
 * "inputs" (the data it was planned from, paths as given to plan). Returns
 * a malloc'd array of n strings, one free()'s worth (a shard plan's live in *keep), or
 * NULL after printing why. */
static const char **plan_inputs(const sim_args *a, es_plan_dir **keep, size_t *n)
{
    *n = 0;
    if (a->plan_mode == ES_PLAN_RESHARD) { /* one block: the pointer, then the path */
        size_t len = strlen(a->plan) + sizeof "/data.list";
        const char **one = malloc(sizeof *one + len);
        if (!one)
            return cli_fail("out of memory", ES_ERR_NOMEM), NULL;
        char *path = (char *)(one + 1);
        snprintf(path, len, "%s/data.list", a->plan);
        one[0] = path;
        *n = 1;
        return one;
    }
    if (!(*keep = open_plan(a)))
        return NULL;
    es_plan_dir_info info;
    es_plan_dir_get_info(*keep, &info);
    const char *path = info.plan_json;
    const char **out = malloc(sizeof *out * (info.n_inputs + 1));
    if (!out)
        return cli_fail("out of memory", ES_ERR_NOMEM), NULL;
    for (size_t i = 0; i < info.n_inputs; i++) {
        const char *p = es_plan_dir_input(*keep, i, NULL);
        if (!p || access(p, R_OK) != 0) {
            fprintf(stderr, "equishard simulate: %s: planned input %s is not readable from here: "
                            "give the cost table or lists the plan was made from\n",
                    path, p ? p : "(none)");
            free(out);
            return NULL;
        }
        out[(*n)++] = p;
    }
    if (*n == 0) {
        fprintf(stderr, "equishard simulate: %s names no inputs: give the data it was planned "
                        "from\n", path);
        free(out);
        return NULL;
    }
    return out;
}

/* --html FILE: the report of this run (report_html.c), with plan.json's cost
 * per rank under --plan. Returns 0, or -1 after one line on stderr. */
static int write_html(es_context *ctx, const sim_args *a, const es_cost_table *table,
                      const es_simulate_result *result)
{
    json_t *sim = NULL, *val = NULL, *plan = NULL;
    int rc = report_sim_json(ctx, result, &sim);
    if (rc != ES_OK && *es_errmsg(ctx))
        cli_error("%s", es_errmsg(ctx));
    if (rc == ES_OK && a->validate && !(val = report_load_json(a->validate)))
        rc = ES_ERR_FORMAT;
    es_plan_dir *d = NULL;
    if (rc == ES_OK && a->plan && !(d = open_plan(a)))
        rc = ES_ERR_FORMAT;
    if (rc == ES_OK && d && !(plan = report_plan_view(d)))
        rc = cli_write_error(ctx, ES_ERR_NOMEM, a->html);
    es_plan_dir_free(d);
    if (rc == ES_OK) {
        char source[4200];
        snprintf(source, sizeof source, "equishard simulate: the %s loader, %u rank(s) x %u "
                 "worker(s), epochs %" PRId64 " to %" PRId64 "%s%s",
                 es_enum_name(ES_ENUM_LOADER, a->sim.loader), a->sim.world_size, a->sim.workers,
                 a->sim.epoch_first, a->sim.epoch_last, a->plan ? "; replaying the plan " : "",
                 a->plan ? a->plan : "");
        report_html_in in = {.title = "equishard simulate report", .source = source,
                             .plan = plan, .sim = sim, .table = table, .validate = val};
        rc = cli_write_error(ctx, report_html_write(ctx, a->html, &in), a->html);
    }
    json_decref(sim);
    json_decref(val);
    json_decref(plan);
    return rc == ES_OK ? 0 : -1;
}

int cmd_simulate(int argc, char **argv)
{
    sim_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc > 0 ? EXIT_OK : EXIT_BAD_INPUT;
    char plan_json_path[4096];
    snprintf(plan_json_path, sizeof plan_json_path, "%s/plan.json", a.plan ? a.plan : "");
    const char *const read[] = {a.list.speech_tokens, cli_tokenizer.path,
                                cli_tokenizer.symbol_table, cli_tokenizer.non_lang_syms,
                                a.plan ? plan_json_path : NULL, a.validate};
    if (cli_refuse_output_input("simulate", a.output, (const char *const *)argv + optind,
                                (size_t)(argc - optind)) ||
        cli_refuse_output_input("simulate", a.output, read, sizeof read / sizeof read[0]) ||
        cli_refuse_output_input("simulate", a.html, (const char *const *)argv + optind,
                                (size_t)(argc - optind)) ||
        cli_refuse_output_input("simulate", a.html, read, sizeof read / sizeof read[0]))
        return EXIT_BAD_INPUT;
    if (a.plan_mode == ES_PLAN_BATCH && a.html) {
        cli_error("--html: %s is a batch plan, nothing to replay: 'equishard report %s --html "
                  "%s' draws it", a.plan, a.plan, a.html);
        return EXIT_BAD_INPUT;
    }
    if (a.plan_mode == ES_PLAN_BATCH)
        return report_batch_plan(&a);
    const char **inputs = (const char **)argv + optind;
    size_t n_inputs = (size_t)(argc - optind);
    es_plan_dir *planned = NULL;
    const char **planned_inputs = NULL;
    if (a.plan && n_inputs == 0) {
        if (!(planned_inputs = plan_inputs(&a, &planned, &n_inputs))) {
            es_plan_dir_free(planned);
            return EXIT_BAD_INPUT;
        }
        inputs = planned_inputs;
    }
    es_context *ctx = cli_context_new();
    if (!ctx)
        return cli_fail("out of memory", ES_ERR_NOMEM);
    es_cost_table *table = NULL;
    es_simulate_result *result = NULL;
    rc = cli_load_inputs(ctx, &a.measure, a.list.quiet, a.list.speech_tokens, inputs, n_inputs,
                         &table);
    if (rc == ES_OK)
        rc = es_simulate(ctx, &a.sim, table, &result);
    if (rc == ES_OK && a.output)
        rc = es_simulate_write_json(ctx, result, a.output);
    if (rc == ES_OK && a.html && write_html(ctx, &a, table, result)) {
        es_simulate_result_free(result);
        es_cost_table_free(table);
        es_context_free(ctx);
        free(planned_inputs);
        es_plan_dir_free(planned);
        return EXIT_BAD_INPUT;
    }
    if (rc == ES_OK) {
        fflush(stdout);
        if (a.json)
            rc = es_simulate_write_json_fd(ctx, result, 1);
        else
            print_table(&a.sim, result);
    }
    int exit_code = rc == ES_OK ? EXIT_OK : cli_fail(es_errmsg(ctx), rc);
    es_simulate_result_free(result);
    es_cost_table_free(table);
    es_context_free(ctx);
    free(planned_inputs);
    es_plan_dir_free(planned);
    return exit_code;
}
