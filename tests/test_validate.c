/* es_validate end to end: corpus A's embeddings (clean, as its README
 * describes them; with planted defects written by Python's pickle module), the
 * parquet columns, a measured cost table (missing embeddings, duplicate audio,
 * presence flags), the host/device API contract and the JSON report. */
#include "check_helpers.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "equishard/equishard.h"

static const char *kaldi(const char *name)
{
    static char buf[2][4096];
    static int k;
    k = !k;
    snprintf(buf[k], sizeof buf[k], "%s", fixture_path("corpus_a/kaldi"));
    snprintf(buf[k] + strlen(buf[k]), sizeof buf[k] - strlen(buf[k]), "/%s", name);
    return buf[k];
}

static es_validate_result *run(const es_validate_settings *s, const es_emb_sources *src,
                               const es_cost_table *t)
{
    es_context *ctx = es_context_new();
    es_validate_result *r = NULL;
    int rc = es_validate(ctx, s, src, t, &r);
    ck_assert_msg(rc == ES_OK, "es_validate: %s", es_errmsg(ctx));
    es_context_free(ctx);
    return r;
}

static es_emb_sources fixture_sources(void)
{
    static char utt[4096], spk[4096], u2s[4096];
    snprintf(utt, sizeof utt, "%s", kaldi("utt2embedding.pt"));
    snprintf(spk, sizeof spk, "%s", kaldi("spk2embedding.pt"));
    snprintf(u2s, sizeof u2s, "%s", kaldi("utt2spk"));
    es_emb_sources src = {.utt_emb = utt, .spk_emb = spk, .utt2spk = u2s};
    return src;
}

/* README: 60 utterances, 6 speakers, 192-d, no NaN/Inf planted (each is its
 * speaker's direction plus noise), spk2embedding = float32 mean of the
 * speaker's utterances. So: nothing to report. */
START_TEST(test_fixture_clean)
{
    es_emb_sources src = fixture_sources();
    es_validate_settings s;
    es_validate_defaults(&s);
    s.device = ES_DEVICE_AUTO; /* no GPU here: falls back to the CPU */
    es_validate_result *r = run(&s, &src, NULL);
    for (size_t i = 0; i < es_validate_count(r, -1); i++) {
        es_finding f;
        es_validate_finding(r, i, &f);
        ck_abort_msg("unexpected finding %s %s (%g)", es_enum_name(ES_ENUM_CHECK, f.check), f.key, f.value);
    }
    es_validate_info info;
    es_validate_result_info(r, &info);
    ck_assert_uint_eq(info.utt_rows, 60);
    ck_assert_uint_eq(info.spk_rows, 6);
    ck_assert_uint_eq(info.utterances, 60);
    ck_assert_uint_eq(info.speakers, 6);
    ck_assert_uint_eq(info.dim, 192);
    es_validate_result_free(r);
}
END_TEST

/* README: cosine of each utterance to its speaker's spk2embedding is min 0.878,
 * max 0.933 (three decimals). The centroid is that mean, so thresholds just
 * around those values split the utterances accordingly. */
START_TEST(test_fixture_cosine_range)
{
    es_emb_sources src = fixture_sources();
    es_validate_settings s;
    es_validate_defaults(&s);
    double lo[] = {0.8775, 0.8785, 0.9325, 0.9335};
    size_t far[4];
    for (int k = 0; k < 4; k++) {
        s.min_cosine = lo[k];
        es_validate_result *r = run(&s, &src, NULL);
        far[k] = es_validate_count(r, ES_CHECK_FAR_FROM_CENTROID);
        for (size_t i = 0; i < es_validate_count(r, -1); i++) {
            es_finding f;
            es_validate_finding(r, i, &f);
            ck_assert_int_eq(f.check, ES_CHECK_FAR_FROM_CENTROID);
            ck_assert(f.value >= 0.8775 && f.value < 0.9335);
        }
        es_validate_result_free(r);
    }
    ck_assert_uint_eq(far[0], 0);  /* nothing below 0.8775 */
    ck_assert_uint_ge(far[1], 1);  /* the minimum is below 0.8785 */
    ck_assert_uint_lt(far[2], 60); /* the maximum is at or above 0.9325 */
    ck_assert_uint_eq(far[3], 60); /* everything is below 0.9335 */
}
END_TEST

/* The defects validate_cases.py planted (its expected.tsv), and nothing else. */
START_TEST(test_fixture_planted)
{
    char *dir = make_temp_dir(), cmd[8192], path[3][4096];
    snprintf(cmd, sizeof cmd, "python3 '%s/tests/validate_cases.py' plant '%s' '%s'",
             getenv("ES_SOURCE_ROOT"), fixture_path("corpus_a/kaldi"), dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(path[0], sizeof path[0], "%s/utt2embedding.pt", dir);
    snprintf(path[1], sizeof path[1], "%s/spk2embedding.pt", dir);
    snprintf(path[2], sizeof path[2], "%s/utt2spk", dir);
    es_emb_sources src = {.utt_emb = path[0], .spk_emb = path[1], .utt2spk = path[2]};
    es_validate_result *r = run(NULL, &src, NULL);
    char want[64][128], got[64][128];
    size_t n_want = 0, n_got = 0;
    snprintf(cmd, sizeof cmd, "%s/expected.tsv", dir);
    FILE *fp = fopen(cmd, "r");
    ck_assert_ptr_nonnull(fp);
    while (n_want < 64 && fgets(want[n_want], sizeof want[0], fp))
        want[n_want][strcspn(want[n_want], "\n")] = 0, n_want++;
    fclose(fp);
    for (size_t i = 0; i < es_validate_count(r, -1) && n_got < 64; i++) {
        es_finding f;
        es_validate_finding(r, i, &f);
        snprintf(got[n_got++], sizeof got[0], "%s\t%s\t%s%s%s", es_enum_name(ES_ENUM_CHECK, f.check),
                 f.kind == ES_KIND_SPK ? "spk" : "utt", f.key, f.other ? "\t" : "", f.other ? f.other : "");
    }
    qsort(got, n_got, sizeof got[0], (int (*)(const void *, const void *))strcmp);
    for (size_t i = 0; i < n_want && i < n_got; i++)
        ck_assert_str_eq(got[i], want[i]);
    ck_assert_uint_eq(n_got, n_want);
    ck_assert_uint_eq(n_want, 10);
    es_validate_result_free(r);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}
END_TEST

/* CosyVoice parquet shards: embeddings and speakers from the columns. */
START_TEST(test_parquet_source)
{
    ck_assert_int_eq(chdir(fixture_path("corpus_a")), 0);
    es_emb_sources src = {.utt_emb = "parquet/data.list", .spk_emb = "parquet/data.list"};
    es_validate_result *r = run(NULL, &src, NULL);
    ck_assert_uint_eq(es_validate_count(r, -1), 0);
    es_validate_info info;
    es_validate_result_info(r, &info);
    ck_assert_uint_eq(info.utt_rows, 60);
    ck_assert_uint_eq(info.spk_rows, 6);
    ck_assert_uint_eq(info.utterances, 60);
    ck_assert_uint_eq(info.speakers, 6);
    es_validate_result_free(r);
}
END_TEST

static es_cost_table *measure(const char *input)
{
    es_context *ctx = es_context_new();
    es_measure_settings ms;
    es_measure_defaults(&ms);
    ms.hash = 1;
    es_cost_table *t = NULL;
    ck_assert_msg(es_measure(ctx, &ms, &input, 1, &t) == ES_OK, "%s", es_errmsg(ctx));
    es_context_free(ctx);
    return t;
}

/* A Kaldi dir with one more utterance reusing another's audio: it has no
 * embedding, and its audio repeats A01_0001's. */
START_TEST(test_table_missing_and_duplicate_audio)
{
    char *dir = make_temp_dir(), cmd[16384];
    const char *fix = fixture_path("corpus_a");
    snprintf(cmd, sizeof cmd,
             "cd '%s' && cp kaldi/text kaldi/utt2spk '%s'/ && "
             "awk '{print $1, \"%s/\" $2}' kaldi/wav.scp > '%s/wav.scp' && "
             "echo 'A01_9999 %s/wav/A01/A01_0001.wav' >> '%s/wav.scp' && "
             "echo 'A01_9999 A01' >> '%s/utt2spk'",
             fix, dir, fix, dir, fix, dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    es_cost_table *t = measure(dir);
    ck_assert_uint_eq(es_cost_table_size(t), 61);
    es_emb_sources src = fixture_sources();
    src.utt2spk = NULL; /* speakers from the table */
    es_validate_result *r = run(NULL, &src, t);
    ck_assert_uint_eq(es_validate_count(r, -1), 2);
    es_finding f;
    es_validate_finding(r, 0, &f);
    ck_assert_int_eq(f.check, ES_CHECK_MISSING_UTT_EMB);
    ck_assert_str_eq(f.key, "A01_9999");
    es_validate_finding(r, 1, &f);
    ck_assert_int_eq(f.check, ES_CHECK_DUPLICATE_AUDIO);
    ck_assert_str_eq(f.key, "A01_9999");
    ck_assert_str_eq(f.other, "A01_0001");
    es_validate_info info;
    es_validate_result_info(r, &info);
    ck_assert_uint_eq(info.utterances, 61);
    ck_assert_uint_eq(info.speakers, 6);
    es_validate_result_free(r);

    /* presence flags for measure */
    es_context *ctx = es_context_new();
    ck_assert_int_eq(es_cost_table_mark_embeddings(ctx, t, &src), ES_OK);
    for (size_t i = 0; i < es_cost_table_size(t); i++) {
        es_cost_row row;
        es_cost_table_row(t, i, &row);
        int other = !strcmp(row.key, "A01_9999");
        ck_assert_msg((!(row.flags & ES_FLAG_UTT_EMB)) == other, "%s", row.key);
        ck_assert(row.flags & ES_FLAG_SPK_EMB);
    }
    /* a speaker source without A06: its rows lose the flag */
    char spk[4096];
    snprintf(spk, sizeof spk, "%s/spk_no_a06.pt", dir);
    snprintf(cmd, sizeof cmd, "python3 '%s/tests/validate_cases.py' drop '%s' '%s' A06",
             getenv("ES_SOURCE_ROOT"), kaldi("spk2embedding.pt"), spk);
    ck_assert_int_eq(system(cmd), 0);
    es_emb_sources only_spk = {.spk_emb = spk};
    ck_assert_int_eq(es_cost_table_mark_embeddings(ctx, t, &only_spk), ES_OK);
    for (size_t i = 0; i < es_cost_table_size(t); i++) {
        es_cost_row row;
        es_cost_table_row(t, i, &row);
        ck_assert(!(row.flags & ES_FLAG_SPK_EMB) == !strcmp(row.spk, "A06"));
        ck_assert(!(row.flags & ES_FLAG_UTT_EMB) == !strcmp(row.key, "A01_9999")); /* kept */
    }
    es_emb_sources bad = {.utt_emb = "/nonexistent.pt"};
    ck_assert_int_eq(es_cost_table_mark_embeddings(ctx, t, &bad), ES_ERR_IO);
    es_context_free(ctx);
    es_cost_table_free(t);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}
END_TEST

/* ---- the matrix API ---------------------------------------------------------------------- */

START_TEST(test_host_api_contract)
{
    float rows[4 * 3] = {1, 0, 0, 0.9f, 0.1f, 0, 0, 1, 0, 1, 0, 0};
    int32_t spk[4] = {0, 0, 1, 7};
    const char *keys[4] = {"a", "b", "c", "d"};
    es_emb_matrix utt = {rows, ES_DTYPE_F32, 4, 3, keys};
    es_emb_speakers sp = {spk, 2};
    es_validate_settings s;
    es_validate_defaults(&s);
    es_context *ctx = es_context_new();
    es_validate_result *r = NULL;
    /* speaker 7 of 2 */
    ck_assert_int_eq(es_validate_matrices(ctx, &s, &utt, NULL, &sp, 0, &r), ES_ERR_USAGE);
    ck_assert_ptr_null(r);
    ck_assert(strstr(es_errmsg(ctx), "row 3: speaker 7"));
    spk[3] = -1;
    /* dimension 3, expected 192: every row wrong_dim, nothing else */
    ck_assert_int_eq(es_validate_matrices(ctx, &s, &utt, NULL, &sp, 0, &r), ES_OK);
    ck_assert_uint_eq(es_validate_count(r, -1), 4);
    ck_assert_uint_eq(es_validate_count(r, ES_CHECK_WRONG_DIM), 4);
    es_finding f;
    ck_assert_int_eq(es_validate_finding(r, 3, &f), ES_OK);
    ck_assert(f.value == 3 && !strcmp(f.key, "d") && f.row == 3);
    ck_assert_int_eq(es_validate_finding(r, 4, &f), ES_ERR_USAGE);
    es_validate_result_free(r);
    /* dimension right: the duplicate row d (of a) and nothing else */
    s.dim = 3;
    s.norm_ratio = 0;
    ck_assert_int_eq(es_validate_matrices(ctx, &s, &utt, NULL, &sp, 0, &r), ES_OK);
    ck_assert_uint_eq(es_validate_count(r, -1), 1);
    es_validate_finding(r, 0, &f);
    ck_assert(f.check == ES_CHECK_DUPLICATE_VECTOR && !strcmp(f.key, "d") && !strcmp(f.other, "a"));
    ck_assert_uint_eq(f.other_row, 0);
    es_validate_result_free(r);
    /* no keys: findings name rows */
    utt.keys = NULL;
    ck_assert_int_eq(es_validate_matrices(ctx, &s, &utt, NULL, NULL, 0, &r), ES_OK);
    es_validate_finding(r, 0, &f);
    ck_assert(!strcmp(f.key, "") && f.row == 3 && !strcmp(f.other, ""));
    es_validate_result_free(r);
    /* bad settings and arguments */
    s.norm_ratio = 0.5;
    ck_assert_int_eq(es_validate_matrices(ctx, &s, &utt, NULL, NULL, 0, &r), ES_ERR_USAGE);
    es_validate_defaults(&s);
    ck_assert_int_eq(es_validate_matrices(ctx, &s, &utt, NULL, NULL, 0, NULL), ES_ERR_USAGE);
    es_emb_matrix empty = {NULL, ES_DTYPE_F32, 2, 3, NULL};
    ck_assert_int_eq(es_validate_matrices(ctx, &s, &empty, NULL, NULL, 0, &r), ES_ERR_USAGE);
    es_validate_result_free(NULL);
    ck_assert_uint_eq(es_validate_count(NULL, 0), 0);
    for (int c = 0, v; c < ES_CHECK_COUNT; c++) {
        ck_assert_int_eq(es_enum_value(ES_ENUM_CHECK, es_enum_name(ES_ENUM_CHECK, c), &v), ES_OK);
        ck_assert_int_eq(v, c);
    }
    ck_assert_ptr_null(es_enum_name(ES_ENUM_CHECK, ES_CHECK_COUNT));
    int v = -7;
    ck_assert_int_eq(es_enum_value(ES_ENUM_CHECK, "frobnicate", &v), ES_ERR_USAGE);
    ck_assert_int_eq(v, -7);
    es_context_free(ctx);
}
END_TEST

/* Without a GPU (this machine) the device entry points say so. */
START_TEST(test_no_cuda_device)
{
    float rows[192] = {1};
    es_emb_matrix utt = {rows, ES_DTYPE_F32, 1, 192, NULL};
    es_validate_settings s;
    es_validate_defaults(&s);
    es_context *ctx = es_context_new();
    es_validate_result *r = NULL;
    int have_gpu = es_validate_matrices(ctx, &s, &utt, NULL, NULL, 1, &r) != ES_ERR_UNSUPPORTED;
    if (have_gpu) { /* a GPU machine: tests/test_validate_cuda.c covers it */
        es_validate_result_free(r);
        es_context_free(ctx);
        return;
    }
    ck_assert_msg(strstr(es_errmsg(ctx), "no CUDA device"), "%s", es_errmsg(ctx));
    s.device = ES_DEVICE_CUDA;
    ck_assert_int_eq(es_validate_matrices(ctx, &s, &utt, NULL, NULL, 0, &r), ES_ERR_UNSUPPORTED);
    ck_assert(strstr(es_errmsg(ctx), "no CUDA device"));
    s.device = ES_DEVICE_AUTO;
    ck_assert_int_eq(es_validate_matrices(ctx, &s, &utt, NULL, NULL, 0, &r), ES_OK);
    ck_assert_str_eq(es_errmsg(ctx), "");
    es_validate_info info;
    es_validate_result_info(r, &info);
    ck_assert_int_eq(info.device, ES_DEVICE_CPU);
    es_validate_result_free(r);
    es_context_free(ctx);
}
END_TEST

/* ---- the JSON report -------------------------------------------------------------------------- */

START_TEST(test_json_report)
{
    float rows[3 * 4] = {1, 2, 3, 4, NAN, 0, 0, 1, 1, 2, 3, 4};
    const char *keys[3] = {"u1", "u\"2\t", "u3"};
    es_emb_matrix utt = {rows, ES_DTYPE_F32, 3, 4, keys};
    es_validate_settings s;
    es_validate_defaults(&s);
    s.dim = 4;
    es_context *ctx = es_context_new();
    es_validate_result *r = NULL;
    ck_assert_int_eq(es_validate_matrices(ctx, &s, &utt, NULL, NULL, 0, &r), ES_OK);
    char *dir = make_temp_dir(), path[4096];
    snprintf(path, sizeof path, "%s/report.json", dir);
    ck_assert_int_eq(es_validate_write_json(ctx, r, path), ES_OK);
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    ck_assert_msg(root != NULL, "%s", err.text);
    ck_assert_str_eq(json_string_value(json_object_get(root, "report")), "validate");
    json_t *counts = json_object_get(root, "counts");
    ck_assert_int_eq(json_object_size(counts), ES_CHECK_COUNT);
    ck_assert_int_eq(json_integer_value(json_object_get(counts, "nan")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(counts, "duplicate_vector")), 1);
    json_t *fs = json_object_get(root, "findings");
    ck_assert_int_eq(json_array_size(fs), 2);
    json_t *nan = json_array_get(fs, 0), *dup = json_array_get(fs, 1);
    ck_assert_str_eq(json_string_value(json_object_get(nan, "check")), "nan");
    ck_assert_str_eq(json_string_value(json_object_get(nan, "key")), "u\"2\t");
    ck_assert_str_eq(json_string_value(json_object_get(nan, "kind")), "utt");
    ck_assert_int_eq(json_integer_value(json_object_get(nan, "value")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(nan, "row")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(dup, "value")), "u1");
    ck_assert_str_eq(json_string_value(json_object_get(dup, "key")), "u3");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(root, "summary"), "device")), "cpu");
    json_decref(root);
    /* unwritable destination: an error naming it, nothing left behind */
    snprintf(path, sizeof path, "%s/no/such/dir/report.json", dir);
    ck_assert_int_eq(es_validate_write_json(ctx, r, path), ES_ERR_IO);
    ck_assert(strstr(es_errmsg(ctx), "report.json"));
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "test $(ls '%s' | wc -l) = 1 && rm -rf '%s'", dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
    es_validate_result_free(r);
    es_context_free(ctx);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("validate");
    TCase *f = tcase_create("fixtures");
    tcase_set_timeout(f, 120);
    tcase_add_test(f, test_fixture_clean);
    tcase_add_test(f, test_fixture_cosine_range);
    tcase_add_test(f, test_fixture_planted);
    tcase_add_test(f, test_parquet_source);
    tcase_add_test(f, test_table_missing_and_duplicate_audio);
    suite_add_tcase(s, f);
    TCase *a = tcase_create("api");
    tcase_add_test(a, test_host_api_contract);
    tcase_add_test(a, test_no_cuda_device);
    tcase_add_test(a, test_json_report);
    suite_add_tcase(s, a);
    return run_suite(s);
}
