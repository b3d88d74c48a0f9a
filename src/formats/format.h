/* A shard format: one const table of callbacks, `es_format_ops`, for all that
 * equishard does with a format's files. Each format lives in one folder
 * (src/formats/tar/, src/formats/parquet/) and exports one table;
 * format_registry.c is the only file that names them, and measure, the row
 * reader and reshard reach a format only through its table.
 *
 * Detection is by content: every format `bid`s on a file's first bytes and the
 * highest bidder takes it. CosyVoice names its parquet files
 * `parquet_000000000.tar`; a name proves nothing.
 *
 * Manifests that list audio files (WeNet raw lists, Kaldi directories) are not
 * shards in this sense: they are parsed into items (readers/manifest.h). */
#ifndef ES_FORMAT_H
#define ES_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "core/context.h"
#include "equishard/equishard.h"
#include "plan/plan_reshard.h"
#include "readers/reader.h"

/* A fetch's unique positions for the row reader: pos[0..n) ascending;
 * out[k] receives the row of pos[k]. `columns` as es_row_reader_read takes
 * them. Everything a fetch returns lives in `arena`. */
typedef struct rows_request {
    const uint64_t *pos;
    size_t n;
    const char *const *columns; /* NULL: all */
    size_t n_columns;
    es_row *out;
    es_arena *arena;
} rows_request;

/* The out-of-range message every format's fetch gives (rows_range.c). */
int rows_out_of_range(es_context *ctx, const char *path, uint64_t pos, uint64_t count,
                      const char *what);

typedef struct reshard_job reshard_job; /* formats/reshard_job.h */

typedef struct es_format_ops {
    /* "tar", "parquet": es_row_reader_format's answer and messages' word. */
    const char *name;
    /* How well `head` (the file's first bytes, n >= 0) matches this format:
     * 0 no, higher is surer. */
    int (*bid)(const uint8_t *head, size_t n);

    /* Measure: the shard as a stream of utterance records, open, next, next,
     * …, close. `path` is what to open; `shard` is the name rows carry (the
     * list entry as written); both outlive the reader. next fills *row (its
     * strings valid until the next call or close; row->pos the utterance's
     * ordinal in the shard) and returns an ES_NEXT_* (readers/reader.h). */
    int (*open)(es_context *ctx, const char *path, const char *shard,
                const es_reader_opts *opts, es_shard_reader **out);
    int (*next)(es_context *ctx, es_shard_reader *r, es_cost_row *row);
    void (*close)(es_shard_reader *r);

    /* The row reader (es_row_reader_*): rows fetched by position, one forward
     * pass per fetch over ascending unique positions (rows/row_reader.c sorts
     * them and restores the caller's order). `state` is what rows_open made.
     * All six, or none: the row reader then refuses the format's files. */
    int (*rows_open)(es_context *ctx, const char *path, void **state);
    void (*rows_free)(void *state); /* state may be NULL */
    int (*rows_count)(es_context *ctx, void *state, uint64_t *n);
    size_t (*rows_column_count)(const void *state); /* top-level columns; 0: none */
    const char *(*rows_column_name)(const void *state, size_t i);
    int (*rows_read)(es_context *ctx, void *state, const rows_request *req);

    /* Reshard: new shards of this format from sources of this format. A
     * format without reshard_copy (and so without the rest) is refused as a
     * source. */
    es_reshard_format reshard_format; /* what the plan records (plan.json) */
    es_compress reshard_compress;     /* what ES_COMPRESS_AUTO settles to */
    /* ES_OK when the new shards can be compressed with c (settled, never
     * AUTO), else the refusal (ES_ERR_USAGE, message in ctx); NULL: any. */
    int (*reshard_compress_check)(es_context *ctx, es_compress c);
    /* File name of new shard i ("shards_000000007.tar.zst"). */
    void (*reshard_shard_name)(es_compress c, uint32_t i, char *buf, size_t len);
    /* Before anything is written: what this format's shards cannot hold. */
    int (*reshard_check)(es_context *ctx, const reshard_job *job);
    /* New shards [t0, t1) written, read back and checked: the format's
     * reshard_ops (formats/reshard_job.h) driven by reshard_run_passes. */
    int (*reshard_copy)(es_context *ctx, reshard_job *job, uint32_t t0, uint32_t t1);
    /* The format's files beside the shards, once all are written; NULL: none. */
    int (*reshard_finish)(es_context *ctx, const reshard_job *job);
    /* Compressed sources decompressed once into plain copies every process
     * reads instead (es_plan_write_expand_sources); NULL: the format has no
     * such sources, and the three are no-ops. */
    int (*reshard_expand)(es_context *ctx, reshard_job *job, uint32_t part, uint32_t parts);
    int (*reshard_use_copies)(es_context *ctx, reshard_job *job);
    void (*reshard_remove_copies)(reshard_job *job);
} es_format_ops;

/* The format of a file, chosen by content: the highest bidder on its first
 * bytes `head`/`n`; NULL when none bids. */
const es_format_ops *es_format_for(const uint8_t *head, size_t n);

/* The format that writes reshard format f (never NULL for a value of the
 * enum). */
const es_format_ops *es_format_for_reshard(es_reshard_format f);

/* The registered formats, in the registry's order: i < es_format_count(). */
size_t es_format_count(void);
const es_format_ops *es_format_at(size_t i);

/* The format called `name`, or NULL (tests and fuzzers, which drive one
 * format's table on purpose). */
const es_format_ops *es_format_named(const char *name);

#endif
