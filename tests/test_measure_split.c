/* es_measure_job: measuring one job in several processes (what `mpirun equishard
 * measure` does, without MPI). Parts merged in any split must give the table
 * es_measure gives — the same bytes, the same skips, the same first error — and a
 * corrupt part must be an error, never a crash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_helpers.h"
#include "equishard/equishard_experimental.h"

static char root[4096];

static void settings(es_measure_settings *s, int skip, int hash)
{
    snprintf(root, sizeof root, "%s", fixture_path("corpus_a"));
    es_measure_defaults(s);
    s->threads = 2;
    s->root = root;
    s->hash = hash;
    s->on_error = skip ? ES_ON_ERROR_SKIP : ES_ON_ERROR_FAIL;
}

/* Inputs of every format, as absolute paths (fixture_path's buffer is static). */
typedef struct inputs {
    char paths[8][4300];
    const char *v[8];
    size_t n;
} inputs;

static void add_input(inputs *in, const char *path)
{
    snprintf(in->paths[in->n], sizeof in->paths[0], "%s", path);
    in->v[in->n] = in->paths[in->n];
    in->n++;
}

static void all_formats(inputs *in)
{
    static const char *const rel[] = {"corpus_a/shards/shards.list", "corpus_a/shards-gz/shards.list",
                                      "corpus_a/shards-zst/shards.list", "corpus_a/raw.list",
                                      "corpus_a/kaldi", "corpus_a/parquet/data.list"};
    in->n = 0;
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++)
        add_input(in, fixture_path(rel[i]));
}

/* The table as es_cost_table_write_fd writes it, then its skips one per line, so
 * that one memcmp compares both. malloc'd. */
static char *table_text(const es_cost_table *t, size_t *len)
{
    FILE *tmp = tmpfile();
    ck_assert_ptr_nonnull(tmp);
    es_context *ctx = es_context_new();
    ck_assert_int_eq(es_cost_table_write_fd(ctx, t, fileno(tmp), 0), ES_OK);
    es_context_free(ctx);
    fseek(tmp, 0, SEEK_END);
    for (size_t i = 0; i < skip_count(t); i++)
        fprintf(tmp, "skip: %s\n", es_cost_table_skip(t, i));
    *len = (size_t)ftell(tmp);
    char *text = malloc(*len + 1);
    rewind(tmp);
    ck_assert_uint_eq(fread(text, 1, *len, tmp), *len);
    fclose(tmp);
    return text;
}

/* What "mpirun -np parts" does: job k measures the units owner[] gives it; jobs
 * 1.. send parts to job 0, which finishes. Returns the status; *out the table. */
static int split_measure(const es_measure_settings *s, const inputs *in, uint32_t parts,
                         const uint32_t *fixed_owner, es_cost_table **out, char *err, size_t errlen)
{
    es_context *ctx = es_context_new();
    es_measure_job *jobs[8] = {0};
    for (uint32_t k = 0; k < parts; k++)
        ck_assert_int_eq(es_measure_job_new(ctx, s, in->v, in->n, &jobs[k]), ES_OK);
    size_t n = es_measure_job_units(jobs[0]);
    uint64_t *bytes = calloc(n + 1, sizeof *bytes);
    uint32_t *owner = calloc(n + 1, sizeof *owner);
    ck_assert_int_eq(es_measure_job_sizes(ctx, jobs[0], 0, n, bytes), ES_OK);
    ck_assert_int_eq(es_measure_assign(ctx, bytes, n, parts, owner), ES_OK);
    if (fixed_owner)
        memcpy(owner, fixed_owner, n * sizeof *owner);
    for (uint32_t k = 0; k < parts; k++)
        ck_assert_int_eq(es_measure_job_run(ctx, jobs[k], owner, k), ES_OK);
    int rc = ES_OK;
    for (uint32_t k = 1; k < parts && rc == ES_OK; k++) {
        const void *data;
        size_t len;
        ck_assert_int_eq(es_measure_job_part(ctx, jobs[k], &data, &len), ES_OK);
        rc = es_measure_job_add_part(ctx, jobs[0], data, len);
    }
    *out = NULL;
    if (rc == ES_OK)
        rc = es_measure_job_finish(ctx, jobs[0], out);
    snprintf(err, errlen, "%s", es_errmsg(ctx));
    for (uint32_t k = 0; k < parts; k++)
        es_measure_job_free(jobs[k]);
    free(bytes);
    free(owner);
    es_context_free(ctx);
    return rc;
}

static int whole_measure(const es_measure_settings *s, const inputs *in, es_cost_table **out,
                         char *err, size_t errlen)
{
    es_context *ctx = es_context_new();
    int rc = es_measure(ctx, s, in->v, in->n, out);
    snprintf(err, errlen, "%s", es_errmsg(ctx));
    es_context_free(ctx);
    return rc;
}

/* Same bytes as es_measure for 1..4 parts, with and without hashes and skips. */
static void check_equal(const es_measure_settings *s, const inputs *in, size_t want_rows)
{
    char err[1024];
    es_cost_table *whole = NULL;
    ck_assert_int_eq(whole_measure(s, in, &whole, err, sizeof err), ES_OK);
    ck_assert_uint_eq(es_cost_table_size(whole), want_rows);
    size_t want_len, got_len;
    char *want = table_text(whole, &want_len);
    for (uint32_t parts = 1; parts <= 4; parts++) {
        es_cost_table *t = NULL;
        ck_assert_msg(split_measure(s, in, parts, NULL, &t, err, sizeof err) == ES_OK, "%s", err);
        char *got = table_text(t, &got_len);
        ck_assert_uint_eq(got_len, want_len);
        ck_assert_msg(memcmp(got, want, want_len) == 0, "%u parts differ", parts);
        free(got);
        es_cost_table_free(t);
    }
    free(want);
    es_cost_table_free(whole);
}

START_TEST(split_equals_measure)
{
    inputs in;
    all_formats(&in);
    es_measure_settings s;
    settings(&s, 0, 1);
    check_equal(&s, &in, 360);
    settings(&s, 1, 0);
    check_equal(&s, &in, 360);
}
END_TEST

/* What `mpirun equishard plan` does: every job is a merger. Each makes its
 * part, then adds every other job's part while its own is still to be sent
 * (es_measure_job_add_part must leave that part's bytes alone), and each
 * finishes es_measure's table. */
START_TEST(every_process_merges)
{
    inputs in;
    all_formats(&in);
    es_measure_settings s;
    settings(&s, 0, 1);
    char err[1024];
    es_cost_table *whole = NULL;
    ck_assert_int_eq(whole_measure(&s, &in, &whole, err, sizeof err), ES_OK);
    size_t want_len, got_len;
    char *want = table_text(whole, &want_len);
    es_context *ctx = es_context_new();
    for (uint32_t parts = 2; parts <= 4; parts++) {
        es_measure_job *jobs[4] = {0};
        const void *data[4];
        size_t len[4];
        char *copy[4];
        for (uint32_t k = 0; k < parts; k++)
            ck_assert_int_eq(es_measure_job_new(ctx, &s, in.v, in.n, &jobs[k]), ES_OK);
        size_t n = es_measure_job_units(jobs[0]);
        uint64_t *bytes = calloc(n + 1, sizeof *bytes);
        uint32_t *owner = calloc(n + 1, sizeof *owner);
        ck_assert_int_eq(es_measure_job_sizes(ctx, jobs[0], 0, n, bytes), ES_OK);
        ck_assert_int_eq(es_measure_assign(ctx, bytes, n, parts, owner), ES_OK);
        for (uint32_t k = 0; k < parts; k++) {
            ck_assert_int_eq(es_measure_job_run(ctx, jobs[k], owner, k), ES_OK);
            ck_assert_int_eq(es_measure_job_part(ctx, jobs[k], &data[k], &len[k]), ES_OK);
            copy[k] = malloc(len[k]);
            memcpy(copy[k], data[k], len[k]);
        }
        for (uint32_t k = 0; k < parts; k++)
            for (uint32_t j = 0; j < parts; j++)
                if (j != k)
                    ck_assert_msg(es_measure_job_add_part(ctx, jobs[k], copy[j], len[j]) == ES_OK,
                                  "%s", es_errmsg(ctx));
        for (uint32_t k = 0; k < parts; k++) {
            ck_assert_msg(memcmp(data[k], copy[k], len[k]) == 0, "job %u's part changed", k);
            es_cost_table *t = NULL;
            ck_assert_msg(es_measure_job_finish(ctx, jobs[k], &t) == ES_OK, "%s", es_errmsg(ctx));
            char *got = table_text(t, &got_len);
            ck_assert_uint_eq(got_len, want_len);
            ck_assert_msg(memcmp(got, want, want_len) == 0, "%u parts: job %u differs", parts, k);
            free(got);
            es_cost_table_free(t);
            es_measure_job_free(jobs[k]);
            free(copy[k]);
        }
        free(bytes);
        free(owner);
    }
    es_context_free(ctx);
    free(want);
    es_cost_table_free(whole);
}
END_TEST

/* A list with a truncated shard and a missing one. */
static void bad_list(inputs *in, char **dir_out)
{
    char *dir = make_temp_dir();
    size_t len;
    unsigned char *tar = read_whole_file(fixture_path("corpus_a/shards/shards_000000002.tar"), &len);
    ck_assert_ptr_nonnull(tar);
    char path[4200], list[8192];
    snprintf(path, sizeof path, "%s/cut.tar", dir);
    FILE *fp = fopen(path, "wb");
    fwrite(tar, 1, len / 2, fp);
    fclose(fp);
    free(tar);
    int n = snprintf(list, sizeof list,
                     "shards/shards_000000000.tar\n%s/cut.tar\nshards/shards_000000001.tar\n"
                     "shards/missing.tar\nshards/shards_000000003.tar\n", dir);
    snprintf(path, sizeof path, "%s/bad.list", dir);
    fp = fopen(path, "wb");
    fwrite(list, 1, (size_t)n, fp);
    fclose(fp);
    in->n = 0;
    add_input(in, path);
    add_input(in, fixture_path("corpus_a/raw.list"));
    *dir_out = dir;
}

static void remove_bad_list(char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/cut.tar", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/bad.list", dir);
    unlink(path);
    rmdir(dir);
    free(dir);
}

/* --on-error skip: the same rows and the same skip lines in any split. */
START_TEST(split_skips_like_measure)
{
    inputs in;
    char *dir;
    bad_list(&in, &dir);
    es_measure_settings s;
    settings(&s, 1, 0);
    check_equal(&s, &in, 16 + 16 + 12 + 60);
    remove_bad_list(dir);
}
END_TEST

/* fail: the error of the first bad shard in list order, wherever it was measured
 * and whichever part failed first. */
START_TEST(split_fails_like_measure)
{
    inputs in;
    char *dir;
    bad_list(&in, &dir);
    es_measure_settings s;
    settings(&s, 0, 0);
    char want[1024], err[1024];
    es_cost_table *t = NULL;
    int want_rc = whole_measure(&s, &in, &t, want, sizeof want);
    ck_assert_int_eq(want_rc, ES_ERR_FORMAT);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(want, "cut.tar") != NULL, "%s", want);
    for (uint32_t parts = 1; parts <= 4; parts++) {
        ck_assert_int_eq(split_measure(&s, &in, parts, NULL, &t, err, sizeof err), want_rc);
        ck_assert_str_eq(err, want);
        ck_assert_ptr_null(t);
    }
    /* cut.tar (unit 1) on part 1, missing.tar (unit 3) on part 0: still cut.tar */
    uint32_t owner[5 + 2] = {0, 1, 0, 0, 0, 0, 0};
    ck_assert_int_eq(split_measure(&s, &in, 2, owner, &t, err, sizeof err), want_rc);
    ck_assert_str_eq(err, want);
    remove_bad_list(dir);
}
END_TEST

/* LPT: largest first, each to the least loaded; ties by index. */
START_TEST(assign_by_size)
{
    es_context *ctx = es_context_new();
    const uint64_t bytes[] = {10, 50, 30, 30, 0, 20};
    uint32_t owner[6];
    ck_assert_int_eq(es_measure_assign(ctx, bytes, 6, 2, owner), ES_OK);
    /* 50 → 0; 30 (unit 2) → 1; 30 (unit 3) → 1 (30 < 50); 20 → 0; 10 → 1; 0 → 0 or 1 */
    ck_assert_uint_eq(owner[1], 0);
    ck_assert_uint_eq(owner[2], 1);
    ck_assert_uint_eq(owner[3], 1);
    ck_assert_uint_eq(owner[5], 0);
    ck_assert_uint_eq(owner[0], 1);
    ck_assert_uint_eq(owner[4], 0); /* 70 vs 70: the lower index */
    uint32_t again[6];
    ck_assert_int_eq(es_measure_assign(ctx, bytes, 6, 2, again), ES_OK);
    ck_assert_int_eq(memcmp(owner, again, sizeof owner), 0);
    ck_assert_int_eq(es_measure_assign(ctx, bytes, 6, 8, owner), ES_OK);
    for (int i = 0; i < 6; i++)
        ck_assert_uint_lt(owner[i], 8);
    ck_assert_int_eq(es_measure_assign(ctx, bytes, 6, 1, owner), ES_OK);
    for (int i = 0; i < 6; i++)
        ck_assert_uint_eq(owner[i], 0);
    ck_assert_int_eq(es_measure_assign(ctx, NULL, 0, 3, NULL), ES_OK);
    ck_assert_int_eq(es_measure_assign(ctx, bytes, 6, 0, owner), ES_ERR_USAGE);
    es_context_free(ctx);
}
END_TEST

/* Units and their sizes: 4 shards (the files' sizes), then Kaldi's 60 entries in
 * chunks of 32 (their WAV files); a missing file counts 0. */
START_TEST(units_and_sizes)
{
    inputs in = {0};
    add_input(&in, fixture_path("corpus_a/shards/shards.list"));
    add_input(&in, fixture_path("corpus_a/kaldi"));
    es_measure_settings s;
    settings(&s, 0, 0);
    es_context *ctx = es_context_new();
    es_measure_job *j = NULL;
    ck_assert_int_eq(es_measure_job_new(ctx, &s, in.v, in.n, &j), ES_OK);
    ck_assert_uint_eq(es_measure_job_units(j), 4 + 2);
    uint64_t bytes[6];
    ck_assert_int_eq(es_measure_job_sizes(ctx, j, 0, 6, bytes), ES_OK);
    struct stat st;
    ck_assert_int_eq(stat(fixture_path("corpus_a/shards/shards_000000001.tar"), &st), 0);
    ck_assert_uint_eq(bytes[1], (uint64_t)st.st_size);
    uint64_t wavs = bytes[4] + bytes[5];
    ck_assert_uint_gt(bytes[5], 0);
    uint64_t shards = bytes[0] + bytes[1] + bytes[2] + bytes[3];
    ck_assert_uint_gt(shards, wavs); /* tar = WAVs + text + 512-byte headers */
    uint64_t one;
    ck_assert_int_eq(es_measure_job_sizes(ctx, j, 5, 1, &one), ES_OK);
    ck_assert_uint_eq(one, bytes[5]);
    ck_assert_int_eq(es_measure_job_sizes(ctx, j, 5, 2, bytes), ES_ERR_USAGE);
    ck_assert_int_eq(es_measure_job_sizes(ctx, j, 7, 0, bytes), ES_ERR_USAGE);
    es_measure_job_free(j);
    ck_assert_uint_eq(es_measure_job_units(NULL), 0);
    es_measure_job_free(NULL);
    /* an input that cannot be read fails at once, as es_measure does */
    const char *missing[] = {"/nonexistent/data.list"};
    ck_assert_int_eq(es_measure_job_new(ctx, &s, missing, 1, &j), ES_ERR_IO);
    ck_assert_ptr_null(j);
    es_context_free(ctx);
}
END_TEST

/* A part that is cut, altered, repeated or from another job is an error. */
START_TEST(bad_parts)
{
    inputs in;
    all_formats(&in);
    es_measure_settings s;
    settings(&s, 1, 1);
    es_context *ctx = es_context_new();
    es_measure_job *a = NULL, *b = NULL, *other = NULL;
    ck_assert_int_eq(es_measure_job_new(ctx, &s, in.v, in.n, &a), ES_OK);
    ck_assert_int_eq(es_measure_job_new(ctx, &s, in.v, in.n, &b), ES_OK);
    ck_assert_int_eq(es_measure_job_new(ctx, &s, in.v, 1, &other), ES_OK);
    size_t n = es_measure_job_units(a);
    uint32_t *owner = calloc(n, sizeof *owner);
    for (size_t u = 0; u < n; u++)
        owner[u] = u % 3 == 1;
    ck_assert_int_eq(es_measure_job_run(ctx, b, owner, 1), ES_OK);
    const void *data;
    size_t len;
    ck_assert_int_eq(es_measure_job_part(ctx, b, &data, &len), ES_OK);
    unsigned char *copy = malloc(len);
    memcpy(copy, data, len);
    /* every truncation fails cleanly; the job is then only freed */
    for (size_t cut = 0; cut < len; cut += 1 + cut / 8) {
        es_measure_job *j = NULL;
        ck_assert_int_eq(es_measure_job_new(ctx, &s, in.v, in.n, &j), ES_OK);
        int rc = es_measure_job_add_part(ctx, j, copy, cut);
        ck_assert_msg(rc == ES_ERR_FORMAT, "cut at %zu: %s", cut, es_errmsg(ctx));
        es_measure_job_free(j);
    }
    copy[0] = 'X';
    ck_assert_int_eq(es_measure_job_add_part(ctx, a, copy, len), ES_ERR_FORMAT);
    ck_assert_int_eq(es_measure_job_add_part(ctx, other, data, len), ES_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(es_errmsg(ctx), "units"));
    /* the part once: fine; twice: a unit measured twice */
    ck_assert_int_eq(es_measure_job_add_part(ctx, a, data, len), ES_OK);
    ck_assert_int_eq(es_measure_job_add_part(ctx, a, data, len), ES_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(es_errmsg(ctx), "twice"));
    /* units nobody measured: finishing says so */
    es_cost_table *t = NULL;
    ck_assert_int_eq(es_measure_job_finish(ctx, other, &t), ES_ERR_INTERNAL);
    ck_assert_ptr_null(t);
    ck_assert_int_eq(es_measure_job_add_part(ctx, NULL, data, len), ES_ERR_USAGE);
    ck_assert_int_eq(es_measure_job_run(ctx, NULL, NULL, 0), ES_ERR_USAGE);
    free(copy);
    free(owner);
    es_measure_job_free(a);
    es_measure_job_free(b);
    es_measure_job_free(other);
    es_context_free(ctx);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("measure_split");
    TCase *tc = tcase_create("split");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, split_equals_measure);
    tcase_add_test(tc, every_process_merges);
    tcase_add_test(tc, split_skips_like_measure);
    tcase_add_test(tc, split_fails_like_measure);
    tcase_add_test(tc, assign_by_size);
    tcase_add_test(tc, units_and_sizes);
    tcase_add_test(tc, bad_parts);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
