/* equishard tokenize --tokenizer PATH [--specials cosyvoice2|cosyvoice3|none]
 *                    [--jsonl] [FILE...]
 * One JSON line {"n": N, "ids": [...]} per input text, in order: the ids the
 * recipe's tokenizer gives (tokenizer([text])["input_ids"][0]), so users can
 * check equishard against their own Python. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_options.h"

static const char intro[] =
    "usage: equishard tokenize --tokenizer PATH|--symbol-table FILE [OPTIONS] [FILE...]\n"
    "\n"
    "Encodes each line of the files (standard input when none or \"-\") with the\n"
    "recipe's text tokenizer and writes one JSON line per input, in order:\n"
    "{\"n\": N, \"ids\": [...]}. A line is its text without the final \"\\n\".\n"
    "Text that is not UTF-8 gives {\"n\": null, \"error\": \"...\"} (the loaders drop\n"
    "it) and exit status 1; so does a --jsonl line that is not a JSON object with a\n"
    "\"text\" string. Either way the line is named on stderr and the run goes on:\n"
    "output line i is always input line i.\n"
    "\n";

typedef struct tok_args {
    int jsonl;
} tok_args;

static void write_ids(const uint32_t *ids, size_t n)
{
    printf("{\"n\": %zu, \"ids\": [", n);
    for (size_t i = 0; i < n; i++)
        printf(i ? ", %u" : "%u", ids[i]);
    fputs("]}\n", stdout);
}

/* A line that gives no ids: {"n": null, "error": ...} in its place (so output
 * line i stays input line i), the problem on stderr; returns 1. */
static int flag_line(const char *file, size_t line, const char *problem)
{
    json_t *err = json_string(problem);
    char *e = json_dumps(err, JSON_ENCODE_ANY);
    printf("{\"n\": null, \"error\": %s}\n", e ? e : "\"not valid UTF-8\"");
    fprintf(stderr, "equishard tokenize: %s: line %zu: %s\n", file, line, problem);
    free(e);
    json_decref(err);
    return 1;
}

/* Encodes one text; returns 0, 1 (not UTF-8: reported in the output), or an
 * exit code >= 2. */
static int one_text(es_context *ctx, es_tokenizer *t, const char *s, size_t n, const char *file,
                    size_t line)
{
    const uint32_t *ids;
    size_t k;
    int rc = es_tokenizer_encode(ctx, t, s, n, &ids, &k);
    if (rc == ES_OK) {
        write_ids(ids, k);
        return 0;
    }
    if (rc != ES_ERR_FORMAT)
        return cli_fail(es_errmsg(ctx), rc);
    return flag_line(file, line, es_errmsg(ctx));
}

static int one_file(es_context *ctx, es_tokenizer *t, const tok_args *a, const char *path)
{
    int is_stdin = !strcmp(path, "-");
    FILE *fp = is_stdin ? stdin : fopen(path, "rb");
    const char *name = is_stdin ? "<stdin>" : path;
    if (!fp) {
        cli_error("%s: cannot open", path);
        return EXIT_BAD_INPUT;
    }
    char *buf = NULL;
    size_t cap = 0, line = 0;
    ssize_t len;
    int worst = 0;
    while (worst < 2 && (len = getline(&buf, &cap, fp)) >= 0) {
        line++;
        size_t n = (size_t)len;
        if (n && buf[n - 1] == '\n')
            n--;
        if (!a->jsonl) {
            int rc = one_text(ctx, t, buf, n, name, line);
            worst = rc > worst ? rc : worst;
            continue;
        }
        json_error_t err;
        json_t *o = json_loadb(buf, n, JSON_ALLOW_NUL, &err);
        json_t *text = json_object_get(o, "text");
        if (!json_is_string(text)) {
            /* flagged and passed, as a text that is not UTF-8 is in line mode */
            int rc = flag_line(name, line, o ? "no \"text\" string" : err.text);
            worst = rc > worst ? rc : worst;
        } else {
            int rc = one_text(ctx, t, json_string_value(text), json_string_length(text), name, line);
            worst = rc > worst ? rc : worst;
        }
        json_decref(o);
    }
    free(buf);
    if (!is_stdin)
        fclose(fp);
    return worst;
}

static const cli_option own[] = {
    CLI_OPT_STR("tokenizer", 't', CLI_IN(CLI_T_TOKENIZER, cli_tokenizer_opts, path), "PATH",
        "a folder with vocab.json + merges.txt (+ tokenizer_config.json),\n"
        "e.g. CosyVoice2-0.5B/CosyVoice-BlankEN, or with tokenizer.json,\n"
        "or a tokenizer.json file"),
    CLI_OPT_STR("specials", 0, CLI_IN(CLI_T_TOKENIZER, cli_tokenizer_opts, specials), "SET",
        "cosyvoice2 (default), cosyvoice3 or none: the special tokens\n"
        "the recipe's tokenizer class adds"),
    CLI_OPT_STR("symbol-table", 0, CLI_IN(CLI_T_TOKENIZER, cli_tokenizer_opts, symbol_table),
        "FILE",
        "WeNet's CharTokenizer instead (ids of units.txt, \"SYMBOL ID\"\n"
        "lines: the label --loader wenet filters on)"),
    CLI_OPT_STR("non-lang-syms", 0, CLI_IN(CLI_T_TOKENIZER, cli_tokenizer_opts, non_lang_syms),
        "FILE",
        "its non_lang_syms ({xxx}, <xxx> or [xxx], one a line)"),
    {.name = "split-with-space", .kind = CLI_FLAG, .ival = 1, .target = CLI_T_TOKENIZER,
     CLI_AT(cli_tokenizer_opts, split_with_space),
     .help = "its split_with_space (a token per word)"},
    {.name = "jsonl", .kind = CLI_FLAG, .ival = 1, CLI_AT(tok_args, jsonl),
     .help = "the inputs are JSON lines whose \"text\" string is encoded"},
};

static int parse_args(int argc, char **argv, tok_args *a)
{
    const cli_table tables[] = {CLI_TABLE(NULL, own)};
    const cli_command cmd = {"tokenize", intro, NULL, tables, 1};
    *a = (tok_args){0};
    void *const targets[CLI_T_COUNT] = {[CLI_T_CMD] = a, [CLI_T_TOKENIZER] = &cli_tokenizer};
    int rc = cli_options_parse(&cmd, targets, argc, argv);
    if (rc)
        return rc;
    if (cli_tokenizer_check("tokenize"))
        return -1;
    if (!cli_tokenizer.path && !cli_tokenizer.symbol_table)
        return cli_usage_error(&cmd, "--tokenizer PATH or --symbol-table FILE is required");
    return 0;
}

int cmd_tokenize(int argc, char **argv)
{
    tok_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc > 0 ? EXIT_OK : EXIT_BAD_INPUT;
    es_context *ctx = cli_context_new();
    if (!ctx)
        return cli_fail("out of memory", ES_ERR_NOMEM);
    rc = cli_load_tokenizer(ctx, NULL);
    es_tokenizer *t = cli_tokenizer.t;
    if (rc != ES_OK) {
        int code = cli_fail(es_errmsg(ctx), rc);
        es_context_free(ctx);
        return code;
    }
    int worst = 0;
    if (optind >= argc)
        worst = one_file(ctx, t, &a, "-");
    for (int i = optind; i < argc && worst < 2; i++) {
        int r = one_file(ctx, t, &a, argv[i]);
        worst = r > worst ? r : worst;
    }
    if (fflush(stdout) != 0)
        worst = cli_fail("standard output: write error", ES_ERR_IO);
    es_context_free(ctx);
    return worst;
}
