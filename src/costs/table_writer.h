/* The cost table's row formatter and output (format: cost_table_write.c), shared
 * by the whole-table writer and the streaming one (cost_stream.c).
 *
 * Invariants: bytes reach the file (or zstd) in the order they are added; a
 * zstd frame gets the same bytes whether or not the compressing thread runs,
 * and whatever the flush points (zstd's streaming output depends only on the
 * input bytes), so every writer built on this gives the same file. */
#ifndef ES_TABLE_WRITER_H
#define ES_TABLE_WRITER_H

#include <stdio.h>
#include <zstd.h>

#include "core/atomic_file.h"
#include "costs/cost_table.h"

/* Rows above which a zstd table is compressed in a second thread. */
#define ES_TW_PIPE_ROWS 50000

typedef struct es_table_writer {
    es_context *ctx;
    const char *path;    /* names the output in messages */
    es_atomic_file file; /* file.fp: where the bytes go */
    ZSTD_CCtx *z;        /* NULL: plain output */
    char *buf;           /* formatted, not yet flushed bytes */
    size_t len, cap;
    void *zout;          /* compressor output, then fwrite */
    size_t zout_cap;
    const char *stat_shard;    /* the shard whose stat `stat` is (rows share the pointer);
                                  reset it when the rows' table changes */
    const es_shard_stat *stat;
    struct zpipe *pipe;  /* non-NULL: a second thread compresses (zstd output only) */
} es_table_writer;

/* Sets up buffers and the compressor (zstd nonzero); w->ctx, path and file.fp
 * are the caller's. es_tw_release frees them whatever happened. */
int es_tw_init(es_table_writer *w, int zstd);
void es_tw_release(es_table_writer *w);

/* The magic line, the "# tokenizer:" line (when tokens and tokenizer), the
 * column header with the stat columns (stats) and text_tokens (tokens). */
int es_tw_header(es_table_writer *w, int stats, int tokens, const char *tokenizer);
/* One row; its shard's stat is looked up in t (stats nonzero). */
int es_tw_row(es_table_writer *w, const es_cost_row *r, const es_cost_table *t, int stats,
              int tokens);
/* Bytes as they are (already formatted rows). */
int es_tw_bytes(es_table_writer *w, const char *s, size_t n);
/* Hands what is buffered to the file or compressor (not the end of the frame). */
int es_tw_flush(es_table_writer *w);

/* From now on compress in a second thread (zstd only; no-op otherwise). */
void es_tw_pipe(es_table_writer *w);
/* Flushes and ends the zstd frame when rc is ES_OK; stops the compressing
 * thread in any case. Returns rc or the first failure. */
int es_tw_end(es_table_writer *w, int rc);

/* 1 when a table written to path is zstd-compressed (the name ends in ".zst"). */
int es_tw_zstd_name(const char *path);

#endif
