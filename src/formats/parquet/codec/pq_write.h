/* Writing parquet files: what reshard needs to write CosyVoice shards that the
 * unchanged loader (pyarrow's ParquetFile.iter_batches) reads.
 *
 * A written file copies a source file's schema element by element (the raw
 * Thrift bytes, so every annotation — STRING, LIST, field ids — survives) and
 * holds one row group. Each column chunk is a run of data pages (v1) with PLAIN
 * values and RLE levels, cut at row boundaries once a page holds about 1 MiB of
 * values, compressed with UNCOMPRESSED, SNAPPY, ZSTD or GZIP. No dictionary,
 * no statistics, no key-value metadata (pandas' metadata describes the
 * source's index, which a new file does not have): simple and safe.
 *
 * Input is what pq_column hands out: level entries, one after another per
 * leaf, with a value's bytes as PLAIN stores them (pq_values.h). Values are
 * copied exactly. Deterministic: same entries and codec, same bytes. */
#ifndef ES_PQ_WRITE_H
#define ES_PQ_WRITE_H

#include <stdint.h>
#include <stdio.h>

#include "core/strbuf.h"
#include "formats/parquet/codec/pq_page_queue.h"
#include "formats/parquet/codec/pq_file.h"

typedef struct pq_write_leaf {
    int32_t type, type_length;
    uint8_t max_def, max_rep;
    uint32_t n_path;
    char **path; /* path_in_schema: names below the root, down to the leaf */
} pq_write_leaf;

/* A file's schema as a written file repeats it. */
typedef struct pq_write_schema {
    uint32_t n_elems;
    uint8_t **raw;   /* SchemaElement bytes, STOP included */
    size_t *raw_len;
    uint32_t n_leaves;
    pq_write_leaf *leaves;
} pq_write_schema;

/* Copies f's schema. Returns 0, or -1 when out of memory. */
int pq_write_schema_copy(const es_pq_file *f, pq_write_schema *out);
/* Whether f's schema is s, element for element and byte for byte. When not,
 * `why` names the first difference ("column speech_token differs"). */
int pq_write_schema_same(const es_pq_file *f, const pq_write_schema *s, char *why, size_t n);
void pq_write_schema_release(pq_write_schema *s);

typedef struct pq_chunk_info {
    uint64_t start;            /* file offset of the first page */
    int64_t values;            /* level entries */
    int64_t uncompressed, compressed; /* page headers included */
} pq_chunk_info;

typedef struct pq_writer pq_writer;

struct pq_writer {
    const pq_write_schema *schema;
    int codec;
    FILE *fp;
    uint64_t pos;              /* bytes written to fp */
    pq_chunk_info *chunks;     /* per leaf */
    uint32_t leaf;             /* the open chunk */
    /* the page being filled */
    uint8_t *def, *rep;
    size_t n, def_cap, rep_cap;
    es_strbuf values;
    uint8_t bool_bits;
    unsigned n_bool_bits;
    uint32_t chunk_pages;      /* pages of the open chunk made so far */
    pq_page_queue *q;          /* &own, or a queue shared with other writers */
    pq_page_queue own;
    es_strbuf header;          /* a page header or the footer being written */
    char err[256];             /* the last failure: "column utt: value of 12 bytes in an
                                  INT64 column"; callers prefix the file */
};

/* A writer for files with `schema` (which must outlive it) and codec (PQ_SNAPPY,
 * …). Reusable: begin … end any number of times. Zero-initialise, then init. */
int pq_writer_init(pq_writer *w, const pq_write_schema *schema, int codec);
/* The same, its pages compressed and written through q (which must outlive it;
 * q's codec is the file's). A page of this writer may then be written while
 * another writer sharing q ends its chunk: every writer sharing q must end its
 * open chunk before any of them begins the next (as a column-by-column loop
 * over all of them does), so that each chunk's start is its own. */
int pq_writer_init_shared(pq_writer *w, const pq_write_schema *schema, pq_page_queue *q);
void pq_writer_release(pq_writer *w);

/* A new file on fp (positioned at its start). Then, for every leaf in order:
 * chunk_begin, put each level entry, chunk_end; then end with the row count.
 * Each returns 0, or -1 with w->err set (write errors included). */
int pq_writer_begin(pq_writer *w, FILE *fp);
int pq_writer_chunk_begin(pq_writer *w, uint32_t leaf);
/* One level entry: a value (ptr, len) when def is the leaf's max_def. */
int pq_writer_put(pq_writer *w, uint8_t def, uint8_t rep, const uint8_t *ptr, uint32_t len);
int pq_writer_chunk_end(pq_writer *w);
int pq_writer_end(pq_writer *w, int64_t num_rows);

#endif
