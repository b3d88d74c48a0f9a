/* equishard validate [--device auto|cpu|cuda] [--json FILE] [--fail-on LIST]
 *                    [--utt-emb SRC] [--spk-emb SRC] [--utt2spk FILE] [--dim D]
 *                    [thresholds] [--world-size K ...] [cost model] [LIST...]
 *
 * The CI data-validation step (docs/VALIDATE.md): loads the embeddings, measures
 * LIST (or reads --costs) to know the utterances, runs the checks, prints a short
 * table, optionally writes every finding as JSON, and exits 0 when clean, 1 when
 * a check named in --fail-on found something, 2 for unusable input. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_model.h"
#include "cli_recipe.h"

static const char intro[] =
    "usage: equishard validate [OPTIONS] [LIST...]\n"
    "\n"
    "Checks utterance and speaker embeddings: missing ones, wrong dimension, NaN/Inf,\n"
    "zero or abnormal norms, utterances far from their speaker's centroid (mislabeled\n"
    "speakers), speaker embeddings that are not the mean of their utterances, identical\n"
    "vectors and identical audio under different keys. LIST (shard lists, shards, raw\n"
    "lists, Kaldi dirs as for `measure`, or cost tables) names the utterances that\n"
    "should have embeddings; unreadable shards or members are findings too.\n"
    "\n"
    "Sources (detected by content): torch .pt (utt2embedding.pt, spk2embedding.pt),\n"
    ".npy with a key list, CosyVoice parquet shards or a list of them.\n";

static const char outro[] =
    "Checks: missing_utt_emb missing_spk_emb wrong_dim nan inf zero_norm abnormal_norm\n"
    "far_from_centroid spk_mean_mismatch duplicate_vector duplicate_audio unreadable\n"
    "filtered imbalance\n"
    "Exit: 0 clean, 1 a --fail-on check found something, 2 unusable input.\n";

typedef struct validate_args {
    es_validate_settings s;
    es_emb_sources src;
    es_validate_data_settings data;
    const char *costs, *json, *root;
    const char *speech_tokens; /* --speech-tokens SRC, or NULL */
    int fail_on[ES_CHECK_COUNT];
    int hash, quiet, show, threads;
} validate_args;

/* --fail-on LIST: the checks that make the exit code 1 (field: fail_on). */
static int parse_fail_on(const cli_option *o, const char *list, void *field, const char *command)
{
    int *fail_on = field;
    char *copy = strdup(list), *save = NULL;
    if (!copy)
        return cli_error("out of memory"), -2;
    memset(fail_on, 0, sizeof(int) * ES_CHECK_COUNT);
    int rc = 0;
    for (char *t = strtok_r(copy, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "all"))
            for (int c = 0; c < ES_CHECK_COUNT; c++)
                fail_on[c] = 1;
        else if (strcmp(t, "none") != 0) {
            int c = -1;
            es_enum_value(ES_ENUM_CHECK, t, &c); /* leaves -1 for an unknown name */
            char want[200];
            snprintf(want, sizeof want, "unknown check '%.80s' (see --help; or all, none)", t);
            if (c < 0)
                rc = cli_option_bad(command, o, list, want);
            else
                fail_on[c] = 1;
        }
    }
    free(copy);
    return rc;
}

static const cli_option sources[] = {
    CLI_OPT_STR("utt-emb", 0, CLI_AT(validate_args, src.utt_emb), "SRC", "utterance embeddings"),
    CLI_OPT_STR("utt-keys", 0, CLI_AT(validate_args, src.utt_keys), "FILE",
        "keys of a .npy --utt-emb, one per line"),
    CLI_OPT_STR("spk-emb", 0, CLI_AT(validate_args, src.spk_emb), "SRC", "speaker embeddings"),
    CLI_OPT_STR("spk-keys", 0, CLI_AT(validate_args, src.spk_keys), "FILE",
        "keys of a .npy --spk-emb"),
    CLI_OPT_STR("utt2spk", 0, CLI_AT(validate_args, src.utt2spk), "FILE",
        "speakers (Kaldi); default: LIST's, or the parquet spk column"),
    CLI_OPT_STR("costs", 0, CLI_AT(validate_args, costs), "FILE",
        "a cost table (`measure --hash`) instead of LIST"),
    CLI_OPT_STR("root", 0, CLI_AT(validate_args, root), "DIR",
        "resolve relative paths inside LIST, and inside parquet\n"
        "lists named by --utt-emb/--spk-emb, against DIR"),
    {.name = "no-hash", .kind = CLI_FLAG, .ival = 0, CLI_AT(validate_args, hash),
     .help = "do not hash audio (no duplicate_audio check; faster)"},
    CLI_OPT_STR("speech-tokens", 0, CLI_AT(validate_args, speech_tokens), "SRC",
        "utt2speech_token.pt: each row's speech_tokens (for the\n"
        "filter, e.g. --require-speech-token), 0 without a list"),
};

static const cli_option checks[] = {
    {.name = "dim", .kind = CLI_INT, CLI_AT(validate_args, s.dim), .metavar = "D",
     .help = "expected dimension (default 192; 0 = any)"},
    CLI_OPT_ANYNUM("min-cosine", CLI_AT(validate_args, s.min_cosine), "X",
        "far_from_centroid below X (default 0.5)"),
    CLI_OPT_ANYNUM("zero-norm", CLI_AT(validate_args, s.zero_norm), "X",
        "zero_norm at or below X (default 1e-6)"),
    CLI_OPT_ANYNUM("norm-ratio", CLI_AT(validate_args, s.norm_ratio), "R",
        "abnormal_norm beyond R x or 1/R x the median (default 3; 0 off)"),
    CLI_OPT_ANYNUM("min-norm", CLI_AT(validate_args, s.min_norm), "X",
        "abnormal_norm below X (default off)"),
    CLI_OPT_ANYNUM("max-norm", CLI_AT(validate_args, s.max_norm), "X",
        "abnormal_norm above X (default off)"),
    CLI_OPT_ANYNUM("spk-mean-tol", CLI_AT(validate_args, s.spk_mean_tol), "X",
        "spk_mean_mismatch above relative difference X (default 1e-3)"),
    {.name = "no-duplicates", .kind = CLI_FLAG, .ival = 0, CLI_AT(validate_args, s.duplicates),
     .help = "skip the duplicate_vector check"},
};

static const cli_option data_checks[] = {
    {.name = "loader", .kind = CLI_ENUM, .en = ES_ENUM_LOADER, CLI_AT(validate_args, data.loader),
     .help = "cosyvoice (default) or wenet: its recipe's filter defaults\n"
                                "and, with --world-size, its split of the list"},
    {.name = "world-size", .kind = CLI_INT, .min = 1, CLI_AT(validate_args, data.world_size),
     .metavar = "K", .help = "replay the loader over K ranks (imbalance check; default off)"},
    {.name = "workers", .kind = CLI_INT, .zero_is_one = 1, CLI_AT(validate_args, data.workers),
     .metavar = "W", .help = "data-loader workers per rank (default 1)"},
    {.name = "max-imbalance", .kind = CLI_NUM, CLI_AT(validate_args, data.max_imbalance),
     .metavar = "X", .help = "imbalance when rank frames' max/mean - 1 > X or the\n"
                             "retention under the join < 1 - X (default 0.05)"},
};

static const cli_option output[] = {
    {.name = "fail-on", .kind = CLI_CUSTOM, .has_arg = 1, .fn = parse_fail_on,
     CLI_AT(validate_args, fail_on), .metavar = "LIST",
     .help = "comma-separated checks that make the exit code 1, or all,\n"
             "none (default: every check but duplicate_audio, filtered)"},
    CLI_OPT_STR("json", 0, CLI_AT(validate_args, json), "FILE",
        "write every finding as JSON to FILE (docs/VALIDATE.md);\n"
        "here --json takes the FILE, where simulate's and\n"
        "describe's --json is a switch"),
    {.name = "show", .kind = CLI_INT, CLI_AT(validate_args, show), .metavar = "N",
     .help = "keys shown per check on the terminal (default 5)"},
    {.name = "device", .kind = CLI_ENUM, .en = ES_ENUM_DEVICE, CLI_AT(validate_args, s.device),
     .help = "auto (default: CUDA when present), cpu or cuda"},
    {.name = "threads", .short_name = 'j', .kind = CLI_INT, .min = 1,
     CLI_AT(validate_args, threads), .metavar = "N", .help = "CPU threads (default: all cores)"},
    {.name = "quiet", .short_name = 'q', .kind = CLI_FLAG, .ival = 1,
     CLI_AT(validate_args, quiet),
     .help = "no progress line, no summary of lists measured, no\n"
             "note that only the data checks ran"},
};

static void targets_of(validate_args *a, void *t[CLI_T_COUNT])
{
    t[CLI_T_CMD] = a, t[CLI_T_MODEL] = &a->data.model, t[CLI_T_MEASURE] = NULL;
    t[CLI_T_LIST] = NULL, t[CLI_T_TOKENIZER] = &cli_tokenizer;
}

/* First pass: only --loader, whose recipe gives the cost model's defaults that
 * the cost model options then override (as in simulate). */
static void prescan(const cli_command *cmd, int argc, char **argv, validate_args *a)
{
    static const char *const first[] = {"loader", NULL};
    validate_args pre = {0};
    pre.data.loader = ES_LOADER_COSYVOICE;
    void *t[CLI_T_COUNT];
    targets_of(&pre, t);
    cli_options_prescan(cmd, t, argc, argv, first);
    es_simulate_settings sim;
    es_simulate_defaults(&sim, pre.data.loader);
    a->data.loader = pre.data.loader;
    a->data.model = sim.model;
}

/* --recipe: its loader's defaults, then its filter and loader (a --loader
 * that names another loader is refused). Returns 0 or -1 (said why). */
static int apply_recipe(const cli_command *cmd, int argc, char **argv, validate_args *a)
{
    void *t[CLI_T_COUNT];
    targets_of(a, t);
    if (cli_recipe_load(cmd, t, argc, argv))
        return -1;
    if (!cli_recipe.r)
        return 0;
    int given = 0; /* an explicit --loader must agree with the recipe */
    for (int i = 1; i < argc; i++)
        given |= !strncmp(argv[i], "--loader", 8);
    if (cli_recipe_refuse_loader(given, a->data.loader))
        return -1;
    es_loader loader = cli_recipe.info.loader;
    es_simulate_settings sim;
    es_simulate_defaults(&sim, loader);
    a->data.model = sim.model;
    es_recipe_settings(cli_recipe.r, NULL, NULL, &a->data);
    return 0;
}

static int parse_args(int argc, char **argv, validate_args *a)
{
    const cli_table tables[] = {
        CLI_TABLE(NULL, sources),
        CLI_SHARED(NULL, cli_tok),
        CLI_TABLE("Checks:\n", checks),
        CLI_TABLE("Data checks (with LIST or --costs; the filter and frames come from the cost\n"
                  "model options below):\n", data_checks),
        CLI_TABLE("Output:\n", output),
        CLI_SHARED(cli_cost_model_heading, cli_cost_model),
        CLI_SHARED(cli_filter_heading, cli_filter),
        CLI_RECIPE_TABLE(NULL),
    };
    const cli_command cmd = {"validate", intro, outro, tables, sizeof tables / sizeof tables[0]};
    memset(a, 0, sizeof *a);
    es_validate_defaults(&a->s);
    es_validate_data_defaults(&a->data);
    a->hash = 1;
    a->show = 5;
    for (int c = 0; c < ES_CHECK_COUNT; c++)
        a->fail_on[c] = c != ES_CHECK_DUPLICATE_AUDIO && c != ES_CHECK_FILTERED;
    prescan(&cmd, argc, argv, a);
    if (apply_recipe(&cmd, argc, argv, a))
        return -1;
    void *t[CLI_T_COUNT];
    targets_of(a, t);
    int rc = cli_options_parse(&cmd, t, argc, argv);
    if (rc)
        return rc;
    a->src.root = a->root;
    if (a->threads) /* -j N (N >= 1) */
        a->s.threads = a->threads;
    if (cli_tokenizer_check("validate"))
        return -1;
    if (a->costs && optind < argc)
        return cli_usage_error(&cmd, "give LIST or --costs, not both");
    if (!a->src.utt_emb && !a->src.spk_emb && !a->costs && optind >= argc)
        return cli_usage_error(&cmd, "nothing to validate: give --utt-emb/--spk-emb and/or LIST");
    if ((a->src.utt_keys && !a->src.utt_emb) || (a->src.spk_keys && !a->src.spk_emb))
        return cli_usage_error(&cmd, "--utt-keys/--spk-keys go with --utt-emb/--spk-emb");
    if (a->data.world_size && !a->costs && optind >= argc)
        return cli_usage_error(&cmd,
                               "--world-size needs LIST or --costs (the utterances to split)");
    return cli_recipe_tokenizer("validate", (const char *const *)argv + optind,
                                (size_t)(argc - optind));
}

/* LIST measured with hashes, skipping problems (they become findings, not
 * stderr lines: no cli_load_inputs report). */
static int measure_list(es_context *ctx, validate_args *a, int argc, char **argv, es_cost_table **t)
{
    es_measure_settings ms;
    es_measure_defaults(&ms);
    ms.threads = a->threads;
    ms.hash = a->hash;
    ms.on_error = ES_ON_ERROR_SKIP;
    ms.root = a->root;
    return cli_measure_inputs(ctx, &ms, a->quiet, (const char *const *)argv + optind,
                              (size_t)(argc - optind), t);
}

/* The utterances: LIST measured (with hashes) or read when it is a cost table
 * (es_load_inputs, as plan and simulate take "COSTS | LIST..."), or --costs;
 * then --speech-tokens. Problems --on-error skip leaves out become
 * `unreadable` findings. */
static int load_table(es_context *ctx, validate_args *a, int argc, char **argv, es_cost_table **t)
{
    *t = NULL;
    int rc = ES_OK;
    if (a->costs)
        rc = es_cost_table_read(ctx, a->costs, t);
    else if (optind < argc)
        rc = measure_list(ctx, a, argc, argv, t);
    if (rc == ES_OK && *t && a->speech_tokens)
        rc = cli_set_speech_tokens(ctx, *t, a->speech_tokens);
    return rc;
}

/* Without --utt-emb/--spk-emb, a LIST whose files carry the embeddings (CosyVoice
 * parquet: utt_embedding/spk_embedding columns; the reader flags the rows) is
 * its own source. A run with no embeddings at all and no utterances checks
 * nothing: refused (exit 2) rather than reported OK. */
static int embeddings_from_list(validate_args *a, int argc, char **argv, const es_cost_table *t)
{
    if (a->src.utt_emb || a->src.spk_emb || !t)
        return ES_OK;
    unsigned flags = 0;
    for (size_t i = 0; i < es_cost_table_size(t); i++) {
        es_cost_row row;
        es_cost_table_row(t, i, &row);
        flags |= row.flags;
    }
    if (flags & (ES_FLAG_UTT_EMB | ES_FLAG_SPK_EMB)) {
        if (argc - optind != 1) {
            fprintf(stderr, "equishard validate: LIST's files carry embeddings; give one LIST "
                            "(or --utt-emb/--spk-emb) to validate them\n");
            return ES_ERR_USAGE;
        }
        if (flags & ES_FLAG_UTT_EMB)
            a->src.utt_emb = argv[optind];
        if (flags & ES_FLAG_SPK_EMB)
            a->src.spk_emb = argv[optind];
        return ES_OK;
    }
    if (es_cost_table_size(t) == 0 && !es_cost_table_skip(t, 0)) {
        fprintf(stderr, "equishard validate: nothing to validate: no embeddings (--utt-emb/"
                        "--spk-emb, or embedding columns in LIST) and no utterances\n");
        return ES_ERR_USAGE;
    }
    if (!a->quiet)
        fprintf(stderr, "equishard validate: no embeddings given or in LIST: only the data "
                        "checks ran\n");
    return ES_OK;
}

static void print_key(const char *k)
{
    for (; *k; k++)
        putchar((unsigned char)*k < 0x20 || *k == 0x7f ? '?' : *k);
}

static void print_value(const es_finding *f)
{
    switch (f->check) {
    case ES_CHECK_MISSING_UTT_EMB:
    case ES_CHECK_MISSING_SPK_EMB:
    case ES_CHECK_UNREADABLE:
        break;
    case ES_CHECK_FILTERED:
    case ES_CHECK_IMBALANCE:
        printf(" (%s)", f->other ? f->other : "");
        break;
    case ES_CHECK_DUPLICATE_VECTOR:
    case ES_CHECK_DUPLICATE_AUDIO:
        fputs(" (= ", stdout);
        print_key(f->other && f->other[0] ? f->other : "an earlier row");
        putchar(')');
        break;
    default:
        printf(" (%g)", f->value);
    }
}

/* The terminal table: every check, its count, the first keys it names. */
static int print_table(const es_validate_result *r, const validate_args *a)
{
    es_validate_info info;
    es_validate_result_info(r, &info);
    printf("validated %zu utterance and %zu speaker embeddings (dim %zu) on %s; "
           "%zu utterances and %zu speakers expected\n", info.utt_rows, info.spk_rows, info.dim,
           info.device == ES_DEVICE_CUDA ? "cuda" : "cpu", info.utterances, info.speakers);
    if (*info.token_note)
        printf("note: %s\n", info.token_note);
    printf("%-18s %9s   %s\n", "check", "found", "first keys");
    int failed = 0;
    size_t i = 0, n = es_validate_count(r, -1);
    for (int c = 0; c < ES_CHECK_COUNT; c++) {
        size_t count = es_validate_count(r, c);
        int fails = count && a->fail_on[c];
        failed |= fails;
        printf("%-18s %9zu %s ", es_enum_name(ES_ENUM_CHECK, c), count, fails ? "!" : " ");
        for (size_t shown = 0; i < n; i++) {
            es_finding f;
            es_validate_finding(r, i, &f);
            if ((int)f.check != c)
                break;
            if (shown++ < (size_t)a->show) {
                fputs(shown > 1 ? ", " : "", stdout);
                print_key(f.key[0] ? f.key : "(row)");
                print_value(&f);
            } else if (shown == (size_t)a->show + 1) {
                fputs(a->show ? ", ..." : "...", stdout);
            }
        }
        putchar('\n');
    }
    printf(failed ? "FAILED: checks marked ! found problems (--fail-on)\n" : "OK\n");
    return failed;
}

/* Not --quiet: "equishard validate: validated N utterance and M speaker
 * embeddings (dim D) in T s -> JSON" on stderr (no arrow without --json). */
static void print_summary(const es_validate_result *r, const validate_args *a, double elapsed)
{
    if (a->quiet)
        return;
    es_validate_info info;
    es_validate_result_info(r, &info);
    char u[32], s[32];
    fprintf(stderr, "equishard validate: validated %s utterance and %s speaker embeddings "
            "(dim %zu) in %.1f s%s%s\n", cli_group(u, sizeof u, info.utt_rows),
            cli_group(s, sizeof s, info.spk_rows), info.dim, elapsed, a->json ? " -> " : "",
            a->json ? a->json : "");
}

int cmd_validate(int argc, char **argv)
{
    validate_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc > 0 ? EXIT_OK : EXIT_BAD_INPUT;
    const char *const read[] = {a.costs, a.speech_tokens, a.src.utt_emb, a.src.utt_keys,
                                a.src.spk_emb, a.src.spk_keys, a.src.utt2spk};
    if (cli_refuse_output_input("validate", a.json, (const char *const *)argv + optind,
                                (size_t)(argc - optind)) ||
        cli_refuse_output_input("validate", a.json, read, sizeof read / sizeof read[0]))
        return EXIT_BAD_INPUT;
    es_context *ctx = cli_context_new();
    if (!ctx)
        return cli_fail("out of memory", ES_ERR_NOMEM);
    es_cost_table *table = NULL;
    es_validate_result *r = NULL;
    double start = cli_progress_now();
    rc = load_table(ctx, &a, argc, argv, &table);
    if (rc == ES_OK && !a.costs && (rc = embeddings_from_list(&a, argc, argv, table)) != ES_OK) {
        es_cost_table_free(table);
        es_context_free(ctx);
        return EXIT_BAD_INPUT;
    }
    cli_progress line; /* the sources read: "validate: D / T bytes" */
    cli_progress_init(&line, "validate", "bytes", a.quiet);
    a.s.progress = line.enabled ? cli_progress_update : NULL;
    a.s.progress_user = &line;
    if (rc == ES_OK)
        rc = es_validate(ctx, &a.s, &a.src, table, &r);
    cli_progress_end(&line);
    if (rc == ES_OK && table)
        rc = es_validate_data(ctx, &a.data, table, r);
    if (rc == ES_OK && a.json)
        rc = es_validate_write_json(ctx, r, a.json);
    if (rc == ES_OK)
        print_summary(r, &a, cli_progress_now() - start);
    int exit_code = rc == ES_OK ? (print_table(r, &a) ? EXIT_PROBLEMS : EXIT_OK)
                                : cli_fail(es_errmsg(ctx), rc);
    es_validate_result_free(r);
    es_cost_table_free(table);
    es_context_free(ctx);
    return exit_code;
}
