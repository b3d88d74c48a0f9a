/* The cost table in memory (docs/COST_TABLE.md): an array of es_cost_row whose strings
 * live in the table's arena, plus the list of skipped problems.
 *
 * Invariants: every row's key/shard/spk point into `strings` (never NULL; "" when
 * empty); rows are in the order they were appended. */
#ifndef ES_COST_TABLE_H
#define ES_COST_TABLE_H

#include <stdio.h>

#include "core/bigarray.h"
#include "core/context.h"
#include "core/strbuf.h"
#include "core/strmap.h"
#include "equishard/equishard.h"

/* What --on-error skip left out: an utterance (key and pos known) or a whole
 * shard (key NULL, pos ES_SKIP_SHARD). Strings live in the table's arena. */
#define ES_SKIP_SHARD UINT64_MAX
typedef struct es_cost_skip {
    const char *msg;   /* the problem, one line */
    const char *shard; /* as the table's `shard` column would name it; "" when unknown */
    const char *key;   /* NULL for a whole shard */
    uint64_t pos;
} es_cost_skip;

/* A shard file as measure found it: reshard refuses a source whose size or
 * modification time moved since, as its rows' costs may no longer hold. */
typedef struct es_shard_stat {
    uint64_t size;
    int64_t mtime_s;
    uint32_t mtime_ns;
} es_shard_stat;

struct es_cost_table {
    es_cost_row *rows;
    size_t n, cap;
    es_bigarray_writer fill; /* the rows' fresh pages, for es_cost_table_append_n: a window
                                at a time, or a helper's (es_cost_table_pages_ahead) */
    size_t fill_from;        /* fill covers rows[fill_from, cap) */
    es_fill fill_flags;      /* ES_FILL_NO_HUGE or 0: es_cost_table_huge_pages */
    es_arena strings;
    const char *last_shard; /* interning: consecutive rows usually share a shard */
    size_t last_shard_len;  /* strlen(last_shard) */
    es_cost_skip *skips;
    size_t n_skips, cap_skips;
    es_strmap shard_stats;  /* shard (as rows name it) → es_shard_stat in `strings` */
    char *tokenizer;        /* what text_tokens were counted with: one line of JSON
                               (text/tok_report.h), the "# tokenizer: " line; or NULL */
    struct es_zstd_image *zstd_ahead; /* es_cost_table_compress_ahead's, or NULL */
    /* Set with zstd_ahead: es_cost_table_drop_zstd_image, which the table's
     * free calls through here, so the table's memory calls nothing above it
     * (the image's writer reads the table). */
    void (*drop_zstd_ahead)(es_cost_table *t);
};

es_cost_table *es_cost_table_new(void);

/* Makes room for at least `rows` rows in all (ES_OK or ES_ERR_NOMEM). A reader
 * that can foresee the row count calls it early: growing by doubling moves the
 * array (realloc → mremap) every time, and on this project's paravirtualised
 * machine the next touch of every moved page costs as much as a fresh one. */
int es_cost_table_reserve(es_cost_table *t, size_t rows);

/* Starts (on = 1) a helper thread that maps and first-touches the row array's
 * pages [n, cap) a few MiB ahead of the appends (core/bigarray.h), or
 * stops it (on = 0). For a reader that has reserved room for many rows; a
 * no-op when there is little room left. While it runs, rows are appended with
 * es_cost_table_append_n only (it asks the helper for each window before
 * writing there). Anything that moves or frees the row array stops it first;
 * the reader stops it when done, so no thread outlives the read. */
void es_cost_table_pages_ahead(es_cost_table *t, int on);

/* Whether the table's row array and strings ask for transparent huge pages
 * (the default, on): whoever makes a table for a context passes its setting
 * (es_ctx_huge_pages). */
void es_cost_table_huge_pages(es_cost_table *t, int on);

/* Appends a copy of *row (its strings are copied into the table). */
int es_cost_table_append(es_cost_table *t, const es_cost_row *row);
/* The same with the strings' lengths known (key, shard, spk; none NULL), as the
 * reader has them: no strlen, and interning compares at most that many bytes. */
int es_cost_table_append_n(es_cost_table *t, const es_cost_row *row, const size_t len[3]);

/* Appends a skip (strings copied; shard may be NULL, key NULL for a whole shard). */
int es_cost_table_add_skip(es_cost_table *t, const char *msg, const char *shard,
                           const char *key, uint64_t pos);

/* Records (or replaces) the stat of shard; ES_OK or ES_ERR_NOMEM. */
int es_cost_table_set_shard_stat(es_cost_table *t, const char *shard, const es_shard_stat *st);
/* The recorded stat of shard, or NULL (items, tables from before it was kept). */
const es_shard_stat *es_cost_table_shard_stat(const es_cost_table *t, const char *shard);

/* A shard file now against its recorded stat: ES_SHARD_SAME, or how it
 * differs, with why (e.g. "120 bytes, 100 when measured", "not found") in
 * why[len]. */
typedef enum es_shard_change {
    ES_SHARD_SAME,
    ES_SHARD_GONE,    /* stat() failed: moved, deleted, unreadable */
    ES_SHARD_RESIZED,
    ES_SHARD_TOUCHED, /* same size, another modification time */
} es_shard_change;
es_shard_change es_shard_stat_compare(const es_shard_stat *was, const char *path, char *why,
                                      size_t len);
/* Every shard the table's rows name with a recorded stat, checked once against
 * its file (relative names joined to root, which may be NULL): ES_OK, or
 * ES_ERR_FORMAT counting the files that moved or changed and naming the first
 * in table order. Tables without stats (items, older tables) pass. */
int es_cost_table_check_shards(es_context *ctx, const es_cost_table *t, const char *root);

/* Moves all rows and skips of src to the end of dst; src is left empty but valid. */
int es_cost_table_move_into(es_cost_table *dst, es_cost_table *src);

/* Flag names joined by ',' ("-" for none) into buf; returns length. */
size_t es_flags_format(uint32_t flags, char *buf, size_t len);
/* Parses the flags column; returns 0 on success, -1 for an unknown name. */
int es_flags_parse(const char *s, size_t n, uint32_t *flags);

/* es_cost_table_read, telling `progress` (may be NULL) the bytes of the file
 * read so far (compressed bytes for .zst) each time another 4 MiB is passed:
 * es_load_inputs' read_progress. */
int es_cost_table_read_watched(es_context *ctx, const char *path,
                               void (*progress)(void *user, uint64_t bytes), void *progress_user,
                               es_cost_table **out);
/* Parses a cost table held in memory (plain or zstd), as es_cost_table_read does
 * for a file; `name` stands for the path in messages. max_bytes > 0 caps the
 * decoded size (ES_ERR_UNSUPPORTED beyond it) so a fuzzer's zstd bombs stay cheap;
 * 0 means no cap. On error *out is NULL. */
int es_cost_table_parse_buffer(es_context *ctx, const char *name, const void *data, size_t len,
                               size_t max_bytes, es_cost_table **out);

/* Writes the table (es_cost_table_write's format) to an open stream, which the
 * caller flushes and closes; `name` stands for the file in messages. */
int es_cost_table_write_stream(es_context *ctx, const es_cost_table *t, FILE *fp,
                               const char *name, int zstd);

/* Batch mode's costs.tsv.zst from es_cost_table_compress_ahead's image
 * (cost_table_zstd_ahead.c): waits for the compressing thread, then writes its
 * bytes to fp: ES_OK, an ES_ERR_IO naming `name`, or 1 when there is no image
 * (never started, or its thread ran out of memory): the caller then compresses
 * the table itself (es_cost_table_write_stream gives the same bytes). */
int es_cost_table_write_zstd_image(es_context *ctx, const es_cost_table *t, FILE *fp,
                                   const char *name);
/* Waits for the compressing thread, if any, and frees its image
 * (es_cost_table_free, through the table's drop_zstd_ahead). The rows must not change while the thread runs:
 * nothing appends to a table once it has been read. */
void es_cost_table_drop_zstd_image(es_cost_table *t);

/* The table's first line and column header, shared by writer and reader. */
#define ES_COSTS_MAGIC_LINE "#equishard-costs v1"
#define ES_COSTS_HEADER                                                             \
    "key\tshard\tpos\tsample_rate\tchannels\tsamples\taudio_bytes\ttext_len\t"     \
    "speech_tokens\tspk\tflags\thash"
/* The line between the magic line and the header row that a table measured
 * with a tokenizer carries, followed by its identity (one line of JSON). */
#define ES_COSTS_TOKENIZER_LINE "# tokenizer: "
/* Trailing columns (v1 readers ignore them) a table with shard stats carries:
 * the shard file's size and mtime ("SECONDS.NNNNNNNNN"), "-" for an item. */
#define ES_COSTS_STAT_COLUMNS "\tshard_size\tshard_mtime"

#endif
