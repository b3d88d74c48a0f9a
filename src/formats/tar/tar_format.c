/* The tar format's table (formats/format.h): WeNet / WebDataset shards, plain
 * or gzip/zstd, on libarchive. */
#include "formats/tar/tar.h"

#include <stdio.h>

/* WeNet's shard names: shards_000000007.tar, with the filter's extension. */
static void shard_name(es_compress c, uint32_t i, char *buf, size_t len)
{
    const char *ext = c == ES_COMPRESS_GZIP ? ".tar.gz" : c == ES_COMPRESS_ZSTD ? ".tar.zst" : ".tar";
    snprintf(buf, len, "shards_%09u%s", i, ext);
}

static int compress_check(es_context *ctx, es_compress c)
{
    if (c == ES_COMPRESS_SNAPPY)
        return es_fail(ctx, ES_ERR_USAGE, "plan: compress snappy is for parquet shards; tar "
                       "shards take none, gzip or zstd");
    return ES_OK;
}

static int rows_open(es_context *ctx, const char *path, void **state)
{
    rows_tar *t = NULL;
    int rc = rows_tar_open(ctx, path, &t);
    *state = t;
    return rc;
}

static void rows_free(void *state)
{
    rows_tar_free(state);
}

static int rows_count(es_context *ctx, void *state, uint64_t *n)
{
    return rows_tar_count(ctx, state, n);
}

static size_t rows_column_count(const void *state)
{
    (void)state;
    return 0; /* members by suffix, no schema */
}

static const char *rows_column_name(const void *state, size_t i)
{
    (void)state;
    (void)i;
    return NULL;
}

static int rows_read(es_context *ctx, void *state, const rows_request *req)
{
    return rows_tar_read(ctx, state, req);
}

const es_format_ops es_format_tar = {
    .name = "tar",
    .bid = bid_tar,
    .open = tar_open,
    .next = tar_next,
    .close = tar_close,
    .rows_open = rows_open,
    .rows_free = rows_free,
    .rows_count = rows_count,
    .rows_column_count = rows_column_count,
    .rows_column_name = rows_column_name,
    .rows_read = rows_read,
    .reshard_format = ES_RESHARD_TAR,
    .reshard_compress = ES_COMPRESS_NONE,
    .reshard_compress_check = compress_check,
    .reshard_shard_name = shard_name,
    .reshard_check = reshard_tar_check_keys,
    .reshard_copy = reshard_copy_tar,
    .reshard_finish = NULL,
    .reshard_expand = reshard_tar_expand,
    .reshard_use_copies = reshard_tar_use_copies,
    .reshard_remove_copies = reshard_tar_remove_copies,
};
