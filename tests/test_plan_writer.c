/* es_plan_write in stages (es_plan_write_begin / _shards / _finish): an owner
 * and a joiner writing one OUTDIR, shards split between them, give byte for
 * byte es_plan_write's OUTDIR (tar and parquet); finishing before every shard
 * is written, joining a folder that is not there, a joiner finishing or a
 * shard range past N are refused, and the previous OUTDIR stays as it was.
 * The digest tells plans apart. (The MPI command over this API:
 * tests/cli/test_cli_mpi_reshard.sh.) */
#include <dirent.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_helpers.h"
#include "equishard/equishard_experimental.h"
#include "costs/cost_table.h"

static es_cost_table *measure(const char *list)
{
    es_context *ctx = es_context_new();
    es_measure_settings ms;
    es_measure_defaults(&ms);
    ms.root = fixture_path("corpus_a");
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", fixture_path("corpus_a"), list);
    const char *in = path;
    es_cost_table *t = NULL;
    ck_assert_msg(es_measure(ctx, &ms, &in, 1, &t) == ES_OK, "%s", es_errmsg(ctx));
    es_context_free(ctx);
    return t;
}

/* Corpus A as a reshard of 2 ranks × 2 workers × m shards (every utterance kept). */
static es_plan *reshard_plan(const es_cost_table *t, uint32_t m)
{
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = 2;
    s.workers = 2;
    s.mode = ES_PLAN_RESHARD;
    s.shards_per_worker = m;
    s.root = fixture_path("corpus_a");
    s.model.min_length = 0;
    s.model.token_max_length = 100000;
    es_context *ctx = es_context_new();
    es_plan *p = NULL;
    ck_assert_msg(es_plan_build(ctx, &s, t, &p) == ES_OK, "%s", es_errmsg(ctx));
    es_context_free(ctx);
    return p;
}

static uint32_t shards_of(const es_plan *p)
{
    es_plan_reshard_info info;
    ck_assert_int_eq(es_plan_reshard_info_get(p, &info), ES_OK);
    return info.shards;
}

/* Every file of folder a is in b with the same bytes, and b has no others. */
static void assert_same_folder(const char *a, const char *b)
{
    int files[2] = {0, 0};
    for (int side = 0; side < 2; side++) {
        DIR *d = opendir(side ? b : a);
        ck_assert_ptr_nonnull(d);
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            files[side]++;
            if (side)
                continue;
            char pa[4400], pb[4400];
            snprintf(pa, sizeof pa, "%s/%s", a, e->d_name);
            snprintf(pb, sizeof pb, "%s/%s", b, e->d_name);
            size_t la, lb;
            unsigned char *x = read_whole_file(pa, &la), *y = read_whole_file(pb, &lb);
            ck_assert_msg(x && y && la == lb && memcmp(x, y, la) == 0, "%s differs", e->d_name);
            free(x);
            free(y);
        }
        closedir(d);
    }
    ck_assert_int_eq(files[0], files[1]);
    ck_assert_int_ge(files[0], 5);
}

static int temp_folders_in(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        n += strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    return n;
}

/* The owner writes [0, split), a joiner [split, N); then the owner finishes. */
static void write_in_two(const es_plan *p, const char *out, uint32_t split)
{
    es_context *ctx = es_context_new();
    es_plan_writer *owner, *joiner;
    ck_assert_msg(es_plan_write_begin(ctx, p, out, NULL, &owner) == ES_OK, "%s", es_errmsg(ctx));
    const char *folder = es_plan_writer_folder(owner);
    ck_assert_ptr_nonnull(folder);
    ck_assert_msg(es_plan_write_begin(ctx, p, out, folder, &joiner) == ES_OK, "%s",
                  es_errmsg(ctx));
    ck_assert_uint_eq(es_plan_writer_digest(owner), es_plan_writer_digest(joiner));
    uint32_t n = shards_of(p);
    ck_assert_int_eq(es_plan_write_shards(ctx, joiner, split, n), ES_OK);
    ck_assert_int_eq(es_plan_write_shards(ctx, owner, 0, split), ES_OK);
    /* a joiner cannot complete the folder, nor make it disappear */
    ck_assert_int_eq(es_plan_write_finish(ctx, joiner, NULL, 0), ES_ERR_USAGE);
    es_plan_writer_free(joiner);
    ck_assert_int_eq(access(folder, F_OK), 0);
    ck_assert_msg(es_plan_write_finish(ctx, owner, NULL, 0) == ES_OK, "%s", es_errmsg(ctx));
    es_plan_writer_free(owner);
    es_context_free(ctx);
}

static void staged_equals_one_call(const char *list, uint32_t m)
{
    es_cost_table *t = measure(list);
    es_plan *p = reshard_plan(t, m);
    char out[4400], ref[4400];
    snprintf(out, sizeof out, "%s/out", test_dir());
    snprintf(ref, sizeof ref, "%s/ref", test_dir());
    es_context *ctx = es_context_new();
    ck_assert_msg(es_plan_write(ctx, p, out, NULL, 0) == ES_OK, "%s", es_errmsg(ctx));
    ck_assert_int_eq(rename(out, ref), 0); /* the same OUTDIR path: data.list agrees too */
    uint32_t n = shards_of(p);
    for (uint32_t split = 0; split <= n; split += n / 2) {
        write_in_two(p, out, split);
        assert_same_folder(ref, out);
        ck_assert_int_eq(remove_tree(out), 0);
    }
    ck_assert_int_eq(temp_folders_in(test_dir()), 0);
    es_context_free(ctx);
    es_plan_free(p);
    es_cost_table_free(t);
}

START_TEST(tar_staged_equals_one_call)
{
    staged_equals_one_call("shards-zst/shards.list", 3);
}
END_TEST

START_TEST(parquet_staged_equals_one_call)
{
    staged_equals_one_call("parquet/data.list", 2);
}
END_TEST

/* Files in dir whose name holds `part` (dot files too). */
static int files_named(const char *dir, const char *part)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        n += strstr(e->d_name, part) != NULL;
    closedir(d);
    return n;
}

/* Compressed sources decompressed by two writers, each its share
 * (es_plan_write_expand_sources); then both read the plain copies, with the
 * sources themselves gone: es_plan_write's OUTDIR, and no copy left in it. */
START_TEST(expanded_sources_equal_one_call)
{
    static const char *const names[] = {"shards_000000000.tar.gz", "shards_000000001.tar.gz",
                                        "shards_000000002.tar.gz", "shards_000000003.tar.gz"};
    char dir[4400], path[4600], list[512] = "";
    snprintf(dir, sizeof dir, "%s/gz", test_dir());
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    for (int i = 0; i < 4; i++) {
        char src[4400];
        snprintf(src, sizeof src, "%s/shards-gz/%s", fixture_path("corpus_a"), names[i]);
        size_t len;
        unsigned char *bytes = read_whole_file(src, &len);
        ck_assert_ptr_nonnull(bytes);
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *fp = fopen(path, "wb");
        ck_assert_uint_eq(fwrite(bytes, 1, len, fp), len);
        fclose(fp);
        free(bytes);
        strcat(strcat(list, names[i]), "\n");
    }
    snprintf(path, sizeof path, "%s/shards.list", dir);
    FILE *fp = fopen(path, "wb");
    fputs(list, fp);
    fclose(fp);

    es_context *ctx = es_context_new();
    es_measure_settings ms;
    es_measure_defaults(&ms);
    ms.root = dir;
    const char *in = path;
    es_cost_table *t = NULL;
    ck_assert_msg(es_measure(ctx, &ms, &in, 1, &t) == ES_OK, "%s", es_errmsg(ctx));
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = 2;
    s.workers = 2;
    s.mode = ES_PLAN_RESHARD;
    s.shards_per_worker = 3;
    s.root = dir;
    s.model.min_length = 0;
    s.model.token_max_length = 100000;
    es_plan *p = NULL;
    ck_assert_msg(es_plan_build(ctx, &s, t, &p) == ES_OK, "%s", es_errmsg(ctx));
    char out[4400], ref[4400];
    snprintf(out, sizeof out, "%s/out", test_dir());
    snprintf(ref, sizeof ref, "%s/ref", test_dir());
    ck_assert_msg(es_plan_write(ctx, p, out, NULL, 0) == ES_OK, "%s", es_errmsg(ctx));
    ck_assert_int_eq(rename(out, ref), 0);

    es_plan_writer *owner, *joiner;
    ck_assert_int_eq(es_plan_write_begin(ctx, p, out, NULL, &owner), ES_OK);
    const char *folder = es_plan_writer_folder(owner);
    ck_assert_int_eq(es_plan_write_begin(ctx, p, out, folder, &joiner), ES_OK);
    ck_assert_msg(es_plan_write_expand_sources(ctx, owner, 0, 2) == ES_OK, "%s", es_errmsg(ctx));
    ck_assert_int_eq(files_named(folder, ".source-"), 2); /* LPT: two sources a part */
    ck_assert_msg(es_plan_write_expand_sources(ctx, joiner, 1, 2) == ES_OK, "%s",
                  es_errmsg(ctx));
    ck_assert_int_eq(files_named(folder, ".source-"), 4);
    for (int i = 0; i < 4; i++) { /* a plain tar: ustar's magic in the first header */
        snprintf(path, sizeof path, "%s/.source-%09d.tar", folder, i);
        size_t len;
        unsigned char *bytes = read_whole_file(path, &len);
        ck_assert_msg(bytes && len > 512 && memcmp(bytes + 257, "ustar", 5) == 0, "%s", path);
        free(bytes);
    }
    ck_assert_int_eq(es_plan_write_use_copies(ctx, owner), ES_OK);
    ck_assert_int_eq(es_plan_write_use_copies(ctx, joiner), ES_OK);
    for (int i = 0; i < 4; i++) { /* from here on only the copies can be read */
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        ck_assert_int_eq(unlink(path), 0);
    }
    uint32_t n = shards_of(p);
    ck_assert_msg(es_plan_write_shards(ctx, joiner, n / 2, n) == ES_OK, "%s", es_errmsg(ctx));
    ck_assert_msg(es_plan_write_shards(ctx, owner, 0, n / 2) == ES_OK, "%s", es_errmsg(ctx));
    es_plan_writer_free(joiner);
    ck_assert_msg(es_plan_write_finish(ctx, owner, NULL, 0) == ES_OK, "%s", es_errmsg(ctx));
    es_plan_writer_free(owner);
    assert_same_folder(ref, out);
    ck_assert_int_eq(files_named(out, ".source-"), 0);
    ck_assert_int_eq(temp_folders_in(test_dir()), 0);
    es_plan_free(p);
    es_cost_table_free(t);
    es_context_free(ctx);
}
END_TEST

/* Finishing with a shard missing fails; the previous OUTDIR is untouched. */
START_TEST(finish_needs_every_shard)
{
    es_cost_table *t = measure("shards/shards.list");
    es_plan *p = reshard_plan(t, 2);
    char out[4400], ref[4400];
    snprintf(out, sizeof out, "%s/out", test_dir());
    snprintf(ref, sizeof ref, "%s/ref", test_dir());
    es_context *ctx = es_context_new();
    ck_assert_int_eq(es_plan_write(ctx, p, out, NULL, 0), ES_OK);
    ck_assert_int_eq(rename(out, ref), 0);
    ck_assert_int_eq(es_plan_write(ctx, p, out, NULL, 0), ES_OK); /* the previous OUTDIR */
    es_plan_writer *w;
    ck_assert_int_eq(es_plan_write_begin(ctx, p, out, NULL, &w), ES_OK);
    uint32_t n = shards_of(p);
    ck_assert_uint_eq(n, 8);
    ck_assert_int_eq(es_plan_write_shards(ctx, w, 0, n - 1), ES_OK);
    ck_assert_int_eq(es_plan_write_finish(ctx, w, NULL, 0), ES_ERR_USAGE);
    ck_assert_msg(strstr(es_errmsg(ctx), "new shard 7 was not written"), "%s", es_errmsg(ctx));
    ck_assert_ptr_null(es_plan_writer_folder(w));
    es_plan_writer_free(w);
    ck_assert_int_eq(temp_folders_in(test_dir()), 0);
    assert_same_folder(ref, out);
    /* an owner freed without finishing removes its folder, nothing else */
    ck_assert_int_eq(es_plan_write_begin(ctx, p, out, NULL, &w), ES_OK);
    ck_assert_int_eq(es_plan_write_shards(ctx, w, 0, 3), ES_OK);
    es_plan_writer_free(w);
    ck_assert_int_eq(temp_folders_in(test_dir()), 0);
    assert_same_folder(ref, out);
    es_context_free(ctx);
    es_plan_free(p);
    es_cost_table_free(t);
}
END_TEST

START_TEST(misuse_is_refused)
{
    es_cost_table *t = measure("shards/shards.list");
    es_plan *p = reshard_plan(t, 1), *q = reshard_plan(t, 2);
    char out[4400];
    snprintf(out, sizeof out, "%s/out", test_dir());
    es_context *ctx = es_context_new();
    es_plan_writer *w, *x, *y;
    /* a folder this process cannot see */
    ck_assert_int_eq(es_plan_write_begin(ctx, p, out, test_path("out.tmp.gone00"), &w),
                     ES_ERR_IO);
    ck_assert_ptr_nonnull(strstr(es_errmsg(ctx), "is not visible here"));
    ck_assert_int_eq(es_plan_write_begin(ctx, p, out, NULL, &w), ES_OK);
    ck_assert_int_eq(es_plan_write_begin(ctx, p, out, es_plan_writer_folder(w), &x), ES_OK);
    ck_assert_int_eq(es_plan_write_begin(ctx, q, out, es_plan_writer_folder(w), &y), ES_OK);
    /* the same plan, the same digest; another plan, another */
    ck_assert_uint_eq(es_plan_writer_digest(w), es_plan_writer_digest(x));
    ck_assert_uint_ne(es_plan_writer_digest(w), es_plan_writer_digest(y));
    ck_assert_int_eq(es_plan_write_shards(ctx, w, 0, shards_of(p) + 1), ES_ERR_USAGE);
    ck_assert_int_eq(es_plan_write_shards(ctx, w, 2, 1), ES_ERR_USAGE);
    ck_assert_int_eq(es_plan_write_expand_sources(ctx, w, 1, 1), ES_ERR_USAGE);
    ck_assert_int_eq(es_plan_write_use_copies(ctx, NULL), ES_ERR_USAGE);
    es_plan_writer_free(y);
    es_plan_writer_free(x);
    es_plan_writer_free(w);
    ck_assert_int_eq(temp_folders_in(test_dir()), 0);
    ck_assert_int_ne(access(out, F_OK), 0);
    /* shards are reshard's: a batch plan has none to write */
    es_plan_settings s;
    es_plan_defaults(&s);
    s.world_size = 2;
    s.mode = ES_PLAN_BATCH;
    s.root = fixture_path("corpus_a"); /* where the table's shards are */
    es_plan *b = NULL;
    ck_assert_int_eq(es_plan_build(ctx, &s, t, &b), ES_OK);
    ck_assert_int_eq(es_plan_write_begin(ctx, b, out, NULL, &w), ES_OK);
    ck_assert_int_eq(es_plan_write_shards(ctx, w, 0, 0), ES_ERR_USAGE);
    ck_assert_int_eq(es_plan_write_expand_sources(ctx, w, 0, 1), ES_ERR_USAGE);
    ck_assert_int_eq(es_plan_write_finish(ctx, w, NULL, 0), ES_OK);
    es_plan_writer_free(w);
    ck_assert_int_eq(access(test_path("out/plan.json"), F_OK), 0);
    es_plan_free(b);
    es_context_free(ctx);
    es_plan_free(p);
    es_plan_free(q);
    es_cost_table_free(t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("plan_writer");
    TCase *tc = tcase_create("plan_writer");
    tcase_set_timeout(tc, 120);
    tcase_add_temp_dir(tc);
    tcase_add_test(tc, tar_staged_equals_one_call);
    tcase_add_test(tc, parquet_staged_equals_one_call);
    tcase_add_test(tc, expanded_sources_equal_one_call);
    tcase_add_test(tc, finish_needs_every_shard);
    tcase_add_test(tc, misuse_is_refused);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
