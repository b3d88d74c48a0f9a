/* What the parquet format's table (parquet_format.c) points at, from the
 * folder's other files: measure's reader (reader_parquet.c), rows by position
 * (rows_parquet.c), the reshard copier (reshard_parquet.c) with its schema
 * check and the maps beside the files. The codec beneath them is codec/. */
#ifndef ES_PARQUET_H
#define ES_PARQUET_H

#include "formats/format.h"
#include "formats/reshard_job.h"

int bid_parquet(const uint8_t *h, size_t n);
int parquet_open(es_context *ctx, const char *path, const char *shard,
                 const es_reader_opts *opts, es_shard_reader **out);
int parquet_next(es_context *ctx, es_shard_reader *r, es_cost_row *row);
void parquet_close(es_shard_reader *r);

typedef struct rows_parquet rows_parquet;
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

/* Reshard's copier: new files [t0, t1) written, read back and checked. */
int reshard_copy_parquet(es_context *ctx, reshard_job *job, uint32_t t0, uint32_t t1);

/* Before anything is written: every source opens as a parquet file with a
 * flat utt column and the first source's schema (the new files hold that
 * one schema). */
int reshard_parquet_check_schemas(es_context *ctx, const reshard_job *job);

/* Beside the files: utt2parquet_N.json and spk2parquet_N.json for every new
 * file, and utt2data.list / spk2data.list naming them. */
int reshard_parquet_maps(es_context *ctx, const reshard_job *job);

#endif
