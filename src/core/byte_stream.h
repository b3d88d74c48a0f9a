/* A forward-only byte source: what an audio probe reads an audio object through.
 *
 * Readers hand the probes a stream instead of a buffer because the audio may sit
 * inside a tar member (libarchive can only read forward), in a file, or in a
 * parquet value. Probes read the header and skip chunk bodies; they never need
 * the PCM, so a stream over a 1 GB member costs a few kilobytes of reading.
 *
 * Invariants: `size` is the total byte count of the object as its container
 * declares it (tar header size, file size); the stream may end earlier when the
 * container is truncated, and then `read` returns fewer bytes than asked. */
#ifndef ES_BYTE_STREAM_H
#define ES_BYTE_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct es_byte_stream {
    /* Reads up to n bytes into buf. Returns the count read (0 at end of data) or
     * -1 on an I/O error, in which case the stream's owner holds the message. */
    ssize_t (*read)(void *opaque, void *buf, size_t n);
    /* Skips n bytes forward. Returns the count skipped (less at end) or -1.
     * May be NULL: then skipping reads into a scratch buffer. */
    int64_t (*skip)(void *opaque, uint64_t n);
    void *opaque;
    uint64_t size;     /* declared size of the whole object in bytes */
    uint64_t consumed; /* bytes read or skipped so far; kept by the helpers below */
} es_byte_stream;

/* Reads exactly n bytes unless the data ends first. Returns bytes read or -1. */
ssize_t es_stream_read_full(es_byte_stream *s, void *buf, size_t n);
/* Skips n bytes. Returns bytes skipped (< n at end of data) or -1. */
int64_t es_stream_skip(es_byte_stream *s, uint64_t n);

/* A stream over a memory buffer (tests, parquet values, fuzzers). */
typedef struct es_mem_stream {
    const uint8_t *data;
    size_t len, off;
} es_mem_stream;
void es_byte_stream_from_memory(es_byte_stream *s, es_mem_stream *m,
                                const void *data, size_t len);

#endif
