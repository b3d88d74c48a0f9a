/* Page decompression: UNCOMPRESSED, SNAPPY (libsnappy), GZIP (zlib), ZSTD
 * (libzstd). The page header declares the uncompressed size; the output must be
 * exactly that long, so a lying header is caught here ("gzip: 812 bytes, the
 * header says 900"). */
#ifndef ES_PQ_CODEC_H
#define ES_PQ_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* Whether this build can decompress `codec` (PQ_SNAPPY, …). */
int pq_codec_supported(int codec);

/* Decompresses src[0..n) into dst[0..want). *state keeps the decompressor's
 * state across calls (NULL at first; pq_decompress_free releases it): a ZSTD
 * context made per page costs allocations and their page faults. Returns 0,
 * or -1 with a reason ("snappy: corrupt input") in err. */
int pq_decompress(int codec, void **state, const uint8_t *src, size_t n, uint8_t *dst,
                  size_t want, char *err, size_t errlen);
void pq_decompress_free(void *state);

/* Compresses src[0..n) with `codec` (UNCOMPRESSED, SNAPPY, ZSTD level 3, GZIP
 * level 6 with mtime 0) into *dst, grown as needed (capacity *cap); *out is the
 * compressed length. Deterministic: same bytes in, same bytes out. *state
 * keeps the compressor's state across calls (NULL at first; pq_compress_free
 * releases it): a ZSTD context is megabytes of tables, and making one per
 * page cost more than compressing the page. Returns 0, or -1 with a reason
 * in err. */
int pq_compress(int codec, void **state, const uint8_t *src, size_t n, uint8_t **dst,
                size_t *cap, size_t *out, char *err, size_t errlen);
void pq_compress_free(void *state);

#endif
