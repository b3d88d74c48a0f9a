/* Thrift compact protocol, the writing side: what the reshard writer needs to
 * emit parquet page headers and the footer (FileMetaData). The mirror of
 * pq_thrift.h, without its checks: the caller writes well-formed structs.
 *
 * Fields are written in increasing id order within a struct (their ids are
 * stored as deltas). Struct nesting is tracked so each struct's deltas start
 * from 0, as the protocol requires. Output goes to an es_strbuf; allocation
 * failure is sticky there (sb->oom), checked once at the end. */
#ifndef ES_PQ_THRIFT_WRITE_H
#define ES_PQ_THRIFT_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"
#include "formats/parquet/codec/pq_thrift.h"

typedef struct pq_tw {
    es_strbuf *out;
    int depth;
    int16_t last[PQ_THRIFT_MAX_DEPTH + 1]; /* last field id per open struct */
} pq_tw;

/* Starts writing the fields of a top-level struct into out. */
void pq_tw_init(pq_tw *w, es_strbuf *out);

void pq_tw_i32(pq_tw *w, int16_t id, int32_t v);
void pq_tw_i64(pq_tw *w, int16_t id, int64_t v);
void pq_tw_binary(pq_tw *w, int16_t id, const void *data, size_t n);

/* A list field of n elements of elem_type; then n pq_tw_elem_* calls (or, for
 * structs, n pq_tw_elem_struct_begin … pq_tw_struct_end pairs). */
void pq_tw_list(pq_tw *w, int16_t id, int elem_type, uint32_t n);
void pq_tw_elem_i32(pq_tw *w, int32_t v);
void pq_tw_elem_binary(pq_tw *w, const void *data, size_t n);
/* An element that is already encoded (a struct copied from another file). */
void pq_tw_elem_raw(pq_tw *w, const void *data, size_t n);

/* A struct field, or a struct list element; closed by pq_tw_struct_end. */
void pq_tw_struct_begin(pq_tw *w, int16_t id);
void pq_tw_elem_struct_begin(pq_tw *w);
void pq_tw_struct_end(pq_tw *w);

/* Ends the top-level struct (its STOP byte). */
void pq_tw_finish(pq_tw *w);

#endif
