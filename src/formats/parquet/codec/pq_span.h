/* Byte ranges of one page's uncompressed content, without decompressing the
 * rest of it: a loader that fetches one 100 KB audio row out of a 1 MB snappy
 * page should pay for about 100 KB, not for the page.
 *
 * pq_span_open reads the page's snappy tags only (literal bodies are jumped
 * over, so an incompressible page costs a few small preads) and keeps a mark
 * every SPAN_MARK uncompressed bytes: where in the compressed stream that
 * output starts (in the middle of a literal, too) and the lowest output offset
 * any copy after it reads. pq_span_get then decodes from the mark that holds
 * everything the range depends on: its own bytes plus whatever its copies
 * reach back to (under 64 KiB for the reference compressor, whose matches stay
 * inside a 64 KiB block). The tag pass checks the stream as libsnappy does
 * (lengths, offsets, the declared size), so a page is refused or read alike.
 *
 * Memory: 16 bytes of marks per 4 KiB of the page, plus the last range's
 * compressed and uncompressed bytes (each at most the range plus 64 KiB in
 * ordinary streams, the page at worst). Uncompressed pages need no marks: a
 * range is one pread. Errors leave a message in `err` ("snappy: copy offset
 * 70000 before the start") and return a negative es_status. */
#ifndef ES_PQ_SPAN_H
#define ES_PQ_SPAN_H

#include <stddef.h>
#include <stdint.h>

typedef struct pq_span_mark {
    uint32_t in;  /* compressed offset of the next tag, or of the literal's next byte */
    uint32_t out; /* uncompressed offset there */
    uint32_t lit; /* bytes left of the literal `in` is inside (0: at a tag) */
    uint32_t low; /* lowest uncompressed offset read by a copy up to the next mark */
} pq_span_mark;

typedef struct pq_span {
    int fd;
    uint64_t off;   /* file offset of the stream */
    uint32_t z, u;  /* stream bytes, uncompressed bytes */
    int snappy;     /* 0: the stream is the content */
    uint32_t start; /* compressed offset of the first tag (after the length varint) */
    pq_span_mark *marks;
    size_t n_marks, marks_cap;
    uint8_t *win;   /* tag pass read window */
    uint32_t win_at, win_len;
    uint8_t *in, *out;
    size_t in_cap, out_cap;
    char err[200];
} pq_span;

/* Prepares s (zeroed or used before) for the stream of z bytes at file offset
 * off that holds u bytes: snappy-compressed, or stored when !snappy (z == u).
 * ES_OK or a negative status with s->err set. */
int pq_span_open(pq_span *s, int fd, uint64_t off, uint32_t z, uint32_t u, int snappy);

/* *p = content bytes [a, a + n) (a + n <= u), valid until the next call. */
int pq_span_get(pq_span *s, uint32_t a, uint32_t n, const uint8_t **p);

void pq_span_release(pq_span *s);

#endif
