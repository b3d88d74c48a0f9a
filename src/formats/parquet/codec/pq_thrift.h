/* A bounded decoder for Thrift's compact protocol: what parquet's footer
 * (FileMetaData) and page headers are written in.
 *
 * The input is untrusted. Every read is checked against the end of the buffer,
 * every length and count against the bytes that remain (an element takes at
 * least one byte, so a count larger than the rest of the buffer is a lie), and
 * nesting is limited to PQ_THRIFT_MAX_DEPTH. Unknown fields of any type are
 * skipped. The first problem is sticky: it sets `failed` and a message, and
 * every later call fails too, so callers check once per struct.
 *
 * `truncated` is set when the problem was running out of bytes, so a caller
 * that read only a prefix of a page header can read more and try again. */
#ifndef ES_PQ_THRIFT_H
#define ES_PQ_THRIFT_H

#include <stddef.h>
#include <stdint.h>

#define PQ_THRIFT_MAX_DEPTH 32

/* Compact protocol type codes. */
enum {
    PQ_T_STOP = 0,
    PQ_T_TRUE = 1,
    PQ_T_FALSE = 2,
    PQ_T_BYTE = 3,
    PQ_T_I16 = 4,
    PQ_T_I32 = 5,
    PQ_T_I64 = 6,
    PQ_T_DOUBLE = 7,
    PQ_T_BINARY = 8,
    PQ_T_LIST = 9,
    PQ_T_SET = 10,
    PQ_T_MAP = 11,
    PQ_T_STRUCT = 12,
};

typedef struct pq_thrift {
    const uint8_t *start, *p, *end;
    int depth;
    int failed;
    int truncated;
    char msg[160];
} pq_thrift;

void pq_thrift_init(pq_thrift *t, const uint8_t *data, size_t n);

/* Reads the next field header of the current struct. `last` is the previous
 * field id of this struct (start at 0). Returns 1 with *type and *id set, 0 at
 * the struct's STOP, -1 on error. */
int pq_thrift_field(pq_thrift *t, int16_t *last, int *type, int16_t *id);

/* Value readers for a field of type `type`; a type that does not fit is an
 * error naming `what` (e.g. "SchemaElement.type"). Return 0 or -1. */
int pq_thrift_i32(pq_thrift *t, int type, const char *what, int32_t *v);
int pq_thrift_i64(pq_thrift *t, int type, const char *what, int64_t *v);
int pq_thrift_bool(pq_thrift *t, int type, const char *what, int *v);
/* *data points into the input buffer. */
int pq_thrift_binary(pq_thrift *t, int type, const char *what, const uint8_t **data, size_t *n);
/* A list (or set) header: element type and count (count <= bytes left). */
int pq_thrift_list(pq_thrift *t, int type, const char *what, int *elem_type, uint32_t *n);
/* A list element of a list whose element type is `elem_type`: i32 / binary. */
int pq_thrift_elem_i32(pq_thrift *t, int elem_type, const char *what, int32_t *v);

/* Entering and leaving a nested struct (depth accounting). */
int pq_thrift_struct_begin(pq_thrift *t, int type, const char *what);
void pq_thrift_struct_end(pq_thrift *t);

/* Skips one value of `type`, whatever it holds. */
int pq_thrift_skip(pq_thrift *t, int type);

/* Records a semantic error (a value out of range) in the same sticky way. */
int pq_thrift_fail(pq_thrift *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Bytes consumed so far. */
static inline size_t pq_thrift_offset(const pq_thrift *t)
{
    return (size_t)(t->p - t->start);
}

#endif
