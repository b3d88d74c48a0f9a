/* Decoding the values section of a data or dictionary page into an array of
 * (pointer, length) pairs, whatever the encoding: PLAIN, PLAIN_DICTIONARY /
 * RLE_DICTIONARY (indices into the dictionary page), DELTA_BINARY_PACKED,
 * DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT and RLE
 * (booleans).
 *
 * A value is its bytes as PLAIN would store them: a BYTE_ARRAY's content, or a
 * fixed-width number in little-endian order (INT32 4, INT64 8, INT96 12,
 * FLOAT 4, DOUBLE 8, BOOLEAN 1 byte 0/1, FIXED_LEN_BYTE_ARRAY type_length).
 * Pointers point into the page's bytes where the encoding allows (PLAIN,
 * DELTA_LENGTH_BYTE_ARRAY, dictionary pages) and into the buffer's scratch
 * otherwise; either way they stay valid until the next decode into the same
 * buffer (and, for dictionary values, while the dictionary page lives). */
#ifndef ES_PQ_VALUES_H
#define ES_PQ_VALUES_H

#include <stddef.h>
#include <stdint.h>

typedef struct pq_value {
    const uint8_t *ptr;
    uint32_t len;
} pq_value;

typedef struct pq_value_buf {
    pq_value *vals;
    size_t cap;
    uint8_t *scratch;
    size_t scratch_cap;
    int64_t *ints;
    size_t ints_cap;
} pq_value_buf;

/* Decodes n values of physical type `type` (width `type_length` for
 * FIXED_LEN_BYTE_ARRAY) from data[0..len). `dict`/`n_dict` are the dictionary
 * page's values (NULL/0 when there is none). Returns 0, -1 malformed (err),
 * or -2 out of memory. `scratch_limit` bounds what DELTA_BYTE_ARRAY may
 * reconstruct. */
int pq_values_decode(int type, int32_t type_length, int encoding, const uint8_t *data,
                     size_t len, size_t n, const pq_value *dict, size_t n_dict,
                     size_t scratch_limit, pq_value_buf *out, char *err, size_t errlen);

void pq_value_buf_release(pq_value_buf *b);

/* Byte width of a fixed-width physical type (0 for BYTE_ARRAY). */
uint32_t pq_type_width(int type, int32_t type_length);

/* A value of type FLOAT, DOUBLE, INT32 or INT64 as a double. */
double pq_value_as_double(int type, const pq_value *v);

#endif
