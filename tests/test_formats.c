/* The shard formats' registry (src/formats/format.h): every format's table is
 * whole, and a file goes to the format its content shows, whatever its name.
 * The files' formats are known independently: tar shards written by Python's
 * tarfile and CosyVoice parquet written by arrow-rs (fixtures/corpus_a), an
 * arrow-written parquet file (tests/data/parquet). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check_helpers.h"
#include "formats/format.h"

START_TEST(tables_are_whole)
{
    ck_assert_uint_ge(es_format_count(), 2);
    ck_assert_ptr_null(es_format_at(es_format_count()));
    for (size_t i = 0; i < es_format_count(); i++) {
        const es_format_ops *f = es_format_at(i);
        ck_assert_ptr_nonnull(f->name);
        ck_assert_uint_gt(strlen(f->name), 0);
        ck_assert_ptr_eq(es_format_named(f->name), f); /* names are unique */
        ck_assert(f->bid && f->open && f->next && f->close);
        /* the row reader's part and reshard's are optional, each all or none */
        int rows = !!f->rows_open + !!f->rows_free + !!f->rows_count + !!f->rows_column_count +
                   !!f->rows_column_name + !!f->rows_read;
        ck_assert(rows == 0 || rows == 6);
        if (f->reshard_copy) {
            ck_assert(f->reshard_shard_name);
            ck_assert_int_ne(f->reshard_compress, ES_COMPRESS_AUTO);
            /* the format the plan records leads back to this table */
            ck_assert_ptr_eq(es_format_for_reshard(f->reshard_format), f);
        } else {
            ck_assert(!f->reshard_shard_name && !f->reshard_check && !f->reshard_finish &&
                      !f->reshard_compress_check);
        }
        /* the plain copies of compressed sources: all three or none */
        int expand = !!f->reshard_expand + !!f->reshard_use_copies + !!f->reshard_remove_copies;
        ck_assert(expand == 0 || (expand == 3 && f->reshard_copy));
    }
    ck_assert_ptr_null(es_format_named("zip"));
}
END_TEST

static const char *format_of(const char *path)
{
    es_context ctx = {0};
    uint8_t head[ES_SNIFF_BYTES];
    long n = es_sniff_file(&ctx, path, head);
    ck_assert_msg(n >= 0, "%s", ctx.msg);
    const es_format_ops *f = es_format_for(head, (size_t)n);
    return f ? f->name : "none";
}

START_TEST(content_decides)
{
    ck_assert_str_eq(format_of(fixture_path("corpus_a/shards/shards_000000000.tar")), "tar");
    ck_assert_str_eq(format_of(fixture_path("corpus_a/shards-gz/shards_000000000.tar.gz")), "tar");
    ck_assert_str_eq(format_of(fixture_path("corpus_a/shards-zst/shards_000000000.tar.zst")), "tar");
    /* CosyVoice's parquet files are named .tar */
    ck_assert_str_eq(format_of(fixture_path("corpus_a/parquet/parquet_000000000.tar")), "parquet");
    ck_assert_str_eq(format_of(testdata_path("parquet/arrow_gzip_dict.parquet")), "parquet");
    /* a manifest is no shard format's */
    ck_assert_str_eq(format_of(fixture_path("corpus_a/raw.list")), "none");
}
END_TEST

START_TEST(reshard_names)
{
    /* as corpus_a's tar shards are named (shards_000000000.tar) and as
     * CosyVoice's tools/make_parquet_list.py names its files (parquet_{:09d}.tar) */
    char buf[64];
    es_format_named("tar")->reshard_shard_name(ES_COMPRESS_ZSTD, 7, buf, sizeof buf);
    ck_assert_str_eq(buf, "shards_000000007.tar.zst");
    es_format_named("tar")->reshard_shard_name(ES_COMPRESS_NONE, 12, buf, sizeof buf);
    ck_assert_str_eq(buf, "shards_000000012.tar");
    es_format_named("parquet")->reshard_shard_name(ES_COMPRESS_SNAPPY, 3, buf, sizeof buf);
    ck_assert_str_eq(buf, "parquet_000000003.tar");
}
END_TEST

static Suite *formats_suite(void)
{
    Suite *s = suite_create("formats");
    TCase *tc = tcase_create("registry");
    tcase_add_test(tc, tables_are_whole);
    tcase_add_test(tc, content_decides);
    tcase_add_test(tc, reshard_names);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(formats_suite());
}
