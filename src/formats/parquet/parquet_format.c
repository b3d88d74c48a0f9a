/* The parquet format's table (formats/format.h): CosyVoice's parquet files,
 * on the codec in codec/. */
#include "formats/parquet/parquet.h"

#include <stdio.h>

/* make_parquet_list.py's names: parquet_000000007.tar, whatever the codec. */
static void shard_name(es_compress c, uint32_t i, char *buf, size_t len)
{
    (void)c;
    snprintf(buf, len, "parquet_%09u.tar", i);
}

static int rows_open(es_context *ctx, const char *path, void **state)
{
    rows_parquet *p = NULL;
    int rc = rows_parquet_open(ctx, path, &p);
    *state = p;
    return rc;
}

static void rows_free(void *state)
{
    rows_parquet_free(state);
}

static int rows_count(es_context *ctx, void *state, uint64_t *n)
{
    (void)ctx;
    *n = rows_parquet_count(state); /* the footer's: cannot fail */
    return ES_OK;
}

static size_t rows_column_count(const void *state)
{
    return rows_parquet_column_count(state);
}

static const char *rows_column_name(const void *state, size_t i)
{
    return rows_parquet_column_name(state, i);
}

static int rows_read(es_context *ctx, void *state, const rows_request *req)
{
    return rows_parquet_read(ctx, state, req);
}

const es_format_ops es_format_parquet = {
    .name = "parquet",
    .bid = bid_parquet,
    .open = parquet_open,
    .next = parquet_next,
    .close = parquet_close,
    .rows_open = rows_open,
    .rows_free = rows_free,
    .rows_count = rows_count,
    .rows_column_count = rows_column_count,
    .rows_column_name = rows_column_name,
    .rows_read = rows_read,
    .reshard_format = ES_RESHARD_PARQUET,
    .reshard_compress = ES_COMPRESS_SNAPPY, /* pyarrow's default */
    .reshard_compress_check = NULL,         /* none, gzip, zstd, snappy */
    .reshard_shard_name = shard_name,
    .reshard_check = reshard_parquet_check_schemas,
    .reshard_copy = reshard_copy_parquet,
    .reshard_finish = reshard_parquet_maps,
    .reshard_expand = NULL, /* read in place: nothing to gain */
};
