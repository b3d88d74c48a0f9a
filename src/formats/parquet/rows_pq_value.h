/* How a parquet column's values become es_values: the column's kind (flat,
 * one-level list, or something a row fetch does not read) and value type from
 * its schema, and one value's PLAIN bytes (pq_column's entries) as an
 * es_value or a packed list element. */
#ifndef ES_ROWS_PQ_VALUE_H
#define ES_ROWS_PQ_VALUE_H

#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"
#include "equishard/equishard.h"
#include "formats/parquet/codec/pq_file.h"

typedef struct rows_pq_kind {
    es_value_type type;      /* a flat column's values, a list's elements */
    int is_list;
    const char *unsupported; /* NULL, or what the column is ("a list of lists") */
} rows_pq_kind;

/* The kind of top-level field whose first leaf is l. */
void rows_pq_kind_of(const es_pq_file *f, const pq_leaf *l, rows_pq_kind *k);

/* Bytes of one packed list element of type t (sizeof(es_value) for BYTES and
 * STRING, whose elements are es_values). */
size_t rows_pq_width(es_value_type t);

/* *v = the value whose PLAIN bytes are p[0..len): numbers decoded, bytes
 * copied into the arena (NUL-terminated). -1 when out of memory. */
int rows_pq_scalar(es_value_type t, const uint8_t *p, uint32_t len, es_arena *a, es_value *v);

/* Writes a fixed-width value's PLAIN bytes as its native packed element. */
void rows_pq_pack(es_value_type t, const uint8_t *p, void *dst);

#endif
