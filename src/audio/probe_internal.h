/* Internals shared by the audio probes (src/audio only).
 *
 * The dispatcher reads a few bytes to sniff the magic and hands them on; each
 * probe then reads "head first, stream after" through a probe_src, which also
 * tracks the object offset so that chunk sizes can be checked against the
 * object's declared size before anything is skipped. */
#ifndef ES_AUDIO_PROBE_INTERNAL_H
#define ES_AUDIO_PROBE_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "audio/audio_probe.h"

typedef struct probe_src {
    const uint8_t *head; /* bytes already taken from the stream, object offset 0.. */
    size_t head_len, head_off;
    es_byte_stream *s;   /* continues right after head */
    uint64_t pos;        /* object offset of the next byte */
} probe_src;

static inline void probe_src_init(probe_src *p, const uint8_t *head, size_t head_len,
                                  es_byte_stream *s)
{
    p->head = head;
    p->head_len = head ? head_len : 0;
    p->head_off = 0;
    p->s = s;
    p->pos = 0;
}

/* Reads up to n bytes, head first. Returns the count (< n at end of data) or -1
 * when the stream fails. */
static inline ssize_t probe_src_read(probe_src *p, void *buf, size_t n)
{
    size_t from_head = p->head_len - p->head_off;
    if (from_head > n)
        from_head = n;
    if (from_head)
        memcpy(buf, p->head + p->head_off, from_head);
    p->head_off += from_head;
    size_t got = from_head;
    if (got < n) {
        ssize_t r = es_stream_read_full(p->s, (uint8_t *)buf + got, n - got);
        if (r < 0)
            return -1;
        got += (size_t)r;
    }
    p->pos += got;
    return (ssize_t)got;
}

/* Skips n bytes without keeping them (the stream's skip may seek). Returns the
 * count skipped (< n at end of data) or -1. */
static inline int64_t probe_src_skip(probe_src *p, uint64_t n)
{
    uint64_t from_head = p->head_len - p->head_off;
    if (from_head > n)
        from_head = n;
    p->head_off += (size_t)from_head;
    uint64_t done = from_head;
    if (done < n) {
        int64_t r = es_stream_skip(p->s, n - done);
        if (r < 0)
            return -1;
        done += (uint64_t)r;
    }
    p->pos += done;
    return (int64_t)done;
}

/* Bytes the object still holds after the current offset, by its declared size
 * (never negative: a stream may declare less than the head we were given). */
static inline uint64_t probe_src_left(const probe_src *p)
{
    return p->s->size > p->pos ? p->s->size - p->pos : 0;
}

/* Formats a one-line error into err and returns code, so probes can write
 * `return probe_fail(err, errlen, ES_PROBE_BAD, "...", ...)`. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static inline int probe_fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* The libsndfile probe: `prefix` holds the object's first bytes, already read
 * from s; the rest is read into memory (at most max_buffer bytes in all). */
int es_probe_sndfile(const uint8_t *prefix, size_t prefix_len, es_byte_stream *s,
                     size_t max_buffer, es_audio_info *out, char *err, size_t errlen);

#endif
