/* Tokenizer benchmark (docs/PERFORMANCE.md): load time and the encoding rate of
 * es_tokenizer on the "text" strings of a JSON-lines file, single thread,
 * public API only. Prints one JSON line; tools/bench/bench_tokenizer.sh runs it
 * beside the JavaScript reference on the same texts.
 *
 * usage: bench_tokenizer TOKENIZER TEXTS.jsonl [specials] */
#include <equishard/equishard.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_tokenizer TOKENIZER TEXTS.jsonl [specials]\n");
        return 2;
    }
    FILE *fp = fopen(argv[2], "r");
    if (!fp)
        return perror(argv[2]), 2;
    json_t **texts = NULL;
    size_t n = 0, cap = 0, lcap = 0;
    char *line = NULL;
    while (getline(&line, &lcap, fp) > 0) {
        json_t *o = json_loads(line, JSON_ALLOW_NUL, NULL);
        json_t *t = json_object_get(o, "text");
        if (!json_is_string(t)) {
            json_decref(o);
            continue;
        }
        if (n == cap)
            texts = realloc(texts, (cap = cap ? 2 * cap : 1024) * sizeof *texts);
        texts[n++] = json_incref(t);
        json_decref(o);
    }
    free(line);
    fclose(fp);
    es_context *ctx = es_context_new();
    es_tokenizer *tok = NULL;
    double t0 = now();
    if (es_tokenizer_load(ctx, argv[1], argc > 3 ? argv[3] : NULL, &tok) != ES_OK) {
        fprintf(stderr, "%s\n", es_errmsg(ctx));
        return 2;
    }
    double load = now() - t0;
    size_t tokens = 0, k;
    t0 = now();
    for (size_t i = 0; i < n; i++)
        if (es_tokenizer_encode(ctx, tok, json_string_value(texts[i]), json_string_length(texts[i]),
                                NULL, &k) == ES_OK)
            tokens += k;
    double secs = now() - t0;
    printf("{\"engine\": \"equishard %s\", \"load_ms\": %.0f, \"texts\": %zu, \"tokens\": %zu, "
           "\"seconds\": %.3f, \"tokens_per_s\": %.0f}\n",
           es_version(), load * 1000, n, tokens, secs, tokens / secs);
    es_tokenizer_free(tok);
    es_context_free(ctx);
    for (size_t i = 0; i < n; i++)
        json_decref(texts[i]);
    free(texts);
    return 0;
}
