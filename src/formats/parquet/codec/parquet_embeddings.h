/* Embedding columns of CosyVoice parquet shards, for the validator (docs/VALIDATE.md):
 * `utt_embedding` / `spk_embedding`, stored as list<double> by pandas/pyarrow
 * (list<float> is accepted too), returned as float32 rows.
 *
 * Ownership: es_parquet_read_embeddings fills *out with arrays it allocates;
 * every pointer in out->rows (key, spk, vec) points into out's own storage and
 * stays valid until es_embedding_rows_release(out), which frees everything and
 * may be called on a zeroed or already released struct. */
#ifndef ES_PARQUET_EMBEDDINGS_H
#define ES_PARQUET_EMBEDDINGS_H

#include <stddef.h>
#include <stdint.h>

#include "core/context.h"

typedef struct es_embedding_row {
    const char *key;  /* the row's `utt` ("" when null) */
    const char *spk;  /* the row's `spk`; "" when null or the file has no spk column */
    int present;      /* the list is not null and not empty */
    uint32_t dim;     /* its element count (0 when not present) */
    const float *vec; /* dim values, converted from DOUBLE/FLOAT (round to nearest);
                         a null element (how pandas stores NaN inside a list) is NaN.
                         NULL when dim == 0 */
} es_embedding_row;

typedef struct es_embedding_rows {
    size_t n;               /* rows, in file order (row i = parquet row i) */
    es_embedding_row *rows;
    int column_found;       /* 0: the file has no such column (every row: present 0) */
    /* storage, owned; use through rows[] */
    char *strings;
    float *values;
} es_embedding_rows;

/* Reads column `column` (e.g. "utt_embedding") of the parquet file at `path`
 * with the utt and spk of every row. A file without `utt` is an error; a file
 * without `column` is not (column_found = 0). Returns ES_OK or a status with a
 * one-line message in ctx ("x.parquet: row group 0, column utt_embedding:
 * page 2: …"); on error *out is left released. */
int es_parquet_read_embeddings(es_context *ctx, const char *path, const char *column,
                               es_embedding_rows *out);

void es_embedding_rows_release(es_embedding_rows *e);

#endif
