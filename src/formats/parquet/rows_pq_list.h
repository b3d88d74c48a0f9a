/* A list column of one row group, decoded whole: list columns are small
 * (embeddings, speech tokens) and a page of them holds many rows, so a row
 * reader decodes the chunk once and keeps it for every later fetch from that
 * row group (rows_parquet.c holds the cache).
 *
 * Row r is null when !present[r], else its elements are [first[r],
 * first[r + 1]): packed fixed-width values (rows_pq_width) or, for BYTES /
 * STRING elements, offsets into `bytes`; valid[e] = 0 for a null element. */
#ifndef ES_ROWS_PQ_LIST_H
#define ES_ROWS_PQ_LIST_H

#include <stddef.h>
#include <stdint.h>

#include "core/context.h"
#include "core/strbuf.h"
#include "equishard/equishard.h"
#include "formats/parquet/codec/pq_column.h"

typedef struct rows_pq_list {
    es_value_type type;
    size_t n_rows;
    uint8_t *present;
    size_t *first;          /* n_rows + 1 entries */
    size_t n_elems, elems_cap;
    uint8_t *elems;         /* fixed width: n_elems × width */
    uint8_t *valid;
    size_t valid_cap;
    size_t *boff;           /* BYTES / STRING: element e is bytes[boff[e] .. boff[e + 1]) */
    size_t boff_cap;
    char *bytes;
    size_t bytes_len, bytes_cap;
    size_t rows_cap, first_cap;
} rows_pq_list;

/* Decodes leaf `leaf` of row group rg (a one-level list, elements of `type`)
 * through cursor c. Errors name file, row group and column. On failure the
 * list is released. */
int rows_pq_list_decode(es_context *ctx, const es_pq_file *f, uint32_t rg, const pq_leaf *leaf,
                        es_value_type type, pq_column *c, rows_pq_list *out);

/* Bytes the decoded list holds (for the cache's budget). */
size_t rows_pq_list_memory(const rows_pq_list *l);

/* *v = row r (< n_rows) as an es_value, copied into the arena. -1: out of memory. */
int rows_pq_list_value(const rows_pq_list *l, size_t r, es_arena *a, es_value *v);

void rows_pq_list_release(rows_pq_list *l);

#endif
