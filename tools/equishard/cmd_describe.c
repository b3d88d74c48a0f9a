/* equishard describe [--loader L] [--recipe FILE] [filter flags] [--json]
 *                    [-o FILE] COSTS | LIST...
 * What a corpus holds, before planning it: es_describe_json, printed as a
 * short table or as the JSON itself (docs/DESCRIBE.md). */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_model.h"
#include "cli_recipe.h"

static const char intro[] =
    "usage: equishard describe [OPTIONS] COSTS | LIST...\n"
    "\n"
    "Describes the utterances of cost tables or lists (measured on the fly):\n"
    "hours, duration percentiles, sample rates and channels, text lengths,\n"
    "speakers and hours per speaker, rows missing text, embeddings or speech\n"
    "tokens, and what the loader's filter would drop, by reason. Percentiles\n"
    "are numpy's default (linear interpolation); docs/DESCRIBE.md has the keys.\n"
    "\n";

static const char outro[] =
    "wenet's defaults also set --min-length 0 (its recipes); flags given override\n"
    "them and the recipe's filter.\n";

typedef struct describe_args {
    es_loader loader;
    es_cost_model model;
    es_measure_settings measure;
    cli_list_opts list;
    const char *output;
    int json, have_loader;
} describe_args;

static int parse_loader(const cli_option *o, const char *arg, void *field, const char *command)
{
    (void)o, (void)command;
    describe_args *a = field;
    if (cli_parse_enum(ES_ENUM_LOADER, arg, &a->loader))
        return -1;
    a->have_loader = 1;
    return 0;
}

static const cli_option own[] = {
    {.name = "loader", .short_name = 'l', .kind = CLI_CUSTOM, .has_arg = 1, .fn = parse_loader,
     .offset = 0, .metavar = "cosyvoice|wenet", .want = "cosyvoice or wenet",
     .help = "whose filter to apply (default cosyvoice, or the recipe's)"},
    {.name = "json", .kind = CLI_FLAG, .ival = 1, CLI_AT(describe_args, json),
     .help = "print the JSON (docs/DESCRIBE.md) instead of the table\n"
             "(a switch, no FILE: -o FILE writes the JSON to a file)"},
    {.name = "output", .short_name = 'o', .kind = CLI_STR, CLI_AT(describe_args, output),
     .metavar = "FILE", .help = "also write the JSON to FILE (atomically)"},
};

static void targets_of(describe_args *a, void *t[CLI_T_COUNT])
{
    t[CLI_T_CMD] = a, t[CLI_T_MODEL] = &a->model, t[CLI_T_MEASURE] = &a->measure;
    t[CLI_T_LIST] = &a->list, t[CLI_T_TOKENIZER] = &cli_tokenizer;
}

/* --loader and --recipe first: they choose the filter every flag overrides
 * (as simulate's prescan). */
static int prescan(const cli_command *cmd, int argc, char **argv, describe_args *a)
{
    static const char *const first[] = {"loader", NULL};
    describe_args pre = {0};
    void *t[CLI_T_COUNT];
    targets_of(&pre, t);
    int asked = cli_options_prescan(cmd, t, argc, argv, first);
    if (!asked && cli_recipe_load(cmd, t, argc, argv))
        return -1;
    if (cli_recipe_refuse_loader(pre.have_loader, pre.loader))
        return -1;
    if (cli_recipe.r)
        pre.loader = cli_recipe.info.loader;
    es_simulate_settings sim;
    es_simulate_defaults(&sim, pre.loader);
    if (cli_recipe.r)
        es_recipe_settings(cli_recipe.r, NULL, &sim, NULL);
    a->loader = pre.loader;
    a->model = sim.model;
    return asked;
}

static int parse_args(int argc, char **argv, describe_args *a)
{
    const cli_table tables[] = {
        CLI_TABLE(NULL, own),
        CLI_SHARED(cli_filter_heading, cli_filter),
        CLI_SHARED(cli_measure_heading, cli_measure),
        CLI_SHARED(NULL, cli_tok),
        CLI_RECIPE_TABLE(NULL),
    };
    const cli_command cmd = {"describe", intro, outro, tables, sizeof tables / sizeof tables[0]};
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
    if (cli_tokenizer_check("describe"))
        return -1;
    if (optind >= argc)
        return cli_usage_error(&cmd, "no COSTS or LIST given");
    return cli_recipe_tokenizer("describe", (const char *const *)argv + optind,
                                (size_t)(argc - optind));
}

/* ---- the readable table ------------------------------------------------------- */

static void print_percentiles(const char *label, json_t *p, const char *fmt)
{
    printf("%-22s", label);
    if (!json_is_object(p)) {
        printf(" -\n");
        return;
    }
    const char *k;
    json_t *v;
    json_object_foreach(p, k, v) {
        printf(" %s ", k);
        printf(fmt, json_number_value(v));
    }
    printf("\n");
}

static void print_counts(const char *label, json_t *o, const char *suffix)
{
    printf("%-22s", label);
    const char *k, *sep = " ";
    json_t *v;
    json_object_foreach(o, k, v) {
        printf("%s%s%s: %lld", sep, k, suffix, (long long)json_integer_value(v));
        sep = ", ";
    }
    printf("%s\n", json_object_size(o) ? "" : " -");
}

static void print_table(json_t *d)
{
    json_t *text = json_object_get(d, "text"), *spk = json_object_get(d, "speakers");
    json_t *f = json_object_get(d, "filter");
    printf("%-22s %lld (%.1f s of audio, %.2f h)\n", "utterances",
           (long long)json_integer_value(json_object_get(d, "utterances")),
           json_number_value(json_object_get(d, "seconds")),
           json_number_value(json_object_get(d, "hours")));
    print_percentiles("duration (s)", json_object_get(d, "duration_seconds"), "%.2f");
    print_counts("sample rates", json_object_get(d, "sample_rates"), " Hz");
    print_counts("channels", json_object_get(d, "channels"), "");
    char label[48];
    snprintf(label, sizeof label, "text (%s)", json_string_value(json_object_get(text, "unit")));
    print_percentiles(label, json_object_get(text, "percentiles"), "%.0f");
    printf("%-22s %lld\n", "speakers",
           (long long)json_integer_value(json_object_get(spk, "count")));
    print_percentiles("hours per speaker", json_object_get(spk, "hours_per_speaker"), "%.3f");
    print_counts("missing", json_object_get(d, "missing"), "");
    printf("%-22s %lld kept, %lld dropped", "filter",
           (long long)json_integer_value(json_object_get(f, "kept")),
           (long long)json_integer_value(json_object_get(f, "filtered")));
    const char *k, *sep = ": ";
    json_t *v;
    json_object_foreach(json_object_get(f, "filtered_by_reason"), k, v) {
        if (json_integer_value(v)) {
            printf("%s%s %lld", sep, k, (long long)json_integer_value(v));
            sep = ", ";
        }
    }
    printf(" (%s loader)\n", json_string_value(json_object_get(f, "loader")));
    json_int_t uncounted = json_integer_value(json_object_get(f, "rows_without_token_count"));
    if (uncounted)
        printf("%-22s the token limits were not applied to %lld row(s) without a text-token "
               "count (measure with --tokenizer)\n", "", (long long)uncounted);
}

static int describe(es_context *ctx, const describe_args *a, const es_cost_table *table)
{
    char *text = NULL;
    int rc = es_describe_json(ctx, table, a->loader, &a->model, &text);
    if (rc != ES_OK)
        return rc;
    size_t len = strlen(text);
    text[len] = '\n'; /* the string's NUL: written with its newline, then restored */
    if (a->output)
        rc = es_write_output(ctx, a->output, text, len + 1);
    if (rc == ES_OK && a->json)
        rc = es_write_output(ctx, "-", text, len + 1);
    text[len] = '\0';
    if (rc == ES_OK && !a->json) {
        json_t *d = json_loads(text, 0, NULL);
        if (d)
            print_table(d);
        else
            rc = ES_ERR_NOMEM; /* jansson's only failure on its own output */
        json_decref(d);
    }
    es_free(text);
    return rc;
}

int cmd_describe(int argc, char **argv)
{
    describe_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc > 0 ? EXIT_OK : EXIT_BAD_INPUT;
    const char *const *inputs = (const char *const *)argv + optind;
    size_t n = (size_t)(argc - optind);
    const char *const read[] = {a.list.speech_tokens, cli_tokenizer.path,
                                cli_tokenizer.symbol_table, cli_tokenizer.non_lang_syms};
    if (cli_refuse_output_input("describe", a.output, inputs, n) ||
        cli_refuse_output_input("describe", a.output, read, sizeof read / sizeof read[0]))
        return EXIT_BAD_INPUT;
    es_context *ctx = cli_context_new();
    if (!ctx)
        return cli_fail("out of memory", ES_ERR_NOMEM);
    es_cost_table *table = NULL;
    rc = cli_load_inputs(ctx, &a.measure, a.list.quiet, a.list.speech_tokens, inputs, n, &table);
    if (rc == ES_OK) {
        fflush(stdout);
        rc = describe(ctx, &a, table);
    }
    int exit_code = rc == ES_OK ? EXIT_OK
                  : cli_fail(*es_errmsg(ctx) ? es_errmsg(ctx) : "out of memory", rc);
    es_cost_table_free(table);
    es_context_free(ctx);
    return exit_code;
}
