/* equishard validate [--device auto|cpu|cuda] [--json FILE] [--fail-on LIST]
 *                    [--utt-emb SRC] [--spk-emb SRC] [--utt2spk FILE] [--dim D]
 *                    [thresholds] [--world-size K ...] [cost model] [LIST...]
 *
 * The CI data-validation step (DESIGN.md §2, §8): loads the embeddings, measures
 * LIST (or reads --costs) to know the utterances, runs the checks, prints a short
 * table, optionally writes every finding as JSON, and exits 0 when clean, 1 when
 * a check named in --fail-on found something, 2 for unusable input. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_model.h"

static const char usage_text[] =
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
    ".npy with a key list, CosyVoice parquet shards or a list of them.\n"
    "      --utt-emb SRC      utterance embeddings\n"
    "      --utt-keys FILE    keys of a .npy --utt-emb, one per line\n"
    "      --spk-emb SRC      speaker embeddings\n"
    "      --spk-keys FILE    keys of a .npy --spk-emb\n"
    "      --utt2spk FILE     speakers (Kaldi); default: LIST's, or the parquet spk column\n"
    "      --costs FILE       a cost table (`measure --hash`) instead of LIST\n"
    "      --root DIR         resolve relative paths inside LIST, and inside parquet\n"
    "                         lists named by --utt-emb/--spk-emb, against DIR\n"
    "      --no-hash          do not hash audio (no duplicate_audio check; faster)\n"
    "      --speech-tokens SRC  utt2speech_token.pt: each row's speech_tokens (for the\n"
    "                         filter, e.g. --require-speech-token), 0 without a list\n"
    "      --tokenizer PATH [--specials SET]  count LIST's text tokens with the recipe's\n"
    "                         tokenizer (the filtered check's token filters need them)\n"
    "      --symbol-table FILE [--non-lang-syms FILE] [--split-with-space]  or with\n"
    "                         WeNet's CharTokenizer (--loader wenet's label)\n"
    "\n"
    "Checks:\n"
    "      --dim D            expected dimension (default 192; 0 = any)\n"
    "      --min-cosine X     far_from_centroid below X (default 0.5)\n"
    "      --zero-norm X      zero_norm at or below X (default 1e-6)\n"
    "      --norm-ratio R     abnormal_norm beyond R x or 1/R x the median (default 3; 0 off)\n"
    "      --min-norm X       abnormal_norm below X (default off)\n"
    "      --max-norm X       abnormal_norm above X (default off)\n"
    "      --spk-mean-tol X   spk_mean_mismatch above relative difference X (default 1e-3)\n"
    "      --no-duplicates    skip the duplicate_vector check\n"
    "\n"
    "Data checks (with LIST or --costs; the filter and frames come from the cost\n"
    "model options below):\n"
    "      --loader NAME      cosyvoice (default) or wenet: its recipe's filter defaults\n"
    "                         and, with --world-size, its split of the list\n"
    "      --world-size K     replay the loader over K ranks (imbalance check; default off)\n"
    "      --workers W        data-loader workers per rank (default 1)\n"
    "      --max-imbalance X  imbalance when rank frames' max/mean - 1 > X or the\n"
    "                         retention under the join < 1 - X (default 0.05)\n"
    "\n"
    "Output:\n"
    "      --fail-on LIST     comma-separated checks that make the exit code 1, or all,\n"
    "                         none (default: every check but duplicate_audio, filtered)\n"
    "      --json FILE        write every finding as JSON (docs/VALIDATE.md)\n"
    "      --show N           keys shown per check on the terminal (default 5)\n"
    "      --device D         auto (default: CUDA when present), cpu or cuda\n"
    "  -j, --threads N        CPU threads (default: all cores)\n"
    "  -q, --quiet            no progress line\n"
    "  -h, --help             this text\n"
    "\n"
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

static int bad(const char *fmt, const char *arg)
{
    fputs("equishard validate: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return -1;
}

static int parse_double(const char *opt, const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end)
        return bad("--%s needs a number", opt);
    *out = v;
    return 0;
}

static int parse_fail_on(validate_args *a, const char *list)
{
    char *copy = strdup(list), *save = NULL;
    if (!copy)
        return bad("%s", "out of memory");
    memset(a->fail_on, 0, sizeof a->fail_on);
    int rc = 0;
    for (char *t = strtok_r(copy, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "all"))
            for (int c = 0; c < ES_CHECK_COUNT; c++)
                a->fail_on[c] = 1;
        else if (strcmp(t, "none") != 0) {
            int c = es_check_from_name(t);
            if (c < 0)
                rc = bad("--fail-on: unknown check '%s' (see --help)", t);
            else
                a->fail_on[c] = 1;
        }
    }
    free(copy);
    return rc;
}

enum {
    OPT_UTT_EMB = 256, OPT_UTT_KEYS, OPT_SPK_EMB, OPT_SPK_KEYS, OPT_UTT2SPK, OPT_COSTS, OPT_ROOT,
    OPT_NO_HASH, OPT_DIM, OPT_MIN_COSINE, OPT_ZERO_NORM, OPT_NORM_RATIO, OPT_MIN_NORM, OPT_MAX_NORM,
    OPT_SPK_MEAN_TOL, OPT_NO_DUP, OPT_FAIL_ON, OPT_JSON, OPT_SHOW, OPT_DEVICE,
    OPT_LOADER, OPT_WORLD_SIZE, OPT_WORKERS, OPT_MAX_IMBALANCE, OPT_SPEECH_TOKENS, OPT_TOKENIZER, OPT_SPECIALS,
    OPT_SYMBOL_TABLE, OPT_SYMBOL_TABLE_END = OPT_SYMBOL_TABLE + 3,
};

static const struct option opts[] = {
    {"utt-emb", required_argument, NULL, OPT_UTT_EMB}, {"utt-keys", required_argument, NULL, OPT_UTT_KEYS},
    {"spk-emb", required_argument, NULL, OPT_SPK_EMB}, {"spk-keys", required_argument, NULL, OPT_SPK_KEYS},
    {"utt2spk", required_argument, NULL, OPT_UTT2SPK}, {"costs", required_argument, NULL, OPT_COSTS},
    {"root", required_argument, NULL, OPT_ROOT},       {"no-hash", no_argument, NULL, OPT_NO_HASH},
    {"dim", required_argument, NULL, OPT_DIM},         {"min-cosine", required_argument, NULL, OPT_MIN_COSINE},
    {"zero-norm", required_argument, NULL, OPT_ZERO_NORM},
    {"norm-ratio", required_argument, NULL, OPT_NORM_RATIO},
    {"min-norm", required_argument, NULL, OPT_MIN_NORM}, {"max-norm", required_argument, NULL, OPT_MAX_NORM},
    {"spk-mean-tol", required_argument, NULL, OPT_SPK_MEAN_TOL},
    {"no-duplicates", no_argument, NULL, OPT_NO_DUP},  {"fail-on", required_argument, NULL, OPT_FAIL_ON},
    {"json", required_argument, NULL, OPT_JSON},       {"show", required_argument, NULL, OPT_SHOW},
    {"device", required_argument, NULL, OPT_DEVICE},   {"threads", required_argument, NULL, 'j'},
    {"quiet", no_argument, NULL, 'q'},                 {"help", no_argument, NULL, 'h'},
    {"loader", required_argument, NULL, OPT_LOADER},   {"world-size", required_argument, NULL, OPT_WORLD_SIZE},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {"max-imbalance", required_argument, NULL, OPT_MAX_IMBALANCE},
    {"speech-tokens", required_argument, NULL, OPT_SPEECH_TOKENS},
    {"tokenizer", required_argument, NULL, OPT_TOKENIZER},
    {"specials", required_argument, NULL, OPT_SPECIALS},
    CLI_SYMBOL_TABLE_OPTIONS(OPT_SYMBOL_TABLE),
};
static const char short_options[] = "j:qh";

/* One option; returns 0, or -1 after printing why. */
static int option(validate_args *a, int c, const char *arg)
{
    int dim;
    switch (c) {
    case OPT_UTT_EMB: a->src.utt_emb = arg; return 0;
    case OPT_UTT_KEYS: a->src.utt_keys = arg; return 0;
    case OPT_SPK_EMB: a->src.spk_emb = arg; return 0;
    case OPT_SPK_KEYS: a->src.spk_keys = arg; return 0;
    case OPT_UTT2SPK: a->src.utt2spk = arg; return 0;
    case OPT_COSTS: a->costs = arg; return 0;
    case OPT_SPEECH_TOKENS: a->speech_tokens = arg; return 0;
    case OPT_TOKENIZER: cli_tokenizer.path = arg; return 0;
    case OPT_SPECIALS: cli_tokenizer.specials = arg; return 0;
    case OPT_SYMBOL_TABLE:
    case OPT_SYMBOL_TABLE + 1:
    case OPT_SYMBOL_TABLE + 2: cli_symbol_table_option(c, OPT_SYMBOL_TABLE, arg); return 0;
    case OPT_ROOT: a->root = a->src.root = arg; return 0;
    case OPT_NO_HASH: a->hash = 0; return 0;
    case OPT_DIM:
        if (cli_parse_int(arg, &dim))
            return bad("--dim needs a non-negative number, got '%s'", arg);
        a->s.dim = (size_t)dim;
        return 0;
    case OPT_MIN_COSINE: return parse_double("min-cosine", arg, &a->s.min_cosine);
    case OPT_ZERO_NORM: return parse_double("zero-norm", arg, &a->s.zero_norm);
    case OPT_NORM_RATIO: return parse_double("norm-ratio", arg, &a->s.norm_ratio);
    case OPT_MIN_NORM: return parse_double("min-norm", arg, &a->s.min_norm);
    case OPT_MAX_NORM: return parse_double("max-norm", arg, &a->s.max_norm);
    case OPT_SPK_MEAN_TOL: return parse_double("spk-mean-tol", arg, &a->s.spk_mean_tol);
    case OPT_NO_DUP: a->s.duplicates = 0; return 0;
    case OPT_FAIL_ON: return parse_fail_on(a, arg);
    case OPT_JSON: a->json = arg; return 0;
    case OPT_SHOW: return cli_parse_int(arg, &a->show) ? bad("--show needs a number, got '%s'", arg) : 0;
    case OPT_DEVICE:
        if (cli_parse_enum(ES_ENUM_DEVICE, arg, &a->s.device))
            return bad("--device is auto, cpu or cuda, got '%s'", arg);
        return 0;
    case 'j':
        if (cli_parse_int(arg, &a->threads) || a->threads == 0)
            return bad("-j needs a positive number, got '%s'", arg);
        a->s.threads = a->threads;
        return 0;
    case 'q': a->quiet = 1; return 0;
    case OPT_LOADER: /* applied by prescan; checked here */
        return cli_parse_enum(ES_ENUM_LOADER, arg, &a->data.loader) ? bad("--loader is cosyvoice or wenet, got '%s'", arg) : 0;
    case OPT_WORLD_SIZE:
        if (cli_parse_int(arg, &dim) || dim <= 0)
            return bad("--world-size needs a positive number, got '%s'", arg);
        a->data.world_size = (uint32_t)dim;
        return 0;
    case OPT_WORKERS:
        if (cli_parse_int(arg, &dim) || dim < 0)
            return bad("--workers needs a number >= 0, got '%s'", arg);
        a->data.workers = dim ? (uint32_t)dim : 1; /* num_workers 0 behaves as 1 */
        return 0;
    case OPT_MAX_IMBALANCE:
        if (cli_parse_double(arg, &a->data.max_imbalance) || !(a->data.max_imbalance >= 0))
            return bad("--max-imbalance needs a number >= 0, got '%s'", arg);
        return 0;
    default: return -1;
    }
}

/* First pass: only --loader, whose recipe gives the cost model's defaults that
 * the cost model options then override (as in simulate). */
static void prescan(int argc, char **argv, const struct option *all, validate_args *a)
{
    es_loader loader = ES_LOADER_COSYVOICE;
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, short_options, all, NULL)) != -1)
        if (c == OPT_LOADER)
            cli_parse_enum(ES_ENUM_LOADER, optarg, &loader);
    opterr = 1;
    optind = 0; /* glibc: start over, re-reading the (now permuted) argv */
    es_simulate_settings sim;
    es_simulate_defaults(&sim, loader);
    a->data.loader = loader;
    a->data.model = sim.model;
}

static int parse_args(int argc, char **argv, validate_args *a)
{
    memset(a, 0, sizeof *a);
    es_validate_defaults(&a->s);
    es_validate_data_defaults(&a->data);
    a->hash = 1;
    a->show = 5;
    for (int c = 0; c < ES_CHECK_COUNT; c++)
        a->fail_on[c] = c != ES_CHECK_DUPLICATE_AUDIO && c != ES_CHECK_FILTERED;
    struct option *all = cli_join_options(opts, sizeof opts / sizeof opts[0], 1, 0);
    if (!all)
        return bad("%s", "out of memory");
    prescan(argc, argv, all, a);
    int c, rc = 0;
    while (!rc && (c = getopt_long(argc, argv, short_options, all, NULL)) != -1) {
        if (c == 'h') {
            printf("%s\n%s", usage_text, cli_model_usage);
            rc = 1;
            break;
        }
        int used = c == '?' ? 0 : cli_model_option(c, optarg, &a->data.model, "validate");
        if (used < 0 || (!used && (c == '?' || option(a, c, optarg)))) {
            if (c == '?')
                fputs(usage_text, stderr);
            rc = -1;
        }
    }
    free(all);
    if (rc)
        return rc;
    if (cli_tokenizer_check("validate"))
        return -1;
    if (a->costs && optind < argc)
        return bad("%s", "give LIST or --costs, not both");
    if (!a->src.utt_emb && !a->src.spk_emb && !a->costs && optind >= argc)
        return bad("%s", "nothing to validate: give --utt-emb/--spk-emb and/or LIST (see --help)");
    if ((a->src.utt_keys && !a->src.utt_emb) || (a->src.spk_keys && !a->src.spk_emb))
        return bad("%s", "--utt-keys/--spk-keys go with --utt-emb/--spk-emb");
    if (a->data.world_size && !a->costs && optind >= argc)
        return bad("%s", "--world-size needs LIST or --costs (the utterances to split)");
    return 0;
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
    if (es_cost_table_size(t) == 0 && es_cost_table_skip_count(t) == 0) {
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
    if (*es_validate_token_note(r))
        printf("note: %s\n", es_validate_token_note(r));
    printf("%-18s %9s   %s\n", "check", "found", "first keys");
    int failed = 0;
    size_t i = 0, n = es_validate_finding_count(r);
    for (int c = 0; c < ES_CHECK_COUNT; c++) {
        size_t count = es_validate_count(r, c);
        int fails = count && a->fail_on[c];
        failed |= fails;
        printf("%-18s %9zu %s ", es_check_name(c), count, fails ? "!" : " ");
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

int cmd_validate(int argc, char **argv)
{
    validate_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc > 0 ? EXIT_OK : EXIT_BAD_INPUT;
    es_context *ctx = es_context_new();
    if (!ctx)
        return cli_fail("out of memory", ES_ERR_NOMEM);
    es_cost_table *table = NULL;
    es_validate_result *r = NULL;
    rc = load_table(ctx, &a, argc, argv, &table);
    if (rc == ES_OK && !a.costs && (rc = embeddings_from_list(&a, argc, argv, table)) != ES_OK) {
        es_cost_table_free(table);
        es_context_free(ctx);
        return EXIT_BAD_INPUT;
    }
    if (rc == ES_OK)
        rc = es_validate(ctx, &a.s, &a.src, table, &r);
    if (rc == ES_OK && table)
        rc = es_validate_data(ctx, &a.data, table, r);
    if (rc == ES_OK && a.json)
        rc = es_validate_write_json(ctx, r, a.json);
    int exit_code = rc == ES_OK ? (print_table(r, &a) ? EXIT_PROBLEMS : EXIT_OK)
                                : cli_fail(es_errmsg(ctx), rc);
    es_validate_result_free(r);
    es_cost_table_free(table);
    es_context_free(ctx);
    return exit_code;
}
