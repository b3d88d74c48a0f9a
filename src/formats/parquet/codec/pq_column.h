/* A cursor over one column chunk (one leaf in one row group): it reads one page
 * at a time (pread: nothing else of the file is in memory), decompresses it,
 * decodes its levels and, when asked, its values, and hands out level entries
 * one by one.
 *
 * An entry is one (definition level, repetition level) pair; when def equals
 * the leaf's max_def it carries a value. A value's bytes stay valid until the
 * next call of pq_column_next (dictionary values until the cursor is released).
 *
 * Memory: the current page (compressed and decompressed), its levels and
 * values, and the dictionary page. Sizes are checked against the chunk and the
 * file before anything is allocated; see the limits in pq_column.c.
 *
 * Errors leave a message without file/row group/column ("page 3: snappy:
 * corrupt input") in `err` and a status in `status`; the caller prefixes them. */
#ifndef ES_PQ_COLUMN_H
#define ES_PQ_COLUMN_H

#include <stdint.h>

#include "formats/parquet/codec/pq_file.h"
#include "formats/parquet/codec/pq_values.h"

typedef struct pq_entry {
    uint8_t def, rep;
    const uint8_t *ptr; /* value bytes when def == max_def, else NULL */
    uint32_t len;
} pq_entry;

typedef struct pq_column {
    const es_pq_file *f;
    const pq_leaf *leaf;
    const pq_column_meta *meta;
    int want_values;
    uint64_t pos, end;      /* next page header; end of the chunk */
    uint64_t entries_left;  /* level entries the chunk has not yet delivered in pages */
    uint32_t page_no;       /* pages read so far, dictionary page included */
    /* buffers, reused page after page and chunk after chunk */
    uint8_t *hdr, *raw, *page, *dict_data;
    size_t hdr_cap, raw_cap, page_cap, dict_cap;
    void *zstate;   /* the decompressor's (pq_decompress), kept across pages */
    pq_value_buf dict_values;
    int has_dict;   /* this chunk had its dictionary page */
    size_t n_dict;
    uint8_t *def, *rep;
    size_t def_cap, rep_cap;
    pq_value_buf values;
    /* the current data page */
    uint32_t n, i, vi, n_vals;
    /* data pages decoded and passed over by pq_column_skip, over the cursor's
       life (kept across pq_column_open): what tells a test skipping worked */
    uint64_t pages_decoded, pages_skipped;
    int status;
    char err[300];
} pq_column;

/* Prepares a cursor over leaf `leaf` of row group `rg`. want_values = 0 decodes
 * levels only (counts and presence need nothing else). `c` must be zeroed
 * (`pq_column c = {0}`) or a cursor opened before, whose buffers are then
 * reused. Returns ES_OK or a status with c->err set; c must be released
 * either way. */
int pq_column_open(pq_column *c, const es_pq_file *f, uint32_t rg, const pq_leaf *leaf,
                   int want_values);

/* 1: *e holds the next entry; 0: the chunk is done; negative: an es_status,
 * message in c->err. */
int pq_column_next(pq_column *c, pq_entry *e);

/* Passes over the next n entries. Only for a leaf without repetition (max_rep
 * 0), where an entry is a row: a data page whose entries all fall inside the
 * skipped range is passed over by its header, its body neither read nor
 * decompressed, so fetching a few rows of a big column costs their pages only.
 * Returns ES_OK or a negative status (message in c->err); running past the
 * chunk's end is ES_ERR_FORMAT. */
int pq_column_skip(pq_column *c, uint64_t n);

/* Reads the next page's header and passes over its body unread: how a row
 * reader lists a chunk's pages once. 1: *h and *body (the body's file offset)
 * are set; 0: the chunk is done; negative: a status, message in c->err. */
int pq_column_walk(pq_column *c, pq_page_header *h, uint64_t *body);

void pq_column_release(pq_column *c);

#endif
