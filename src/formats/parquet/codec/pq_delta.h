/* Parquet's delta encodings:
 *   DELTA_BINARY_PACKED      integers: blocks of bit-packed deltas from a minimum;
 *   DELTA_LENGTH_BYTE_ARRAY  byte arrays: all lengths (delta-packed), then all bytes;
 *   DELTA_BYTE_ARRAY         byte arrays: prefix lengths shared with the previous
 *                            value (delta-packed), then the suffixes (as above).
 * Input is untrusted: headers are range-checked, counts must match what the page
 * levels say, and no value is read past the data. */
#ifndef ES_PQ_DELTA_H
#define ES_PQ_DELTA_H

#include <stddef.h>
#include <stdint.h>

/* Decodes n integers (exactly the count the header declares) from data[0..len)
 * into out, with 64-bit wrapping arithmetic (an INT32 column truncates the
 * results). *used = bytes the encoding occupied. Returns 0 or -1 (err). */
int pq_delta_binary_decode(const uint8_t *data, size_t len, size_t n, int64_t *out,
                           size_t *used, char *err, size_t errlen);

#endif
