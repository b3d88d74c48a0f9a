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

static const char usage_text[] =
    "usage: equishard tokenize --tokenizer PATH|--symbol-table FILE [OPTIONS] [FILE...]\n"
    "\n"
    "Encodes each line of the files (standard input when none or \"-\") with the\n"
    "recipe's text tokenizer and writes one JSON line per input, in order:\n"
    "{\"n\": N, \"ids\": [...]}. A line is its text without the final \"\\n\".\n"
    "Text that is not UTF-8 gives {\"n\": null, \"error\": \"...\"} (the loaders drop\n"
    "it) and exit status 1.\n"
    "\n"
    "  -t, --tokenizer PATH   a folder with vocab.json + merges.txt (+ tokenizer_config.json),\n"
    "                         e.g. CosyVoice2-0.5B/CosyVoice-BlankEN, or with tokenizer.json,\n"
    "                         or a tokenizer.json file\n"
    "      --specials SET     cosyvoice2 (default), cosyvoice3 or none: the special tokens\n"
    "                         the recipe's tokenizer class adds\n"
    "      --symbol-table FILE  WeNet's CharTokenizer instead (ids of units.txt, \"SYMBOL ID\"\n"
    "                         lines: the label --loader wenet filters on)\n"
    "      --non-lang-syms FILE  its non_lang_syms ({xxx}, <xxx> or [xxx], one a line)\n"
    "      --split-with-space its split_with_space (a token per word)\n"
    "      --jsonl            the inputs are JSON lines whose \"text\" string is encoded\n"
    "  -h, --help             this text\n";

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
    json_t *err = json_string(es_errmsg(ctx));
    char *e = json_dumps(err, JSON_ENCODE_ANY);
    printf("{\"n\": null, \"error\": %s}\n", e ? e : "\"not valid UTF-8\"");
    fprintf(stderr, "equishard tokenize: %s: line %zu: %s\n", file, line, es_errmsg(ctx));
    free(e);
    json_decref(err);
    return 1;
}

static int one_file(es_context *ctx, es_tokenizer *t, const tok_args *a, const char *path)
{
    int is_stdin = !strcmp(path, "-");
    FILE *fp = is_stdin ? stdin : fopen(path, "rb");
    const char *name = is_stdin ? "<stdin>" : path;
    if (!fp) {
        fprintf(stderr, "equishard: %s: cannot open\n", path);
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
            fprintf(stderr, "equishard: %s: line %zu: %s\n", name, line,
                    o ? "no \"text\" string" : err.text);
            worst = EXIT_BAD_INPUT;
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

static int parse_args(int argc, char **argv, tok_args *a)
{
    enum { OPT_SPECIALS = 256, OPT_JSONL, OPT_SYMBOL_TABLE };
    static const struct option opts[] = {
        {"tokenizer", required_argument, NULL, 't'}, {"specials", required_argument, NULL, OPT_SPECIALS},
        CLI_SYMBOL_TABLE_OPTIONS(OPT_SYMBOL_TABLE),
        {"jsonl", no_argument, NULL, OPT_JSONL},     {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *a = (tok_args){0};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "t:h", opts, NULL)) != -1) {
        switch (c) {
        case 't': cli_tokenizer.path = optarg; break;
        case OPT_SPECIALS: cli_tokenizer.specials = optarg; break;
        case OPT_JSONL: a->jsonl = 1; break;
        case 'h': fputs(usage_text, stdout); return 1;
        default:
            if (cli_symbol_table_option(c, OPT_SYMBOL_TABLE, optarg))
                break;
            fputs(usage_text, stderr);
            return -1;
        }
    }
    if (cli_tokenizer_check("tokenize"))
        return -1;
    if (!cli_tokenizer.path && !cli_tokenizer.symbol_table) {
        fprintf(stderr, "equishard tokenize: --tokenizer PATH or --symbol-table FILE is required\n%s",
                usage_text);
        return -1;
    }
    return 0;
}

int cmd_tokenize(int argc, char **argv)
{
    tok_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc > 0 ? EXIT_OK : EXIT_BAD_INPUT;
    es_context *ctx = es_context_new();
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
