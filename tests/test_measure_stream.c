/* es_measure_to_file (measure -o FILE): the file it streams must be
 * byte for byte what es_measure + es_cost_table_write give (the non-streaming
 * library path is the oracle), for any thread count, plain and zstd, with the
 * header's data-dependent columns decided late (list entries before shards,
 * a tokenizer over rows without text); a failure leaves nothing at the path. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_helpers.h"
#include "equishard/equishard_experimental.h"

static char root[4096];

static void settings(es_measure_settings *s, int threads, es_tokenizer *tok)
{
    es_measure_defaults(s);
    s->threads = threads;
    s->hash = 1;
    s->root = root;
    s->tokenizer = tok;
}

/* Fixture paths for inputs (relative to the fixtures), into bufs. */
static void fixture_inputs(const char *const *rel, size_t n, char (*bufs)[4096], const char **in)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(bufs[i], sizeof bufs[i], "%s", fixture_path(rel[i]));
        in[i] = bufs[i];
    }
}

/* The oracle's file: the whole table, then the whole-table writer. */
static unsigned char *whole(const es_measure_settings *s, const char **in, size_t n,
                            const char *path, const es_emb_sources *emb, const char *tokens,
                            size_t *len)
{
    es_context *ctx = es_context_new();
    es_cost_table *t = NULL;
    ck_assert_int_eq(es_measure(ctx, s, in, n, &t), ES_OK);
    if (emb)
        ck_assert_int_eq(es_cost_table_mark_embeddings(ctx, t, emb), ES_OK);
    if (tokens)
        ck_assert_int_eq(es_cost_table_set_speech_tokens(ctx, t, tokens, NULL), ES_OK);
    ck_assert_int_eq(es_cost_table_write(ctx, t, path), ES_OK);
    es_cost_table_free(t);
    es_context_free(ctx);
    return read_whole_file(path, len);
}

typedef struct seen {
    es_row_marks *marks;
    size_t rows, calls;
    int fail_at; /* 1-based call that fails, 0 = none */
} seen;

static int on_rows(es_context *ctx, void *user, es_cost_table *rows)
{
    seen *s = user;
    s->calls++;
    s->rows += es_cost_table_size(rows);
    if (s->fail_at && s->calls == (size_t)s->fail_at)
        return ES_ERR_IO;
    return s->marks ? es_row_marks_apply(ctx, s->marks, rows) : ES_OK;
}

static void same_bytes(const char *what, const unsigned char *a, size_t alen,
                       const unsigned char *b, size_t blen)
{
    ck_assert_msg(alen == blen && memcmp(a, b, alen) == 0, "%s: streamed file differs (%zu vs %zu bytes)",
                  what, blen, alen);
}

/* Streams the inputs at 1..3 threads into `name` and compares with the oracle. */
static void check_inputs(const char *const *rel, size_t n, const char *name, es_tokenizer *tok,
                         size_t rows)
{
    char bufs[8][4096];
    const char *in[8];
    fixture_inputs(rel, n, bufs, in);
    es_measure_settings s;
    settings(&s, 1, tok);
    size_t want_len;
    char oracle[256];
    snprintf(oracle, sizeof oracle, "whole-%s", name); /* the same suffix: .zst or not */
    unsigned char *want = whole(&s, in, n, test_path(oracle), NULL, NULL, &want_len);
    for (int threads = 1; threads <= 3; threads++) {
        settings(&s, threads, tok);
        es_context *ctx = es_context_new();
        es_cost_table *skips = NULL;
        seen sn = {0};
        ck_assert_int_eq(es_measure_to_file(ctx, &s, in, n, test_path(name), on_rows, &sn, &skips),
                         ES_OK);
        ck_assert_uint_eq(sn.rows, rows);
        ck_assert_uint_eq(es_cost_table_size(skips), 0);
        size_t len;
        unsigned char *got = read_whole_file(test_path(name), &len);
        same_bytes(name, want, want_len, got, len);
        free(got);
        es_cost_table_free(skips);
        es_context_free(ctx);
    }
    free(want);
}

static const char *const SHARDS_FIRST[] = {"corpus_a/shards/shards.list",
                                           "corpus_a/shards-zst/shards.list", "corpus_a/raw.list",
                                           "corpus_a/kaldi"};
/* List entries before any shard: the stat columns are undecided (spooled) until
 * the first shard's unit. */
static const char *const ENTRIES_FIRST[] = {"corpus_a/kaldi", "corpus_a/raw.list",
                                            "corpus_a/shards/shards.list"};

START_TEST(same_bytes_plain_and_zstd)
{
    check_inputs(SHARDS_FIRST, 4, "costs.tsv", NULL, 240);
    check_inputs(SHARDS_FIRST, 4, "costs.tsv.zst", NULL, 240);
    check_inputs(ENTRIES_FIRST, 3, "costs.tsv", NULL, 180);
    check_inputs(ENTRIES_FIRST, 3, "costs.tsv.zst", NULL, 180);
}
END_TEST

/* CosyVoice's Qwen2 tokenizer, read in place from ../shared as the tokenizer
 * suites do; NULL (and a SKIP line) when that folder is absent. */
static es_tokenizer *qwen2(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/../shared/fixtures/tokenizers/qwen2", getenv("ES_SOURCE_ROOT"));
    struct stat st;
    if (stat(path, &st) != 0) {
        printf("SKIP: %s absent\n", path);
        return NULL;
    }
    es_context *ctx = es_context_new();
    es_tokenizer *t = NULL;
    ck_assert_msg(es_tokenizer_load(ctx, path, NULL, &t) == ES_OK, "%s", es_errmsg(ctx));
    es_context_free(ctx);
    return t;
}

/* With a tokenizer: the "# tokenizer:" line and text_tokens column; and over
 * rows without text (a raw list without "txt"), no token ever appears, every
 * row waits in the spool and the file has neither (as the oracle's). */
START_TEST(tokenizer_lines_and_rows_without_text)
{
    es_tokenizer *tok = qwen2();
    if (!tok)
        return;
    check_inputs(ENTRIES_FIRST, 3, "tok.tsv", tok, 180);
    check_inputs(SHARDS_FIRST, 4, "tok.tsv.zst", tok, 240);
    char line[8192];
    FILE *fp = fopen(test_path("notext.list"), "w");
    ck_assert_ptr_nonnull(fp);
    for (int i = 1; i <= 3; i++)
        fprintf(fp, "{\"key\": \"A01_000%d\", \"wav\": \"%s/corpus_a/wav/A01/A01_000%d.wav\"}\n", i,
                fixture_path(""), i);
    fclose(fp);
    snprintf(line, sizeof line, "%s", test_path("notext.list"));
    /* fixture_inputs takes fixture-relative names; this one is absolute */
    const char *in[] = {line};
    es_measure_settings s;
    settings(&s, 2, tok);
    size_t want_len, len;
    unsigned char *want = whole(&s, in, 1, test_path("whole.tsv"), NULL, NULL, &want_len);
    es_context *ctx = es_context_new();
    ck_assert_msg(es_measure_to_file(ctx, &s, in, 1, test_path("s.tsv"), NULL, NULL, NULL) == ES_OK,
                  "%s", es_errmsg(ctx));
    unsigned char *got = read_whole_file(test_path("s.tsv"), &len);
    same_bytes("rows without text", want, want_len, got, len);
    ck_assert_ptr_null(strstr((const char *)got, "# tokenizer:"));
    free(got);
    free(want);
    es_context_free(ctx);
    es_tokenizer_free(tok);
}
END_TEST

/* Embedding flags and speech tokens set per unit (es_row_marks) equal the
 * whole-table calls. */
START_TEST(row_marks_per_unit)
{
    const char *rel[] = {"corpus_a/kaldi", "corpus_a/shards/shards.list"};
    char bufs[2][4096], utt[4096], spk[4096], tokens[4096];
    const char *in[2];
    fixture_inputs(rel, 2, bufs, in);
    snprintf(utt, sizeof utt, "%s", fixture_path("corpus_a/kaldi/utt2embedding.pt"));
    snprintf(spk, sizeof spk, "%s", fixture_path("corpus_a/kaldi/spk2embedding.pt"));
    snprintf(tokens, sizeof tokens, "%s", fixture_path("corpus_a/kaldi/utt2speech_token.pt"));
    es_emb_sources emb = {utt, NULL, spk, NULL, NULL, NULL};
    es_measure_settings s;
    settings(&s, 2, NULL);
    size_t want_len, len;
    unsigned char *want = whole(&s, in, 2, test_path("whole.tsv"), &emb, tokens, &want_len);
    es_context *ctx = es_context_new();
    seen sn = {0};
    ck_assert_int_eq(es_row_marks_new(ctx, &emb, tokens, &sn.marks), ES_OK);
    ck_assert_int_eq(es_measure_to_file(ctx, &s, in, 2, test_path("s.tsv"), on_rows, &sn, NULL),
                     ES_OK);
    es_speech_token_stats st;
    es_row_marks_stats(sn.marks, &st);
    ck_assert_uint_eq(st.rows_set, 120);
    ck_assert_uint_eq(st.unknown_keys, 0);
    unsigned char *got = read_whole_file(test_path("s.tsv"), &len);
    same_bytes("row marks", want, want_len, got, len);
    free(got);
    free(want);
    es_row_marks_free(sn.marks);
    es_context_free(ctx);
}
END_TEST

/* Files in dir other than `keep`: a failed run must leave no temporary file. */
static int others_in(const char *dir, const char *keep)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.' && strcmp(e->d_name, keep) != 0;
    closedir(d);
    return n;
}

/* A missing shard late in the list (FAIL mode), or the rows callback failing:
 * the call fails with that error, and the previous file is intact. */
START_TEST(failure_leaves_previous_file)
{
    FILE *fp = fopen(test_path("out.tsv"), "w");
    ck_assert_ptr_nonnull(fp);
    fputs("previous\n", fp);
    fclose(fp);
    fp = fopen(test_path("list"), "w");
    ck_assert_ptr_nonnull(fp);
    fprintf(fp, "%s\n%s/nope.tar\n", fixture_path("corpus_a/shards/shards_000000000.tar"), test_dir());
    fclose(fp);
    char list[4096];
    snprintf(list, sizeof list, "%s", test_path("list"));
    const char *in[] = {list};
    es_measure_settings s;
    settings(&s, 2, NULL);
    es_context *ctx = es_context_new();
    es_cost_table *skips = (es_cost_table *)1;
    ck_assert_int_eq(es_measure_to_file(ctx, &s, in, 1, test_path("out.tsv"), NULL, NULL, &skips),
                     ES_ERR_IO);
    ck_assert_ptr_null(skips);
    ck_assert_msg(strstr(es_errmsg(ctx), "nope.tar"), "%s", es_errmsg(ctx));
    seen sn = {.fail_at = 1};
    const char *good[] = {fixture_path("corpus_a/shards/shards_000000000.tar")};
    ck_assert_int_eq(es_measure_to_file(ctx, &s, good, 1, test_path("out.tsv"), on_rows, &sn, NULL),
                     ES_ERR_IO);
    ck_assert_msg(strstr(es_errmsg(ctx), "rows callback"), "%s", es_errmsg(ctx));
    size_t len;
    unsigned char *got = read_whole_file(test_path("out.tsv"), &len);
    ck_assert_uint_eq(len, 9);
    ck_assert_int_eq(memcmp(got, "previous\n", 9), 0);
    free(got);
    ck_assert_int_eq(others_in(test_dir(), "out.tsv"), 1); /* the list */
    /* --on-error skip: the missing shard is a skip, handed back */
    s.on_error = ES_ON_ERROR_SKIP;
    es_cost_table *sk = NULL;
    ck_assert_int_eq(es_measure_to_file(ctx, &s, in, 1, test_path("out.tsv"), NULL, NULL, &sk), ES_OK);
    ck_assert_uint_eq(skip_count(sk), 1);
    ck_assert_ptr_nonnull(strstr(es_cost_table_skip(sk, 0), "nope.tar"));
    es_cost_table_free(sk);
    es_context_free(ctx);
}
END_TEST

int main(void)
{
    snprintf(root, sizeof root, "%s", fixture_path("corpus_a"));
    Suite *s = suite_create("measure_stream");
    TCase *tc = tcase_create("stream");
    tcase_add_temp_dir(tc);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, same_bytes_plain_and_zstd);
    tcase_add_test(tc, tokenizer_lines_and_rows_without_text);
    tcase_add_test(tc, row_marks_per_unit);
    tcase_add_test(tc, failure_leaves_previous_file);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
