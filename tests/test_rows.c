/* The row reader (es_row_reader_*, src/rows/) against truth it did not write:
 *   - parquet: every row of the third-party files in tests/data/parquet, of
 *     data-samples and corpus A, and of InspireMusic's real pyarrow file, as
 *     hyparquet reads them (tests/data/parquet/rows.json, dump_rows.mjs):
 *     types, strings, bytes (length, crc32), numbers bit for bit, NaN, nulls,
 *     null elements, empty lists; fetched in a random order with duplicates;
 *   - audio_data equals the bytes of the source file the `wav` column names;
 *   - page skipping: single-row fetches equal one full read, and decode fewer
 *     pages (the reader's counters); list chunks come from the cache;
 *   - tar: keys and ordinals equal es_measure's cost table, member bytes equal
 *     the source files, continued and restarted passes give the same rows;
 *   - errors: positions out of range, unknown and unsupported columns,
 *     files of other kinds, truncated files: one line naming file and problem. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <snappy-c.h>

#include "check_helpers.h"
#include "formats/parquet/codec/pq_span.h"
#include "formats/parquet/parquet.h"
#include "formats/tar/tar.h"
#include "rows/row_reader.h"

#define INSPIRE "real/FunAudioLLM__InspireMusic/examples/music_generation/data/samples/parquet/parquet_000000000.tar"
#define PAGES "parquet/pages.parquet"
#define RGPAGES "parquet/arrow_snappy_rowgroups_pages.parquet"

/* A parquet reader's own state, for the parquet-only test hooks. */
static rows_parquet *pq_of(es_row_reader *r)
{
    ck_assert_str_eq(es_row_reader_format(r), "parquet");
    return r->state;
}

static const char *source_path(const char *rel)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", getenv("ES_SOURCE_ROOT"), rel);
    return buf;
}

static es_row_reader *open_ok(es_context *ctx, const char *path)
{
    es_row_reader *r = NULL;
    int rc = es_row_reader_open(ctx, path, &r);
    ck_assert_msg(rc == ES_OK, "open %s: %s", path, es_errmsg(ctx));
    return r;
}

static const es_row *read_ok(es_context *ctx, es_row_reader *r, const uint64_t *pos, size_t n,
                             const char *const *cols, size_t n_cols)
{
    const es_row *rows = NULL;
    int rc = es_row_reader_read(ctx, r, pos, n, cols, n_cols, &rows);
    ck_assert_msg(rc == ES_OK, "read: %s", es_errmsg(ctx));
    return rows;
}

static const es_value *field(const es_row *row, const char *name)
{
    for (size_t j = 0; j < row->n_fields; j++)
        if (strcmp(row->fields[j].name, name) == 0)
            return &row->fields[j].value;
    return NULL;
}

/* ---- values against rows.json ------------------------------------------------------ */

static int is_number_type(es_value_type t, const char *kind)
{
    if (strcmp(kind, "int") == 0)
        return t == ES_VALUE_INT32 || t == ES_VALUE_INT64 || t == ES_VALUE_UINT32 || t == ES_VALUE_UINT64;
    if (strcmp(kind, "float") == 0)
        return t == ES_VALUE_FLOAT || t == ES_VALUE_DOUBLE;
    if (strcmp(kind, "bool") == 0)
        return t == ES_VALUE_BOOL;
    return 0;
}

/* A scalar es_value (or one unpacked list element) against its JSON truth. */
static void check_scalar(const char *where, const json_t *want, es_value_type t, int64_t i, double d,
                         const void *data, size_t len, const char *kind)
{
    if (strcmp(kind, "string") == 0) {
        ck_assert_msg(t == ES_VALUE_STRING && json_is_string(want), "%s: not a string (%d)", where, t);
        ck_assert_msg(len == json_string_length(want) && memcmp(data, json_string_value(want), len) == 0,
                      "%s: %.*s != %s", where, (int)len, (const char *)data, json_string_value(want));
        ck_assert_int_eq(((const char *)data)[len], '\0');
    } else if (strcmp(kind, "bytes") == 0) {
        ck_assert_msg(t == ES_VALUE_BYTES, "%s: not bytes (%d)", where, t);
        ck_assert_uint_eq(len, json_integer_value(json_object_get(want, "len")));
        uLong crc = crc32(0L, Z_NULL, 0);
        crc = crc32(crc, data, (uInt)len);
        ck_assert_msg(crc == (uLong)json_integer_value(json_object_get(want, "crc32")), "%s: crc32", where);
    } else {
        ck_assert_msg(is_number_type(t, kind), "%s: type %d is not %s", where, t, kind);
        if (json_is_string(want)) { /* NaN, ±Infinity, or an int64 past 2^53 */
            const char *s = json_string_value(want);
            if (strcmp(s, "NaN") == 0)
                ck_assert_msg(isnan(d), "%s: %g is not NaN", where, d);
            else if (strcmp(kind, "float") == 0)
                ck_assert_msg(d == strtod(s, NULL), "%s: %g != %s", where, d, s);
            else
                ck_assert_msg(i == strtoll(s, NULL, 10), "%s: %lld != %s", where, (long long)i, s);
        } else if (strcmp(kind, "float") == 0) {
            ck_assert_msg(d == json_number_value(want), "%s: %.17g != %.17g", where, d, json_number_value(want));
        } else if (strcmp(kind, "bool") == 0) {
            ck_assert_int_eq(i, json_is_true(want));
        } else {
            ck_assert_msg(i == (int64_t)json_integer_value(want), "%s: %lld != %lld", where, (long long)i,
                          (long long)json_integer_value(want));
        }
    }
}

/* List element k, unpacked. */
static void check_element(const char *where, const json_t *want, const es_value *v, size_t k,
                          const char *kind)
{
    int null = v->valid && !v->valid[k];
    ck_assert_msg(null == json_is_null(want), "%s[%zu]: null %d", where, k, null);
    if (null)
        return;
    const uint8_t *p = (const uint8_t *)v->data;
    int64_t i = 0;
    double d = 0;
    switch (v->elem_type) {
    case ES_VALUE_BOOL: i = p[k]; break;
    case ES_VALUE_INT32: i = ((const int32_t *)p)[k]; break;
    case ES_VALUE_UINT32: i = ((const uint32_t *)p)[k]; break;
    case ES_VALUE_INT64: case ES_VALUE_UINT64: i = ((const int64_t *)p)[k]; break;
    case ES_VALUE_FLOAT: d = ((const float *)p)[k]; break;
    case ES_VALUE_DOUBLE: d = ((const double *)p)[k]; break;
    default: {
        const es_value *e = &((const es_value *)p)[k];
        check_scalar(where, want, e->type, 0, 0, e->data, e->len, kind);
        return;
    }
    }
    check_scalar(where, want, v->elem_type, i, d, NULL, 0, kind);
}

static void check_value(const char *where, const json_t *want, const es_value *v, const json_t *col)
{
    const char *kind = json_string_value(json_object_get(col, "kind"));
    ck_assert_ptr_nonnull(v);
    if (json_is_null(want)) {
        ck_assert_msg(v->type == ES_VALUE_NULL, "%s: %d, expected null", where, v->type);
        return;
    }
    if (strcmp(kind, "list") != 0) {
        check_scalar(where, want, v->type, v->i, v->d, v->data, v->len, kind);
        return;
    }
    ck_assert_msg(v->type == ES_VALUE_LIST, "%s: %d, expected a list", where, v->type);
    ck_assert_uint_eq(v->len, json_array_size(want));
    int any_null = 0;
    for (size_t k = 0; k < v->len; k++) {
        any_null |= json_is_null(json_array_get(want, k));
        check_element(where, json_array_get(want, k), v, k, json_string_value(json_object_get(col, "elem")));
    }
    ck_assert_int_eq(v->valid != NULL, any_null); /* valid only when an element is null */
}

static json_t *rows_truth(void)
{
    json_error_t err;
    json_t *j = json_load_file(testdata_path("parquet/rows.json"), 0, &err);
    ck_assert_msg(j != NULL, "rows.json: %s", err.text);
    return j;
}

/* A fixed shuffle of 0..n-1 followed by some positions again. */
static size_t shuffled_positions(uint64_t *pos, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        pos[i] = i;
    for (size_t i = n; i > 1; i--) {
        seed = seed * 1103515245u + 12345u;
        size_t j = (seed >> 8) % i;
        uint64_t t = pos[i - 1];
        pos[i - 1] = pos[j];
        pos[j] = t;
    }
    size_t m = n;
    for (size_t i = 0; i < n && i < 3; i++)
        pos[m++] = pos[i];
    return m;
}

static void check_file(es_context *ctx, const json_t *file)
{
    const char *rel = json_string_value(json_object_get(file, "path"));
    es_row_reader *r = open_ok(ctx, source_path(rel));
    ck_assert_str_eq(es_row_reader_format(r), "parquet");
    uint64_t n = 0;
    ck_assert_int_eq(es_row_reader_count(ctx, r, &n), ES_OK);
    ck_assert_uint_eq(n, json_integer_value(json_object_get(file, "num_rows")));
    const json_t *cols = json_object_get(file, "columns"), *truth = json_object_get(file, "rows");
    ck_assert_ptr_null(es_row_reader_column_name(r, json_array_size(cols))); /* past the last */
    const char *names[64];
    const json_t *kept[64];
    size_t n_names = 0;
    for (size_t c = 0; c < json_array_size(cols); c++) {
        const json_t *col = json_array_get(cols, c);
        const char *name = json_string_value(json_object_get(col, "name"));
        ck_assert_str_eq(es_row_reader_column_name(r, c), name);
        if (strcmp(json_string_value(json_object_get(col, "kind")), "unsupported") != 0) {
            kept[n_names] = col;
            names[n_names++] = name;
        }
    }
    uint64_t pos[256];
    ck_assert_uint_le(n, 200);
    size_t m = shuffled_positions(pos, n, (unsigned)n);
    const es_row *rows = read_ok(ctx, r, pos, m, names, n_names);
    for (size_t i = 0; i < m; i++) {
        ck_assert_uint_eq(rows[i].n_fields, n_names);
        for (size_t c = 0; c < n_names; c++) {
            char where[600];
            snprintf(where, sizeof where, "%s row %llu %s", rel, (unsigned long long)pos[i], names[c]);
            ck_assert_str_eq(rows[i].fields[c].name, names[c]);
            check_value(where, json_object_get(json_array_get(truth, pos[i]), names[c]),
                        &rows[i].fields[c].value, kept[c]);
        }
    }
    es_row_reader_free(r);
}

START_TEST(parquet_rows_equal_hyparquet)
{
    es_context *ctx = es_context_new();
    json_t *j = rows_truth();
    const json_t *files = json_object_get(j, "files");
    ck_assert_uint_ge(json_array_size(files), 18);
    for (size_t f = 0; f < json_array_size(files); f++)
        check_file(ctx, json_array_get(files, f));
    json_decref(j);
    es_context_free(ctx);
}
END_TEST

/* ---- the audio and its source ---------------------------------------------------------- */

START_TEST(audio_data_equals_source_file)
{
    es_context *ctx = es_context_new();
    for (int k = 0; k < 4; k++) {
        char rel[128];
        snprintf(rel, sizeof rel, "corpus_a/parquet/parquet_00000000%d.tar", k);
        es_row_reader *r = open_ok(ctx, fixture_path(rel));
        uint64_t n, pos[16];
        ck_assert_int_eq(es_row_reader_count(ctx, r, &n), ES_OK);
        for (uint64_t i = 0; i < n; i++)
            pos[i] = n - 1 - i;
        const char *cols[] = {"wav", "audio_data"};
        const es_row *rows = read_ok(ctx, r, pos, n, cols, 2);
        for (uint64_t i = 0; i < n; i++) {
            char wav[256];
            snprintf(wav, sizeof wav, "corpus_a/%s", (const char *)rows[i].fields[0].value.data);
            size_t len;
            unsigned char *want = read_whole_file(fixture_path(wav), &len);
            ck_assert_msg(want != NULL, "%s", wav);
            ck_assert_uint_eq(rows[i].fields[1].value.len, len);
            ck_assert(memcmp(rows[i].fields[1].value.data, want, len) == 0);
            free(want);
        }
        es_row_reader_free(r);
    }
    es_context_free(ctx);
}
END_TEST

/* ---- page skipping and the list cache ------------------------------------------------- */

static int same_value(const es_value *a, const es_value *b)
{
    if (a->type != b->type || a->len != b->len || a->i != b->i ||
        memcmp(&a->d, &b->d, sizeof a->d) != 0 || (a->valid == NULL) != (b->valid == NULL))
        return 0;
    if (a->type == ES_VALUE_BYTES || a->type == ES_VALUE_STRING)
        return memcmp(a->data, b->data, a->len) == 0;
    if (a->type == ES_VALUE_LIST && a->len) {
        if (a->elem_type != b->elem_type || (a->valid && memcmp(a->valid, b->valid, a->len) != 0))
            return 0;
        if (a->elem_type == ES_VALUE_BYTES || a->elem_type == ES_VALUE_STRING) {
            for (size_t k = 0; k < a->len; k++)
                if (!same_value(&((const es_value *)a->data)[k], &((const es_value *)b->data)[k]))
                    return 0;
            return 1;
        }
        size_t w = a->elem_type == ES_VALUE_BOOL ? 1 : a->elem_type == ES_VALUE_INT32 ||
                   a->elem_type == ES_VALUE_UINT32 || a->elem_type == ES_VALUE_FLOAT ? 4 : 8;
        return memcmp(a->data, b->data, a->len * w) == 0;
    }
    return 1;
}

/* Each row fetched alone (fresh reader per row, random order) equals the
 * full read; returns the pages decoded by the single-row fetches. */
static void single_rows_equal_full_read(es_context *ctx, const char *path, uint64_t *single_pages,
                                        uint64_t *full_pages, uint64_t *skipped)
{
    es_row_reader *full = open_ok(ctx, path);
    uint64_t n, pos[256];
    ck_assert_int_eq(es_row_reader_count(ctx, full, &n), ES_OK);
    ck_assert_uint_le(n, 200);
    for (uint64_t i = 0; i < n; i++)
        pos[i] = i;
    const es_row *all = read_ok(ctx, full, pos, n, NULL, 0);
    rows_parquet_stats fs;
    rows_parquet_get_stats(pq_of(full), &fs);
    ck_assert_uint_eq(fs.pages_skipped, 0);
    *full_pages = fs.pages_decoded;
    *single_pages = *skipped = 0;
    shuffled_positions(pos, n, 7);
    for (uint64_t k = 0; k < n; k++) {
        es_row_reader *one = open_ok(ctx, path);
        const es_row *row = read_ok(ctx, one, &pos[k], 1, NULL, 0);
        ck_assert_uint_eq(row->n_fields, all[pos[k]].n_fields);
        for (size_t c = 0; c < row->n_fields; c++)
            ck_assert_msg(same_value(&row->fields[c].value, &all[pos[k]].fields[c].value),
                          "%s row %llu column %s", path, (unsigned long long)pos[k], row->fields[c].name);
        rows_parquet_stats s;
        rows_parquet_get_stats(pq_of(one), &s);
        *single_pages += s.pages_decoded;
        *skipped += s.pages_skipped;
        es_row_reader_free(one);
    }
    es_row_reader_free(full);
}

START_TEST(page_skipping_returns_the_same_rows)
{
    es_context *ctx = es_context_new();
    uint64_t single = 0, full = 0, skipped = 0;
    /* hyparquet-writer, 3 row groups of 40 rows, audio_data in 2 KiB pages:
       a single row costs its own page of each flat column */
    single_rows_equal_full_read(ctx, testdata_path(PAGES), &single, &full, &skipped);
    ck_assert_uint_gt(skipped, 0);
    es_row_reader *r = open_ok(ctx, testdata_path(PAGES));
    const char *audio[] = {"audio_data"};
    uint64_t one = 60; /* in the middle of row group 1 */
    read_ok(ctx, r, &one, 1, audio, 1);
    rows_parquet_stats s;
    rows_parquet_get_stats(pq_of(r), &s);
    ck_assert_uint_eq(s.pages_decoded, 1);
    ck_assert_uint_ge(s.pages_skipped, 10);
    uint64_t all[120];
    for (int i = 0; i < 120; i++)
        all[i] = (uint64_t)(119 - i);
    read_ok(ctx, r, all, 120, audio, 1);
    rows_parquet_stats t;
    rows_parquet_get_stats(pq_of(r), &t);
    ck_assert_uint_gt(t.pages_decoded - s.pages_decoded, 10 * s.pages_decoded);
    ck_assert_uint_eq(t.pages_skipped, s.pages_skipped); /* every page holds a wanted row */
    es_row_reader_free(r);
    /* data page v1 (arrow-rs): corpus A's audio_data comes in two pages */
    single_rows_equal_full_read(ctx, fixture_path("corpus_a/parquet/parquet_000000001.tar"), &single,
                                &full, &skipped);
    ck_assert_uint_gt(skipped, 0);
    /* every other file: the same rows whichever way they are fetched */
    const char *more[] = {RGPAGES, "parquet/hyparquet_v2.parquet", "parquet/parquetjs_legacy_lists.parquet",
                          "parquet/arrow_zstd_v2_dict.parquet", "parquet/arrow_snappy_v2_delta.parquet",
                          "parquet/arrow_zstd_v1_delta.parquet", "parquet/null_audio.parquet"};
    for (size_t k = 0; k < sizeof more / sizeof more[0]; k++)
        single_rows_equal_full_read(ctx, testdata_path(more[k]), &single, &full, &skipped);
    es_context_free(ctx);
}
END_TEST

/* Every row of `path` fetched alone with every PLAIN BYTE_ARRAY page read in
 * part equals the whole-page read; returns the pages read in part. */
static uint64_t spanned_rows_equal_whole_pages(es_context *ctx, const char *path)
{
    es_row_reader *full = open_ok(ctx, path);
    rows_parquet_set_span_min(pq_of(full), UINT32_MAX);
    uint64_t n, pos[256], spanned = 0;
    ck_assert_int_eq(es_row_reader_count(ctx, full, &n), ES_OK);
    ck_assert_uint_le(n, 256);
    for (uint64_t i = 0; i < n; i++)
        pos[i] = i;
    const es_row *all = read_ok(ctx, full, pos, n, NULL, 0);
    shuffled_positions(pos, n, 11);
    es_row_reader *part = open_ok(ctx, path);
    rows_parquet_set_span_min(pq_of(part), 0);
    for (uint64_t k = 0; k < n; k++) { /* one reader: pages and marks reused, out of order */
        const es_row *row = read_ok(ctx, part, &pos[k], 1, NULL, 0);
        for (size_t c = 0; c < row->n_fields; c++)
            ck_assert_msg(same_value(&row->fields[c].value, &all[pos[k]].fields[c].value),
                          "%s row %llu column %s", path, (unsigned long long)pos[k], row->fields[c].name);
    }
    rows_parquet_stats s;
    rows_parquet_get_stats(pq_of(part), &s);
    spanned = s.pages_spanned;
    es_row_reader_free(part);
    es_row_reader_free(full);
    return spanned;
}

START_TEST(pages_read_in_part_return_the_same_rows)
{
    es_context *ctx = es_context_new();
    ck_assert_uint_gt(spanned_rows_equal_whole_pages(ctx, testdata_path(PAGES)), 10);
    ck_assert_uint_gt(spanned_rows_equal_whole_pages(ctx, fixture_path("corpus_a/parquet/parquet_000000001.tar")), 0);
    const char *more[] = {RGPAGES, "parquet/hyparquet_v2.parquet", "parquet/parquetjs_legacy_lists.parquet",
                          "parquet/arrow_zstd_v2_dict.parquet", "parquet/arrow_snappy_v2_delta.parquet",
                          "parquet/arrow_zstd_v1_delta.parquet", "parquet/null_audio.parquet"};
    for (size_t k = 0; k < sizeof more / sizeof more[0]; k++)
        spanned_rows_equal_whole_pages(ctx, testdata_path(more[k]));
    es_context_free(ctx);
}
END_TEST

/* pq_span against libsnappy on content with long literals, short and
 * self-overlapping copies (runs) and far matches: every range, every mark. */
START_TEST(snappy_ranges_equal_whole_decompression)
{
    size_t u = 300000;
    uint8_t *data = malloc(u);
    uint32_t x = 12345;
    for (size_t i = 0; i < u; i++) {
        x = x * 1103515245u + 12345u;
        size_t block = i / 20000;
        data[i] = block % 3 == 0 ? (uint8_t)(x >> 24)            /* noise: literals */
                  : block % 3 == 1 ? (uint8_t)(i % 7 == 0 ? 9 : 0) /* runs: overlapping copies */
                                   : data[i - 20000 + (i % 5)];    /* repeats of the noise */
    }
    size_t z = snappy_max_compressed_length(u);
    char *comp = malloc(z);
    ck_assert_int_eq(snappy_compress((const char *)data, u, comp, &z), SNAPPY_OK);
    char *dir = make_temp_dir(), path[4096];
    snprintf(path, sizeof path, "%s/page.snappy", dir);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite("PAD!", 1, 4, f) + fwrite(comp, 1, z, f), 4 + z);
    fclose(f);
    int fd = open(path, O_RDONLY);
    pq_span s = {0};
    ck_assert_int_eq(pq_span_open(&s, fd, 4, (uint32_t)z, (uint32_t)u, 1), ES_OK);
    ck_assert_uint_gt(s.n_marks, u / 4096 - 1);
    for (uint32_t a = 0; a < u; a += 997) {
        uint32_t n = (uint32_t)((a * 7919u) % 50000u);
        if (n > u - a)
            n = (uint32_t)(u - a);
        const uint8_t *p;
        ck_assert_int_eq(pq_span_get(&s, a, n, &p), ES_OK);
        ck_assert_msg(memcmp(p, data + a, n) == 0, "bytes %u..%u", a, a + n);
    }
    /* a stream that lies about its length is refused, as libsnappy refuses it */
    ck_assert_int_eq(pq_span_open(&s, fd, 4, (uint32_t)z, (uint32_t)u + 1, 1), ES_ERR_FORMAT);
    ck_assert_int_eq(pq_span_open(&s, fd, 4, (uint32_t)z - 1, (uint32_t)u, 1), ES_ERR_FORMAT);
    pq_span_release(&s);
    close(fd);
    free(comp);
    free(data);
    free(dir);
}
END_TEST

START_TEST(list_chunks_are_decoded_once)
{
    es_context *ctx = es_context_new();
    es_row_reader *r = open_ok(ctx, testdata_path(RGPAGES));
    const char *cols[] = {"speech_token", "utt_embedding"};
    uint64_t a[] = {0}, b[] = {1, 0, 1}, c[] = {5, 2};
    rows_parquet_stats s;
    read_ok(ctx, r, a, 1, cols, 2);
    rows_parquet_get_stats(pq_of(r), &s);
    ck_assert_uint_eq(s.list_chunks_decoded, 2); /* row group 0, two columns */
    const es_row *rows = read_ok(ctx, r, b, 3, cols, 2);
    rows_parquet_get_stats(pq_of(r), &s);
    ck_assert_uint_eq(s.list_chunks_decoded, 2); /* the same row group: cached */
    ck_assert_ptr_eq(rows[0].fields, rows[2].fields); /* duplicates share their row */
    read_ok(ctx, r, c, 2, cols, 2);
    rows_parquet_get_stats(pq_of(r), &s);
    ck_assert_uint_eq(s.list_chunks_decoded, 6); /* row groups 1 and 2 */
    ck_assert_uint_eq(s.pages_decoded, 0);       /* no flat column asked for */
    es_row_reader_free(r);
    es_context_free(ctx);
}
END_TEST

/* ---- tar -------------------------------------------------------------------------------- */

/* Keys and ordinals of a shard as es_measure numbers them. */
static es_cost_table *measured(es_context *ctx, const char *path)
{
    es_measure_settings s;
    es_measure_defaults(&s);
    s.on_error = ES_ON_ERROR_SKIP;
    es_cost_table *t = NULL;
    const char *in[] = {path};
    ck_assert_int_eq(es_measure(ctx, &s, in, 1, &t), ES_OK);
    return t;
}

static void check_tar(es_context *ctx, const char *path)
{
    es_cost_table *t = measured(ctx, path);
    es_row_reader *r = open_ok(ctx, path);
    ck_assert_str_eq(es_row_reader_format(r), "tar");
    ck_assert_ptr_null(es_row_reader_column_name(r, 0)); /* no columns */
    uint64_t n;
    ck_assert_int_eq(es_row_reader_count(ctx, r, &n), ES_OK);
    ck_assert_uint_eq(n, es_cost_table_size(t));
    uint64_t pos[64];
    ck_assert_uint_le(n, 60);
    size_t m = shuffled_positions(pos, n, 3);
    const es_row *rows = read_ok(ctx, r, pos, m, NULL, 0);
    for (size_t i = 0; i < m; i++) {
        es_cost_row cr;
        ck_assert_int_eq(es_cost_table_row(t, pos[i], &cr), ES_OK);
        ck_assert_uint_eq(cr.pos, pos[i]);
        const es_value *key = field(&rows[i], "key");
        ck_assert_str_eq(rows[i].fields[0].name, "key");
        ck_assert_int_eq(key->type, ES_VALUE_STRING);
        ck_assert_str_eq((const char *)key->data, cr.key);
        const es_value *wav = field(&rows[i], "wav");
        if (!wav)
            wav = field(&rows[i], "flac");
        ck_assert_ptr_nonnull(wav);
        ck_assert_int_eq(wav->type, ES_VALUE_BYTES);
        ck_assert_uint_eq(wav->len, cr.audio_bytes);
    }
    es_row_reader_free(r);
    es_cost_table_free(t);
}

START_TEST(tar_keys_and_ordinals_equal_measure)
{
    es_context *ctx = es_context_new();
    const char *shards[] = {"corpus_a/shards/shards_000000000.tar", "corpus_a/shards-gz/shards_000000001.tar.gz",
                            "corpus_a/shards-zst/shards_000000003.tar.zst",
                            "real/wenet-e2e__wenet/test/resources/dataset/shards/shards_000000000.tar"};
    for (size_t k = 0; k < sizeof shards / sizeof shards[0]; k++)
        check_tar(ctx, fixture_path(shards[k]));
    check_tar(ctx, source_path("data-samples/shards/shards_000000001.tar"));
    es_context_free(ctx);
}
END_TEST

/* Corpus A's tar members are the source files: wav bytes, and the txt member. */
START_TEST(tar_members_equal_source_files)
{
    es_context *ctx = es_context_new();
    es_row_reader *r = open_ok(ctx, fixture_path("corpus_a/shards/shards_000000002.tar"));
    uint64_t pos[] = {9, 2, 15, 2};
    const char *cols[] = {"wav", "flac"};
    const es_row *rows = read_ok(ctx, r, pos, 4, cols, 2);
    for (size_t i = 0; i < 4; i++) {
        ck_assert_uint_eq(rows[i].n_fields, 2); /* key + the audio; txt skipped */
        const char *key = rows[i].fields[0].value.data;
        char rel[256];
        snprintf(rel, sizeof rel, "corpus_a/wav/%.3s/%s.%s", key, key, rows[i].fields[1].name);
        size_t len;
        unsigned char *want = read_whole_file(fixture_path(rel), &len);
        ck_assert_msg(want != NULL, "%s", rel);
        ck_assert_uint_eq(rows[i].fields[1].value.len, len);
        ck_assert(memcmp(rows[i].fields[1].value.data, want, len) == 0);
        free(want);
    }
    es_row_reader_free(r);
    es_context_free(ctx);
}
END_TEST

/* A fetch after the last one continues its pass; one before it starts over. */
START_TEST(tar_continued_and_restarted_passes)
{
    es_context *ctx = es_context_new();
    const char *path = fixture_path("corpus_a/shards-gz/shards_000000000.tar.gz");
    es_row_reader *all = open_ok(ctx, path), *r = open_ok(ctx, path);
    uint64_t pos[16];
    for (int i = 0; i < 16; i++)
        pos[i] = (uint64_t)i;
    const es_row *want = read_ok(ctx, all, pos, 16, NULL, 0);
    uint64_t steps[][3] = {{3, 4, 9}, {10, 15, 15}, {0, 1, 2}, {7, 7, 8}};
    for (size_t s = 0; s < 4; s++) {
        const es_row *got = read_ok(ctx, r, steps[s], 3, NULL, 0);
        for (size_t i = 0; i < 3; i++) {
            const es_row *w = &want[steps[s][i]];
            ck_assert_uint_eq(got[i].n_fields, w->n_fields);
            for (size_t c = 0; c < w->n_fields; c++) {
                ck_assert_str_eq(got[i].fields[c].name, w->fields[c].name);
                ck_assert(same_value(&got[i].fields[c].value, &w->fields[c].value));
            }
        }
    }
    es_row_reader_free(all);
    es_row_reader_free(r);
    es_context_free(ctx);
}
END_TEST

/* A fetch of an utterance before the pass (a planned batch's rows come in any
 * order) begins at that utterance's first header, noted by the pass that went
 * by it, not at the first member; and far after the pass, there too. The rows
 * are a fresh reader's. */
START_TEST(tar_fetch_begins_at_its_utterance)
{
    es_context *ctx = es_context_new();
    const char *path = fixture_path("corpus_a/shards/shards_000000000.tar");
    es_row_reader *fresh = open_ok(ctx, path), *r = open_ok(ctx, path);
    uint64_t n;
    ck_assert_int_eq(es_row_reader_count(ctx, fresh, &n), ES_OK);
    ck_assert_uint_ge(n, 14); /* utterance n - 2 is more than JUMP_GAP (8) after 2 */
    uint64_t last = n - 1;
    read_ok(ctx, r, &last, 1, NULL, 0); /* one pass by every utterance */
    uint64_t steps[][2] = {{n - 3, n - 3}, {1, 2}, {1, n - 2}};
    for (size_t s = 0; s < 3; s++) {
        uint64_t before = rows_tar_headers_read((const rows_tar *)r->state);
        const es_row *got = read_ok(ctx, r, steps[s], 2, NULL, 0);
        /* the headers of the wanted utterances' members (a row: "key", then
         * one field a member) and of the member that ends the last one; an
         * utterance right after another began at that one's ending header */
        uint64_t members = got[0].n_fields - 1 + 1;
        if (steps[s][1] != steps[s][0])
            members += got[1].n_fields - 1 + (steps[s][1] == steps[s][0] + 1 ? 0 : 1);
        ck_assert_uint_eq(rows_tar_headers_read((const rows_tar *)r->state) - before, members);
        const es_row *want = read_ok(ctx, fresh, steps[s], 2, NULL, 0);
        for (size_t i = 0; i < 2; i++) {
            ck_assert_uint_eq(got[i].n_fields, want[i].n_fields);
            for (size_t c = 0; c < want[i].n_fields; c++) {
                ck_assert_str_eq(got[i].fields[c].name, want[i].fields[c].name);
                ck_assert(same_value(&got[i].fields[c].value, &want[i].fields[c].value));
            }
        }
    }
    es_row_reader_free(fresh);
    es_row_reader_free(r);
    es_context_free(ctx);
}
END_TEST

/* ---- errors ------------------------------------------------------------------------------- */

static void expect_error(es_context *ctx, es_row_reader *r, const uint64_t *pos, size_t n,
                         const char *const *cols, size_t n_cols, int status, const char *text)
{
    const es_row *rows = (const es_row *)1;
    int rc = es_row_reader_read(ctx, r, pos, n, cols, n_cols, &rows);
    ck_assert_msg(rc == status, "%s, expected %s: %s", es_status_name(rc), es_status_name(status),
                  es_errmsg(ctx));
    ck_assert_ptr_null(rows);
    ck_assert_msg(strstr(es_errmsg(ctx), text) != NULL, "'%s' lacks '%s'", es_errmsg(ctx), text);
    ck_assert_ptr_null(strchr(es_errmsg(ctx), '\n'));
}

START_TEST(errors_name_file_position_and_column)
{
    es_context *ctx = es_context_new();
    es_row_reader *r = open_ok(ctx, testdata_path(RGPAGES));
    uint64_t far[] = {2, 6, 40};
    expect_error(ctx, r, far, 3, NULL, 0, ES_ERR_USAGE,
                 "arrow_snappy_rowgroups_pages.parquet: position 6: out of range, the file has 6 rows");
    const char *bad[] = {"utt", "nope"};
    expect_error(ctx, r, far, 1, bad, 2, ES_ERR_USAGE, "no column nope (columns: utt, audio_data, ");
    es_row_reader_free(r);

    r = open_ok(ctx, fixture_path(INSPIRE));
    uint64_t zero = 0;
    expect_error(ctx, r, &zero, 1, NULL, 0, ES_ERR_UNSUPPORTED,
                 "column semantic_token: a list of lists, which the row reader does not read");
    const char *flat[] = {"utt", "time_end"};
    const es_row *rows = read_ok(ctx, r, &zero, 1, flat, 2);
    ck_assert_int_eq(rows[0].fields[1].value.type, ES_VALUE_DOUBLE);
    es_row_reader_free(r);

    r = open_ok(ctx, fixture_path("corpus_a/shards/shards_000000003.tar"));
    uint64_t tar_far[] = {11, 12};
    expect_error(ctx, r, tar_far, 2, NULL, 0, ES_ERR_USAGE,
                 "shards_000000003.tar: position 12: out of range, the file has 12 utterances");
    rows = read_ok(ctx, r, tar_far, 1, NULL, 0); /* the reader still works */
    ck_assert_str_eq((const char *)rows[0].fields[0].value.data, "A06_0010");
    expect_error(ctx, r, tar_far + 1, 1, NULL, 0, ES_ERR_USAGE, "position 12: out of range");
    es_row_reader_free(r);

    es_row_reader *none = (es_row_reader *)1;
    ck_assert_int_eq(es_row_reader_open(ctx, "/nonexistent/x.parquet", &none), ES_ERR_IO);
    ck_assert_ptr_null(none);
    ck_assert_ptr_nonnull(strstr(es_errmsg(ctx), "/nonexistent/x.parquet"));
    ck_assert_int_eq(es_row_reader_open(ctx, fixture_path("corpus_a/wav/A01/A01_0001.wav"), &none),
                     ES_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(es_errmsg(ctx), "neither parquet nor a tar shard"));
    es_context_free(ctx);
}
END_TEST

/* Truncated and damaged copies: an error or rows, never a crash (ASan). */
START_TEST(damaged_files_fail_cleanly)
{
    es_context *ctx = es_context_new();
    size_t len;
    unsigned char *data = read_whole_file(testdata_path(PAGES), &len);
    ck_assert_ptr_nonnull(data);
    char *dir = make_temp_dir();
    char path[4200];
    snprintf(path, sizeof path, "%s/damaged.parquet", dir);
    uint64_t pos[] = {0, 3, 5};
    int failures = 0;
    for (size_t step = 0; step < 200; step++) {
        unsigned char *copy = malloc(len);
        memcpy(copy, data, len);
        size_t at = (step * 7919u) % (len - 8);
        for (int k = 0; k < 4; k++)
            copy[at + (size_t)k] ^= (unsigned char)(0x5a + step);
        FILE *fp = fopen(path, "wb");
        fwrite(copy, 1, step % 2 ? len : len - (step * 131u) % len, fp); /* flipped, or also cut */
        fclose(fp);
        free(copy);
        es_row_reader *r = NULL;
        if (es_row_reader_open(ctx, path, &r) != ES_OK) {
            failures++;
            continue;
        }
        const es_row *rows;
        if (es_row_reader_read(ctx, r, pos, 3, NULL, 0, &rows) != ES_OK) {
            failures++;
            ck_assert_ptr_nonnull(strstr(es_errmsg(ctx), "damaged.parquet"));
        }
        es_row_reader_free(r);
    }
    ck_assert_int_gt(failures, 50);
    unlink(path);
    rmdir(dir);
    free(dir);
    free(data);
    es_context_free(ctx);
}
END_TEST

START_TEST(empty_fetch_and_no_columns)
{
    es_context *ctx = es_context_new();
    es_row_reader *r = open_ok(ctx, testdata_path(PAGES));
    const es_row *rows = read_ok(ctx, r, NULL, 0, NULL, 0);
    ck_assert_ptr_nonnull(rows);
    uint64_t pos[] = {4, 1};
    const char *none[] = {NULL};
    rows = read_ok(ctx, r, pos, 2, none, 0);
    ck_assert_uint_eq(rows[0].n_fields, 0);
    ck_assert_uint_eq(rows[1].n_fields, 0);
    es_row_reader_free(r);
    es_row_reader_free(NULL);
    es_context_free(ctx);
}
END_TEST

static Suite *rows_suite(void)
{
    Suite *s = suite_create("rows");
    TCase *tc = tcase_create("rows");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, parquet_rows_equal_hyparquet);
    tcase_add_test(tc, audio_data_equals_source_file);
    tcase_add_test(tc, page_skipping_returns_the_same_rows);
    tcase_add_test(tc, pages_read_in_part_return_the_same_rows);
    tcase_add_test(tc, snappy_ranges_equal_whole_decompression);
    tcase_add_test(tc, list_chunks_are_decoded_once);
    tcase_add_test(tc, tar_keys_and_ordinals_equal_measure);
    tcase_add_test(tc, tar_members_equal_source_files);
    tcase_add_test(tc, tar_fetch_begins_at_its_utterance);
    tcase_add_test(tc, tar_continued_and_restarted_passes);
    tcase_add_test(tc, errors_name_file_position_and_column);
    tcase_add_test(tc, damaged_files_fail_cleanly);
    tcase_add_test(tc, empty_fetch_and_no_columns);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(rows_suite());
}
