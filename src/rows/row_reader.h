/* The row reader behind es_row_reader_* (equishard.h): one struct for both
 * formats, the public calls in row_reader.c, the formats in rows_parquet.c and
 * rows_tar.c.
 *
 * A fetch works on unique positions in ascending order (row_reader.c sorts and
 * de-duplicates the caller's), so each format makes one forward pass; the
 * caller's order and duplicates are restored from `order` afterwards.
 * Everything a fetch returns lives in `arena`, released at the next fetch. */
#ifndef ES_ROW_READER_H
#define ES_ROW_READER_H

#include <stddef.h>
#include <stdint.h>

#include "core/context.h"
#include "core/strbuf.h"
#include "equishard/equishard.h"

typedef struct rows_parquet rows_parquet;
typedef struct rows_tar rows_tar;

struct es_row_reader {
    char *path;
    rows_parquet *pq; /* exactly one of pq and tar is set */
    rows_tar *tar;
    es_arena arena;   /* the last fetch's rows, fields and values */
    es_row *rows;     /* the caller's order: rows[i] for positions[i] */
    size_t rows_cap;
};

/* A fetch's unique positions: pos[0..n) ascending; out[k] receives the row of
 * pos[k]. `columns` as es_row_reader_read takes them. */
typedef struct rows_request {
    const uint64_t *pos;
    size_t n;
    const char *const *columns; /* NULL: all */
    size_t n_columns;
    es_row *out;
    es_arena *arena;
} rows_request;

int rows_parquet_open(es_context *ctx, const char *path, rows_parquet **out);
void rows_parquet_free(rows_parquet *p);
uint64_t rows_parquet_count(const rows_parquet *p);
size_t rows_parquet_column_count(const rows_parquet *p);
const char *rows_parquet_column_name(const rows_parquet *p, size_t i);
int rows_parquet_read(es_context *ctx, rows_parquet *p, const rows_request *req);

/* What a parquet fetch cost, over the reader's life: for tests that prove
 * pages were passed over and list chunks came from the cache. */
typedef struct rows_parquet_stats {
    uint64_t pages_decoded, pages_skipped; /* data pages of flat columns */
    uint64_t list_chunks_decoded;          /* list column chunks decoded (cache misses) */
    uint64_t pages_spanned;                /* pages read in part (rows_pq_span.h) */
} rows_parquet_stats;
void rows_parquet_get_stats(const rows_parquet *p, rows_parquet_stats *s);

/* Pages of at least `min` bytes (and min / 64 a row) are read in part; tests
 * set 0 (every PLAIN BYTE_ARRAY page) or UINT32_MAX (none). */
void rows_parquet_set_span_min(rows_parquet *p, uint32_t min);

int rows_tar_open(es_context *ctx, const char *path, rows_tar **out);
void rows_tar_free(rows_tar *t);
int rows_tar_count(es_context *ctx, rows_tar *t, uint64_t *n);
int rows_tar_read(es_context *ctx, rows_tar *t, const rows_request *req);
/* Tar headers read over the reader's life: for tests that prove a fetch began
 * at its utterance rather than at the first member. */
uint64_t rows_tar_headers_read(const rows_tar *t);

/* The out-of-range message both formats give. */
int rows_out_of_range(es_context *ctx, const char *path, uint64_t pos, uint64_t count,
                      const char *what);

#endif
