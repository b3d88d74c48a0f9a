/* Shared by the shard-reader fuzz harnesses: readers open paths, so each input
 * is written to a private temporary file, then read to the end with the
 * reader's open/next/close. Header-only: each harness is its own program. */
#ifndef ES_FUZZ_SHARD_H
#define ES_FUZZ_SHARD_H

#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "formats/format.h"

/* Writes data to a per-process temporary file named after `tag`; returns its
 * path (static storage), or NULL when it cannot be written. */
static inline const char *fuzz_write_input(const char *tag, const uint8_t *data, size_t size)
{
    static char path[96];
    snprintf(path, sizeof path, "/tmp/es-fuzz-%s-%ld", tag, (long)getpid());
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return NULL;
    fwrite(data, 1, size, fp);
    fclose(fp);
    return path;
}

/* Reads every record the reader yields (a bound guards against a reader that
 * never ends, which the fuzzer would report as a timeout anyway). */
static inline void fuzz_read_shard(const es_format_ops *ops, const char *path, const char *shard,
                                   int hash, es_context *ctx)
{
    es_reader_opts opts = {.hash = hash, .probe_buffer = 1 << 20};
    es_shard_reader *r;
    if (ops->open(ctx, path, shard, &opts, &r) != ES_OK)
        return;
    es_cost_row row;
    int n = 0;
    while (ops->next(ctx, r, &row) > 0 && n++ < 100000)
        ;
    ops->close(r);
}

#endif
