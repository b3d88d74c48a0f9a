/* Parquet's RLE / bit-packed hybrid encoding (definition and repetition levels,
 * dictionary indices, RLE booleans) and the deprecated BIT_PACKED level
 * encoding. Input is untrusted: every run is checked against the bytes there
 * are, and a value needed past the end is an error, never a read past it. */
#ifndef ES_PQ_RLE_H
#define ES_PQ_RLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct pq_rle {
    const uint8_t *p, *end;
    int width;           /* bits per value, 0..32 */
    uint32_t rle_left;   /* values left in the current RLE run */
    uint32_t rle_value;
    uint64_t bp_left;    /* values left in the current bit-packed run */
    uint64_t bit;        /* bit position in the current bit-packed run */
    const uint8_t *bp;   /* start of the current bit-packed run */
} pq_rle;

void pq_rle_init(pq_rle *d, const uint8_t *p, size_t n, int width);

/* Decodes exactly n values into out. Returns 0, or -1 with a reason in err when
 * the data ends first or is malformed. */
int pq_rle_get(pq_rle *d, uint32_t *out, size_t n, char *err, size_t errlen);

/* Levels: n values, each <= max, into out (bytes). `encoding` is PQ_ENC_RLE
 * or PQ_ENC_BIT_PACKED; data[0..len) holds exactly the level bytes. */
int pq_levels_decode(int encoding, const uint8_t *data, size_t len, int max, uint8_t *out,
                     size_t n, const char *what, char *err, size_t errlen);

/* Bit width needed for values 0..max. */
int pq_bit_width(uint32_t max);

#endif
