/* An open parquet file: its footer decoded and its schema turned into leaf
 * columns with their level structure.
 *
 * Layout checked at open: "PAR1" at both ends, a footer length that fits in the
 * file, a FileMetaData that decodes, a schema tree whose num_children add up,
 * and row groups with one column chunk per leaf whose path matches the leaf.
 * Chunk offsets are checked when a chunk is read (pq_column.c).
 *
 * Levels. For a leaf under top-level field F:
 *   max_def / max_rep   parquet's definition and repetition level maxima;
 *   def_field           the definition level from which F is not null;
 *   def_list            when the path has a repeated node (a LIST, 3-level or
 *                       legacy 2-level), the level from which that list has an
 *                       element: entries with rep <= 1 and def >= def_list are
 *                       the top-level list's elements (null elements included).
 *                       0 when the path has no repeated node.
 * These three numbers are all a row-wise reader needs: null, empty, count. */
#ifndef ES_PQ_FILE_H
#define ES_PQ_FILE_H

#include <stdint.h>

#include "core/context.h"
#include "formats/parquet/codec/pq_meta.h"

#define PQ_MAX_SCHEMA_DEPTH 16

typedef struct pq_leaf {
    uint32_t index;        /* leaf ordinal = column chunk index in every row group */
    uint32_t schema_index; /* the leaf's SchemaElement */
    const char *name;      /* the top-level field's name (what users call the column) */
    int32_t type, type_length;
    uint8_t max_def, max_rep, def_field, def_list;
    uint32_t field_leaves; /* leaves under the same top-level field (1 unless a struct) */
    uint32_t depth;                       /* path length */
    uint32_t path[PQ_MAX_SCHEMA_DEPTH];   /* SchemaElement indices, top-level field first */
} pq_leaf;

typedef struct es_pq_file {
    int fd;
    const char *path; /* for messages; borrowed from the caller */
    uint64_t size;
    uint64_t data_end; /* first byte of the footer: chunks must end before it */
    pq_file_meta meta;
    pq_leaf *leaves;
    uint32_t n_leaves;
} es_pq_file;

/* Opens and checks `path` (which must outlive the file). Errors name the file:
 * "x.parquet: footer length 9999 past the file (1200 bytes)". */
int es_pq_file_open(es_context *ctx, const char *path, es_pq_file **out);
void es_pq_file_close(es_pq_file *f);

/* The first leaf of top-level field `name`, or NULL when there is none. */
const pq_leaf *es_pq_file_column(const es_pq_file *f, const char *name);

/* Writes the top-level field names, comma-separated, into buf (for messages). */
void es_pq_file_column_names(const es_pq_file *f, char *buf, size_t n);

/* Whether `head` (a file's first bytes) starts like parquet. */
int es_pq_magic(const uint8_t *head, size_t n);

#endif
