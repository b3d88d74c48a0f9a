/* One column of one row group, reduced to what a row-wise reader needs: per
 * row, whether the value is there and one number (a string's bytes, its text
 * length, a list's element count), plus the strings or floats themselves when
 * asked. This is where definition and repetition levels become rows:
 *
 *   rep == 0                       starts a row
 *   def >= leaf->def_field         the row's value (or list) is not null
 *   rep <= 1, def >= def_list      an element of the row's (top-level) list;
 *                                  def < max_def: a null element
 *
 * Memory: the row group's rows of this one column (plus one page while reading). */
#ifndef ES_PQ_ROWS_H
#define ES_PQ_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "formats/parquet/codec/pq_column.h"
#include "formats/parquet/codec/pq_file.h"

typedef enum pq_rows_mode {
    PQ_ROWS_STRINGS,  /* flat BYTE_ARRAY: keep the bytes (NUL-terminated); count = bytes */
    PQ_ROWS_TEXT_LEN, /* flat BYTE_ARRAY: count = Unicode code points (es_utf8_length) */
    PQ_ROWS_COUNT,    /* list of anything: count = top-level elements (levels only) */
    PQ_ROWS_FLOATS,   /* list of FLOAT/DOUBLE/INT32/INT64: keep float32 values, null = NaN */
} pq_rows_mode;

typedef struct pq_rows {
    size_t n, cap;
    uint8_t *present;  /* non-null */
    uint32_t *count;
    size_t *off;       /* STRINGS: row i's string at bytes + off[i]; FLOATS: floats + off[i] */
    char *bytes;
    size_t bytes_len, bytes_cap;
    float *floats;
    size_t n_floats, floats_cap;
} pq_rows;

/* Checks that `leaf` (column `leaf->name`) can be read in `mode`; on failure
 * the message names the file and column: "x.parquet: column speech_token:
 * expected a list, found a flat INT64 column". */
int pq_rows_check(es_context *ctx, const es_pq_file *f, const pq_leaf *leaf, pq_rows_mode mode);

/* Reads the column's rows of row group rg into *out (zeroed before the first
 * read; reset by each read, its buffers reused) through cursor `cur` (zeroed or
 * used before: one cursor can serve every column, so its page buffers are
 * allocated once). The row count must equal the row group's. Errors name file,
 * row group, column and problem. */
int pq_rows_read(es_context *ctx, const es_pq_file *f, uint32_t rg, const pq_leaf *leaf,
                 pq_rows_mode mode, pq_rows *out, pq_column *cur);

void pq_rows_release(pq_rows *r);

#endif
