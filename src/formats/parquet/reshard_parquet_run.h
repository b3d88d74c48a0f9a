/* Reshard's parquet copy (reshard_parquet.c), what its two ways of writing
 * share (reshard_parquet_rows.c): the run's state, a source read row by row
 * and leaf by leaf as segments (a row of one leaf: its level entries and value
 * bytes), the checks that the source is still what was measured, and the
 * read-back of a written file.
 *
 * The two ways: without a spool (reshard_parquet_direct.c), every new file of
 * the range open at once and written column by column; through a spool
 * (reshard_parquet_spool.c), rows appended per new file and each file written
 * from its spool after a pass over the sources, for ranges too large to have
 * every file open at once. Same entries into the same writer, same bytes. */
#ifndef ES_RESHARD_PARQUET_RUN_H
#define ES_RESHARD_PARQUET_RUN_H

#include <stdio.h>

#include "core/strbuf.h"
#include "formats/parquet/codec/pq_column.h"
#include "formats/parquet/codec/pq_file.h"
#include "formats/parquet/codec/pq_write.h"
#include "formats/parquet/parquet.h"
#include "formats/reshard_job.h"

typedef struct pq_target {
    FILE *spool;
    char *spool_buffer; /* the spool's stdio buffer (glibc ignores setvbuf's size without one) */
    char spool_path[4200];
    uint64_t rows;
} pq_target;

typedef struct pq_run {
    const es_plan *p;
    reshard_job *job;
    pq_write_schema schema;   /* every source's, the first one's copied */
    const char *schema_from;  /* that first source */
    uint32_t L;               /* leaves */
    uint32_t utt_leaf;
    uint32_t audio_leaf, text_leaf; /* UINT32_MAX when absent (checked against the table) */
    pq_target *targets;       /* N */
    uint64_t *digest;         /* N × L hash chains */
    uint32_t t0, t1;          /* the range (a spool's pass) being written: [t0, t1) */
    pq_column *cols;          /* L source cursors */
    pq_entry *look;           /* L: each cursor's first entry of the next row */
    uint8_t *has_look;
    es_strbuf *seg;           /* L: the current row's segments */
    /* through a spool */
    uint8_t *buf;             /* a segment read back from a spool */
    size_t buf_cap;
    uint64_t *index;          /* a spool's (offset, length) per row and leaf */
    size_t index_cap;
    pq_writer w;              /* made with the first file */
    /* without a spool: a writer and file per target of [t0, t1), sharing one
     * page queue */
    pq_page_queue direct_queue;
    pq_writer *direct;
    FILE **direct_fp;
} pq_run;

/* ---- segments ---------------------------------------------------------------- */

/* The next entry of a segment; 1, or 0 at its end (segments are ours: trusted). */
int rp_segment_next(const uint8_t **at, const uint8_t *end, uint8_t max_def, pq_entry *e);
/* A segment's entries into w's open chunk; 0, or -1 with w->err set. */
int rp_put_segment(pq_writer *w, const uint8_t *seg, size_t len, uint8_t max_def);
/* The hash chain over a file's segments of one leaf, one more link. */
uint64_t rp_chain(uint64_t h, const es_strbuf *seg);

/* ---- a source, row by row ------------------------------------------------------- */

/* The error of cursor c (in row group rg of leaf `leaf` of file `path`). */
int rp_column_error(es_context *ctx, const char *path, uint32_t rg, const pq_leaf *leaf,
                    const pq_column *c);
/* Reads row `row` of leaf l (cursor already in row group rg): into run->seg[l]
 * when `keep`, else only past it. */
int rp_read_leaf_row(es_context *ctx, pq_run *run, const es_pq_file *f, uint32_t rg, uint32_t l,
                     uint64_t row, int keep);
/* The row group ended with rows of leaf l left over. */
int rp_more_rows(es_context *ctx, const es_pq_file *f, uint32_t rg, uint32_t l);
/* The source ended at `ordinal` rows with item `at` (and later ones) unread. */
int rp_ends_early(es_context *ctx, const pq_run *run, const es_pq_file *f, size_t at,
                  uint64_t ordinal);
/* Whether item it goes to a new file of the range being written. */
int rp_in_pass(const pq_run *run, const copy_item *it);
/* Whether source s feeds a new file of the range. */
int rp_source_wanted(const pq_run *run, const copy_source *s);

/* ---- checks against what was measured ------------------------------------------- */

/* The row's utt (its segment read) against the key of items [a, b). */
int rp_check_keys(es_context *ctx, const pq_run *run, const es_pq_file *f, uint64_t ordinal,
                  size_t a, size_t b);
/* The row's audio_data size (`audio`) and text length (`text`), their segments
 * read, against what measure found for it (a changed file fails the copy). */
int rp_check_measured(es_context *ctx, const pq_run *run, const es_pq_file *f, uint64_t ordinal,
                      const es_cost_row *row, int audio, int text);
/* The first source read gives the run its schema (and run->L, the cursors);
 * every later one must have it. */
int rp_check_schema(es_context *ctx, pq_run *run, const es_pq_file *f);
/* The writer's codec for the settled compression. */
int rp_codec(es_compress c);

/* ---- the result -------------------------------------------------------------------- */

/* Reads new file t back through the parquet reader: one row group, the rows
 * written, and per leaf the same chain of segments. */
int rp_verify_file(es_context *ctx, pq_run *run, uint32_t t);

/* The two ways of writing new files [t0, t1) (closed and read back). */
int rp_copy_direct(es_context *ctx, pq_run *run, uint32_t t0, uint32_t t1);
int rp_copy_spooled(es_context *ctx, pq_run *run, uint32_t t0, uint32_t t1);
/* Whether [t0, t1) can be written without a spool. */
int rp_direct_fits(pq_run *run, uint32_t t0, uint32_t t1);

#endif
