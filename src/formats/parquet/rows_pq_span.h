/* Big values of flat columns read in part of their page (pq_span.h): a planned
 * batch wants one or two rows of a 1 MB audio page, and decompressing the page
 * for them cost 5-7 times what reading the file front to back costs a row
 * (tools/bench/bench_fetch.py).
 *
 * A flat column chunk's data pages are listed once, on first use (headers only:
 * rows_pq_pages), so a fetch goes to a row's page without walking the headers
 * before it. A page is read in part when its values are PLAIN BYTE_ARRAY, its
 * codec SNAPPY or none, at least `min` bytes and `min / 64` a row on average
 * (the audio; small pages are decoded whole, as before): the definition levels,
 * then each value's 4-byte length up to the row's, then the row's bytes.
 *
 * Memory: one rows_pq_page (about 64 bytes) per data page of each flat chunk
 * fetched from, kept with the reader; and one page being read in part: its
 * span (pq_span.h), levels and value offsets. */
#ifndef ES_ROWS_PQ_SPAN_H
#define ES_ROWS_PQ_SPAN_H

#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"
#include "equishard/equishard.h"
#include "formats/parquet/codec/pq_column.h"
#include "formats/parquet/codec/pq_span.h"

typedef struct rows_pq_page {
    uint64_t body;  /* file offset of the page body */
    uint64_t first; /* the row group's row of its first entry */
    pq_page_header h;
} rows_pq_page;

typedef struct rows_pq_pages {
    rows_pq_page *pages; /* data pages in order */
    size_t n;
    int built;
} rows_pq_pages;

/* Lists the data pages of leaf `leaf` (flat) in row group rg through cursor c.
 * ES_OK, or a status with the message in c->err. */
int rows_pq_pages_build(pq_column *c, const es_pq_file *f, uint32_t rg, const pq_leaf *leaf,
                        rows_pq_pages *t);
void rows_pq_pages_release(rows_pq_pages *t);

/* The page being read in part. */
typedef struct rows_pq_spanned {
    const rows_pq_page *page; /* NULL: none yet */
    pq_span span;
    uint32_t values_at;       /* span offset of the first value */
    uint8_t *def;
    size_t def_cap;
    uint32_t *voff;           /* span offsets of values [0, n_voff) */
    size_t voff_cap, n_voff;
    uint32_t n_vals;
    uint64_t pages_opened;
    char err[240];
} rows_pq_spanned;

/* Whether page g of a chunk of leaf `leaf`, codec `codec`, is read in part. */
int rows_pq_spannable(const pq_leaf *leaf, int codec, const rows_pq_page *g, uint32_t min);

/* Entry i of spannable page g: *ptr and *len its value, *null when it has none.
 * *ptr stays valid until the next call. ES_OK or a status, message in s->err. */
int rows_pq_span_value(rows_pq_spanned *s, const es_pq_file *f, const pq_leaf *leaf, int codec,
                       const rows_pq_page *g, uint32_t i, const uint8_t **ptr, uint32_t *len, int *null);

void rows_pq_spanned_release(rows_pq_spanned *s);

#endif
